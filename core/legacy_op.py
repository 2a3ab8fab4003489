"""MXNet's deprecated Python operators: ``PythonOp``, ``NumpyOp`` and ``NDArrayOp``.

Before ``CustomOp`` existed, an operator written in Python was one object that
listed its inputs and outputs, inferred shapes and ran ``forward(in_data,
out_data)`` / ``backward(out_grad, in_data, out_data, in_grad)``; calling it
(``get_symbol``) put it into a graph. MXNet 1.9 still ships these, with a
deprecation warning, and so does rebind, on top of the ``Custom`` operator:
``get_symbol`` registers a ``CustomOpProp`` standing for the object (op_type
``_Native_<n>`` or ``_NDArray_<n>``) and returns ``mx.sym.Custom`` over it.

As in MXNet, ``NumpyOp`` hands ``forward``/``backward`` host NumPy copies of the
arrays and copies what it wrote back (on a GPU too), gives ``out_grad`` only
when ``need_top_grad()`` is true, and ``NDArrayOp`` hands NDArrays on the
operator's context, with read-only inputs where the backend allows.
"""

import itertools
import warnings

import numpy as np

from .custom_op import CustomOp, CustomOpProp, register
from .ndarray.ndarray import NDArray, _host_values

__all__ = ["PythonOp", "NumpyOp", "NDArrayOp"]

_numbers = itertools.count()


class PythonOp:
    """Base class of MXNet's deprecated Python operators (use ``CustomOp`` for new code).

    Args:
        need_top_grad: what ``need_top_grad()`` returns by default; False for a loss,
            whose backward makes the gradient without the outputs' gradient.
    """

    _ref_holder = []  # MXNet keeps every operator turned into a symbol alive here

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn("PythonOp has been deprecated. Please use CustomOp", stacklevel=2)

    def __call__(self, *args, **kwargs):
        """``get_symbol(*args, **kwargs)``."""
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A Symbol applying this operator to the input symbols (positional or by name)."""
        raise NotImplementedError("Must override this")

    def forward(self, in_data, out_data):
        """Fill ``out_data`` from ``in_data``; by default copies the first input."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Fill ``in_grad``; by default the first input's gradient is all ones."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """(input shapes, output shapes); by default one output shaped as the first input."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        """Names of the outputs."""
        return ["output"]

    def list_arguments(self):
        """Names of the inputs."""
        return ["data"]

    def need_top_grad(self):
        """Whether ``backward`` needs the gradient of the outputs (False for a loss)."""
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A deprecated operator whose ``forward``/``backward`` work on NumPy arrays."""

    _KIND = "_Native"

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp", stacklevel=2)

    def get_symbol(self, *args, **kwargs):
        """A Symbol applying this operator to the input symbols (positional or by name)."""
        return _symbol(self, _NumpyBridge, args, kwargs)


class NDArrayOp(PythonOp):
    """A deprecated operator whose ``forward``/``backward`` work on NDArrays."""

    _KIND = "_NDArray"

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NDArrayOp has been deprecated. Please use CustomOp", stacklevel=2)

    def get_symbol(self, *args, **kwargs):
        """A Symbol applying this operator to the input symbols (positional or by name)."""
        return _symbol(self, _NDArrayBridge, args, kwargs)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Ids of what ``backward`` reads: head gradients (if needed), inputs, outputs."""
        deps = list(out_grad) if self.need_top_grad() else []
        return deps + list(in_data) + list(out_data)


def _symbol(legacy, bridge, args, kwargs):
    """``mx.sym.Custom`` over a prop registered for ``legacy`` (once per object)."""
    from .symbol import Custom
    from .symbol.names import NameManager

    if legacy.info_ is None:
        legacy.info_ = f"{legacy._KIND}_{next(_numbers)}"
        attrs = {"legacy": legacy, "bridge": bridge, "__doc__": f"Stands for {legacy!r}."}
        register(legacy.info_)(type(f"{type(legacy).__name__}Prop", (_LegacyProp,), attrs))
        PythonOp._ref_holder.append(legacy)
    if not kwargs.get("name"):
        # MXNet's automatic names (_native0, _ndarray0); the base get() leaves a
        # Prefix scope's prefix to the Custom call, which adds it once.
        hint = legacy._KIND.lower()
        kwargs["name"] = NameManager.current.get(None, hint)
    return Custom(*args, op_type=legacy.info_, **kwargs)


class _LegacyProp(CustomOpProp):
    """The CustomOpProp of one legacy operator object (``legacy``), run by ``bridge``."""

    legacy = None
    bridge = None

    def __init__(self):
        super().__init__(need_top_grad=bool(self.legacy.need_top_grad()))

    def list_arguments(self):
        """The legacy operator's input names."""
        return list(self.legacy.list_arguments())

    def list_outputs(self):
        """The legacy operator's output names."""
        return list(self.legacy.list_outputs())

    def infer_shape(self, in_shape):
        """The legacy operator's (input shapes, output shapes)."""
        return self.legacy.infer_shape(in_shape)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The legacy operator's own declaration where it has one (NDArrayOp)."""
        declare = getattr(self.legacy, "declare_backward_dependency", None)
        if declare is None:
            return super().declare_backward_dependency(out_grad, in_data, out_data)
        return declare(out_grad, in_data, out_data)

    def create_operator(self, ctx, shapes, dtypes):
        """The bridge running the legacy operator's forward and backward."""
        return self.bridge(self.legacy)


class _NumpyBridge(CustomOp):
    """Runs a NumpyOp on host NumPy copies and writes its results back."""

    def __init__(self, legacy):
        super().__init__()
        self.legacy = legacy

    def forward(self, is_train, req, in_data, out_data, aux):
        """The legacy forward on copies; its outputs are stored as ``req`` says."""
        outs = [np.zeros(o.shape, o.dtype) for o in out_data]
        self.legacy.forward(in_data=_copies(in_data), out_data=outs)
        for dst, r, src in zip(out_data, req, outs, strict=True):
            self.assign(dst, r, src)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """The legacy backward on copies (head gradients only when it needs them)."""
        grads = [np.zeros(g.shape, g.dtype) for g in in_grad]
        top = _copies(out_grad) if self.legacy.need_top_grad() else []
        self.legacy.backward(
            out_grad=top, in_data=_copies(in_data), out_data=_copies(out_data), in_grad=grads
        )
        for dst, r, src in zip(in_grad, req, grads, strict=True):
            self.assign(dst, r, src)


def _copies(arrays):
    """Writable host NumPy copies of NDArrays (MXNet hands NumpyOp its own buffers)."""
    return [np.array(_host_values(a._data)) for a in arrays]


class _NDArrayBridge(CustomOp):
    """Runs an NDArrayOp on the NDArrays themselves (inputs read-only where possible)."""

    def __init__(self, legacy):
        super().__init__()
        self.legacy = legacy

    def forward(self, is_train, req, in_data, out_data, aux):
        """The legacy forward writing straight into the outputs."""
        self.legacy.forward(in_data=_read_only(in_data), out_data=out_data)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """The legacy backward writing straight into the input gradients."""
        self.legacy.backward(
            out_grad=_read_only(out_grad),
            in_data=_read_only(in_data),
            out_data=_read_only(out_data),
            in_grad=in_grad,
        )


def _read_only(arrays):
    """The NDArrays over read-only views where the backend has them (NumPy; not CuPy)."""
    views = []
    for a in arrays:
        data = a._data
        if isinstance(data, np.ndarray):
            data = data.view()
            data.flags.writeable = False
        views.append(NDArray(data, a.context))
    return views
