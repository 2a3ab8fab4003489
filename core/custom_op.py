"""Operators written in Python: MXNet's custom-operator API (``mx.operator``'s core).

A custom operator is two classes:

* a ``CustomOpProp`` subclass, registered by name with ``@register("name")``,
  describes the operator: its inputs (``list_arguments``), outputs
  (``list_outputs``), auxiliary states, shape and type inference, and makes
  the operator object (``create_operator``). Its constructor receives every
  keyword given to ``mx.sym.Custom`` (other than ``op_type``) as a string.
* a ``CustomOp`` subclass does the work: ``forward`` and ``backward`` receive
  lists of NDArrays and write results with ``self.assign(dst, req, src)``.

``mx.sym.Custom(data=x, op_type="name", ...)`` puts one into a graph (the
operator ``Custom`` lives in ``rebind.ops.custom``). A prop made with
``need_top_grad=False`` is a loss: its backward makes the gradient itself
and ignores the head gradient it is given.
"""

import numbers

import numpy as np

from .ndarray.ndarray import NDArray, _host_values, _move

__all__ = [
    "CustomOp",
    "CustomOpProp",
    "register",
    "get_all_registered_operators",
    "registered_names",
    "lookup_prop",
]

REQS = ("null", "write", "inplace", "add")

_props = {}  # op_type -> CustomOpProp subclass


class CustomOp:
    """Base class of Python operators: override ``forward`` and ``backward``."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data`` (lists of NDArrays), honouring ``req``.

        Args:
            is_train: whether this pass is for training.
            req: one of 'null', 'write', 'inplace', 'add' per output.
            in_data, out_data, aux: NDArrays of the inputs, outputs and aux states.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement forward")

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` from ``out_grad`` (lists of NDArrays), honouring ``req``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement backward")

    def assign(self, dst, req, src):
        """Store ``src`` into ``dst`` as ``req`` says: skip, overwrite, or add to it."""
        if req == "null":
            return
        if req not in REQS:
            raise ValueError(f"assign: req must be one of {', '.join(REQS)}, got {req!r}")
        value = _as_operand(dst, src)
        if req == "add":
            dst._data[...] += value
        else:  # 'write' and 'inplace'
            dst._data[...] = value


def _as_operand(dst, src):
    """``src`` (NDArray, backend array, NumPy array, list or number) as ``dst``'s backend data."""
    if isinstance(src, NDArray):
        return _move(src, dst.context)
    if isinstance(src, (numbers.Number, np.generic)):
        return src
    backend = dst.context.backend
    if backend.owns(src):
        return src
    return backend.xp.asarray(_host_values(src))


class CustomOpProp:
    """Base class describing a Python operator (override what differs from the defaults).

    Args:
        need_top_grad: whether ``backward`` uses the gradient of the outputs;
            False makes the operator a loss that produces its own gradient.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self):
        """Names of the inputs."""
        return ["data"]

    def list_outputs(self):
        """Names of the outputs."""
        return ["output"]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (updated in place, not differentiated)."""
        return []

    def infer_shape(self, in_shape):
        """(input shapes, output shapes, aux shapes); by default all as the first input."""
        first = in_shape[0]
        return (
            list(in_shape),
            [first] * len(self.list_outputs()),
            [first] * len(self.list_auxiliary_states()),
        )

    def infer_type(self, in_type):
        """(input types, output types, aux types); by default all of the first input's type."""
        first = in_type[0]
        return (
            list(in_type),
            [first] * len(self.list_outputs()),
            [first] * len(self.list_auxiliary_states()),
        )

    def infer_storage_type(self, in_stype):
        """Storage types; rebind stores every array densely."""
        return (
            list(in_stype),
            ["default"] * len(self.list_outputs()),
            ["default"] * len(self.list_auxiliary_states()),
        )

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """What ``backward`` reads: the head gradients (if needed), inputs and outputs."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, shapes, dtypes):
        """The ``CustomOp`` for context ``ctx`` (a string such as "cpu(0)") and input shapes."""
        raise NotImplementedError(f"{type(self).__name__} does not implement create_operator")


def register(reg_name):
    """Class decorator registering a ``CustomOpProp`` subclass as op_type ``reg_name``.

    Registering a name again replaces the earlier class (as MXNet does).
    """
    if not isinstance(reg_name, str) or not reg_name:
        raise TypeError(f"register: the name must be a non-empty string, got {reg_name!r}")

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(f"register({reg_name!r}): {prop_cls!r} is not a CustomOpProp subclass")
        _props[reg_name] = prop_cls
        return prop_cls

    return do_register


def registered_names():
    """The registered op_type names, sorted."""
    return sorted(_props)


def lookup_prop(op_type):
    """The CustomOpProp subclass registered as ``op_type``, or None."""
    return _props.get(op_type)


def get_all_registered_operators():
    """Names of every operator rebind knows (built-in and from plugins)."""
    from . import registry

    return registry.get_registry("operators").names()
