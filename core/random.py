"""``mx.random``: seeding every backend, and the samplers of ``mx.nd.random``."""

import numbers

from . import registry
from .context import Context
from .ndarray.random import normal, randint, shuffle, uniform

__all__ = ["seed", "uniform", "normal", "randint", "shuffle"]


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
