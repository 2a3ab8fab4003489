"""``mx.random``: seeding every backend, and the samplers of ``mx.nd.random``."""

import numbers

from . import registry
from .context import Context
from .ndarray.random import (
    exponential,
    gamma,
    generalized_negative_binomial,
    multinomial,
    negative_binomial,
    normal,
    poisson,
    randint,
    randn,
    shuffle,
    uniform,
)

__all__ = [
    "seed",
    "get_state",
    "set_state",
    "uniform",
    "normal",
    "randn",
    "randint",
    "shuffle",
    "exponential",
    "gamma",
    "poisson",
    "negative_binomial",
    "generalized_negative_binomial",
    "multinomial",
]


def seed(seed_state, ctx="all"):
    """Seed the random streams of every backend (``ctx='all'``) or of one context.

    The same seed gives the same numbers on the same backend and device, run
    after run. Each device gets its own stream, derived from the seed.
    """
    if not isinstance(seed_state, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed_state!r}")
    if ctx == "all":
        for _, backend in registry.get_registry("backends").items():
            backend.seed(int(seed_state))
        return
    ctx = Context(ctx)
    ctx.backend.seed(int(seed_state), ctx.device_id)


def get_state():
    """The state of every backend's random streams, as JSON-able data (rebind, not MXNet).

    ``set_state`` of it makes the streams draw what they would have drawn
    next; training resumption (``fit(resume_from=...)``) relies on it.
    """
    backends = registry.get_registry("backends")
    return {name: backend.get_rng_state() for name, backend in backends.items()}


def set_state(state):
    """Restore the random streams saved by ``get_state`` (backends not listed are left as is)."""
    backends = registry.get_registry("backends")
    for name, backend_state in state.items():
        if name in backends:
            backends.get(name).set_rng_state(backend_state)
