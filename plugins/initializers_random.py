"""Built-in random initializers: Uniform, Normal, Xavier, MSRAPrelu, Orthogonal.

Every draw comes from the stream of the array's own backend and device (what
``mx.random.seed`` seeds), and the array is filled in place.
"""

import math

import numpy as np

from rebind.hookspecs import hookimpl
from rebind.initializer import Initializer
from rebind.ndarray import NDArray
from rebind.ndarray import random as nd_random

__all__ = ["Uniform", "Normal", "Xavier", "MSRAPrelu", "Orthogonal"]

XAVIER_RND_TYPES = ("uniform", "gaussian")
XAVIER_FACTOR_TYPES = ("avg", "in", "out")
ORTHOGONAL_RAND_TYPES = ("uniform", "normal")


def _check_choice(owner, what, value, choices):
    if value not in choices:
        raise ValueError(f"{owner}: {what} must be one of {', '.join(choices)}; got {value!r}")


class Uniform(Initializer):
    """Draws from U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        nd_random.uniform(-self.scale, self.scale, out=arr)


class Normal(Initializer):
    """Draws from N(0, sigma**2)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        nd_random.normal(0, self.sigma, out=arr)


def xavier_fans(shape):
    """(fan_in, fan_out) as MXNet computes them: shape[1] and shape[0], times prod(shape[2:])."""
    receptive = math.prod(shape[2:]) if len(shape) > 2 else 1.0
    return shape[1] * receptive, shape[0] * receptive


class Xavier(Initializer):
    """Glorot-style scaling: values of variance ``magnitude / factor`` (uniform: bound sqrt of it).

    Args:
        rnd_type: "uniform" draws from U(-s, s), "gaussian" from N(0, s**2),
            where ``s = sqrt(magnitude / factor)``.
        factor_type: "avg" uses (fan_in + fan_out) / 2, "in" fan_in, "out"
            fan_out; fans are ``shape[1]`` and ``shape[0]`` times the product of
            the remaining dimensions.
        magnitude: the scale numerator.
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        _check_choice(type(self).__name__, "rnd_type", rnd_type, XAVIER_RND_TYPES)
        _check_choice(type(self).__name__, "factor_type", factor_type, XAVIER_FACTOR_TYPES)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def scale_for(self, name, shape):
        """The bound (uniform) or standard deviation (gaussian) for a parameter of ``shape``."""
        if len(shape) < 2:
            raise ValueError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at "
                f"least 2D (got shape {tuple(shape)})."
            )
        fan_in, fan_out = xavier_fans(shape)
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        return math.sqrt(self.magnitude / factor[self.factor_type])

    def _init_weight(self, name, arr):
        scale = self.scale_for(name, arr.shape)
        if self.rnd_type == "uniform":
            nd_random.uniform(-scale, scale, out=arr)
        else:
            nd_random.normal(0, scale, out=arr)


class MSRAPrelu(Xavier):
    """He et al.'s initialization for PReLU nets: gaussian Xavier, magnitude 2 / (1 + slope**2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope**2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


class Orthogonal(Initializer):
    """A scaled orthogonal matrix (Saxe et al.), from the SVD of a random one.

    The weight is seen as (shape[0], prod(shape[1:])); its rows are orthonormal
    when it has no more rows than columns, its columns otherwise; then it is
    multiplied by ``scale``.

    Args:
        scale: the factor applied to the orthogonal matrix.
        rand_type: "uniform" (U(-1, 1)) or "normal" (N(0, 1)) for the random matrix.
    """

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        _check_choice("Orthogonal", "rand_type", rand_type, ORTHOGONAL_RAND_TYPES)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        ctx = arr.context
        xp = ctx.backend.xp
        rows, cols = arr.shape[0], math.prod(arr.shape[1:])
        # linalg has no float16; MXNet draws float32 here
        dtype = np.float64 if arr.dtype == np.float64 else np.float32
        if self.rand_type == "uniform":
            draw = ctx.backend.uniform(-1.0, 1.0, (rows, cols), dtype, ctx.device_id)
        else:
            draw = ctx.backend.normal(0.0, 1.0, (rows, cols), dtype, ctx.device_id)
        with ctx.backend.device(ctx.device_id):
            u, _, v = xp.linalg.svd(draw, full_matrices=False)
            # u is (rows, k) and v is (k, cols), k = min(rows, cols): take the one shaped as draw
            result = u if u.shape == draw.shape else v
            arr[:] = NDArray((self.scale * result).reshape(arr.shape), ctx)


@hookimpl
def rebind_add_initializers(registry):
    for name, klass in (
        ("uniform", Uniform),
        ("normal", Normal),
        ("xavier", Xavier),
        ("msraprelu", MSRAPrelu),
        ("orthogonal", Orthogonal),
    ):
        registry.add(name, klass)
