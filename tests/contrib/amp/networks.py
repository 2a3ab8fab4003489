"""The AMP test networks, built with rebind (the same graphs record_amp.py recorded)."""

import rebind as mx

from .amp_networks import builders

BUILDERS = builders(mx)
mlp, residual, multicast, conv = (BUILDERS[k] for k in ("mlp", "residual", "multicast", "conv"))
