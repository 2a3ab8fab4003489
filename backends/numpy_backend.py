"""The NumPy backend: serves ``cpu`` contexts."""

import attrs
import numpy as np

from rebind.backend import Backend
from rebind.hookspecs import hookimpl

__all__ = ["NumpyBackend"]


@attrs.define(eq=False)
class NumpyBackend(Backend):
    """CPU arrays are plain ``numpy.ndarray``; random streams are PCG64 generators."""

    name: str = "numpy"
    device_type: str = "cpu"

    @property
    def xp(self):
        return np

    def check_device(self, device_id):
        """Every ``cpu(i)`` is usable: the index only tells logical devices apart,
        as MXNet's data-parallel code on several CPU contexts expects."""

    def to_host(self, array):
        return array

    def owns(self, array):
        return isinstance(array, np.ndarray)

    def _make_rng(self, seed, device_id):
        return np.random.Generator(np.random.PCG64(seed))

    def uniform(self, low, high, shape, dtype, device_id):
        values = self.rng(device_id).uniform(low, high, size=shape)
        return np.asarray(values, dtype=dtype)

    def normal(self, loc, scale, shape, dtype, device_id):
        values = self.rng(device_id).normal(loc, scale, size=shape)
        return np.asarray(values, dtype=dtype)

    def randint(self, low, high, shape, dtype, device_id):
        return self.rng(device_id).integers(low, high, size=shape, dtype=dtype)

    def permutation(self, n, device_id):
        return self.rng(device_id).permutation(n)

    def gamma(self, alpha, scale, shape, dtype, device_id):
        """Gamma draws of shape ``alpha`` and scale ``scale`` (scalars or broadcast arrays)."""
        values = self.rng(device_id).gamma(alpha, scale, size=shape)
        return np.asarray(values, dtype=dtype)

    def exponential(self, scale, shape, dtype, device_id):
        values = self.rng(device_id).exponential(scale, size=shape)
        return np.asarray(values, dtype=dtype)

    def poisson(self, lam, shape, dtype, device_id):
        values = self.rng(device_id).poisson(lam, size=shape)
        return np.asarray(values, dtype=dtype)


@hookimpl
def rebind_add_backends(registry):
    registry.add("numpy", NumpyBackend())
