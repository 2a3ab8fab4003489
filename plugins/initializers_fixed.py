"""Built-in initializers that fill fixed values: Zero, One, Constant, Bilinear."""

import json
import numbers

import numpy as np

from rebind.hookspecs import hookimpl
from rebind.initializer import Initializer, bilinear_weights
from rebind.ndarray import NDArray

__all__ = ["Zero", "One", "Constant", "Bilinear"]


class Zero(Initializer):
    """Fills with 0 (names ``zero`` and ``zeros``)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


class One(Initializer):
    """Fills with 1 (names ``one`` and ``ones``)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


class Constant(Initializer):
    """Fills with ``value``: a scalar, or an array broadcast to the parameter's shape.

    Args:
        value: a number, a list, a NumPy array or an NDArray.
    """

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value

    def dumps(self):
        """As MXNet: an array value is written as a (nested) list.

        As in MXNet, ``_kwargs['value']`` holds that list afterwards (scripts and
        MXNet's own tests serialise ``_kwargs`` themselves); ``value`` keeps the array.
        """
        value = self._kwargs["value"]
        if isinstance(value, NDArray):
            value = value.asnumpy()
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        elif not isinstance(value, (numbers.Number, list)):
            raise TypeError(f"Constant: cannot write a value of type {type(value).__name__}")
        self._kwargs["value"] = value
        return json.dumps([type(self).__name__.lower(), self._kwargs])


class Bilinear(Initializer):
    """Weights of a bilinear upsampling kernel, for a Deconvolution that upsamples.

    The weight must have at least 4 dimensions; see
    ``rebind.initializer.bilinear_weights`` for MXNet's formula.
    """

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        ctx = arr.context
        with ctx.backend.device(ctx.device_id):
            arr[:] = NDArray(bilinear_weights(ctx.backend.xp, arr.shape, name), ctx)


@hookimpl
def rebind_add_initializers(registry):
    for name, klass in (
        ("zero", Zero),
        ("zeros", Zero),
        ("one", One),
        ("ones", One),
        ("constant", Constant),
        ("bilinear", Bilinear),
    ):
        registry.add(name, klass)
