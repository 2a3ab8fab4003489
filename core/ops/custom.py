"""Custom: an operator implemented in Python through ``rebind.operator``.

``mx.sym.Custom(data=x, op_type="myop", scale=2)`` looks up the
``CustomOpProp`` subclass registered as ``"myop"`` and makes it with every
other attribute as a string keyword (``scale="2"``), as MXNet does. The prop
then decides everything an OpDef states statically: inputs, outputs and aux
states (``list_*``), shape and type inference, and the ``CustomOp`` doing the
work, made once per context and input shapes and kept in the node's params.

Its parameters are open-ended, so ``CustomParams`` parses its attributes
itself through the ``from_attrs`` hook of ``parse_params``.

Custom is an ``is_loss`` op: the executor always runs its backward (giving
zeros for outputs nothing consumed), which is what a prop made with
``need_top_grad=False`` needs; such a prop ignores the head gradient it gets.
"""

import attrs
import numpy as np

from ..base import MXNetError
from ..context import Context
from ..custom_op import CustomOp, lookup_prop, registered_names
from ..errors import RebindError, ShapeError
from ..ndarray.ndarray import NDArray
from ..profiler import PROFILER
from .base import OpDef, known, merge_shape
from .params import ParamError, to_attr_string

__all__ = ["OPS", "CustomParams", "CustomOpError"]


class CustomOpError(RebindError, RuntimeError):
    """A custom operator's prop or operator failed or returned something malformed."""


@attrs.frozen
class CustomParams:
    """``op_type``, the other attributes as (key, string) pairs, and the prop made from them."""

    op_type: str
    kwargs: tuple = ()
    prop: object = attrs.field(default=None, eq=False, repr=False)
    arguments: tuple = attrs.field(default=(), eq=False, repr=False)
    outputs: tuple = attrs.field(default=(), eq=False, repr=False)
    aux_states: tuple = attrs.field(default=(), eq=False, repr=False)
    operators: dict = attrs.field(factory=dict, eq=False, repr=False)  # CustomOps made so far

    @classmethod
    def from_attrs(cls, op_name, raw):
        """Parse string attributes (the ``parse_params`` hook); makes the prop."""
        values = {
            k: to_attr_string(v)
            for k, v in raw.items()
            if not (k.startswith("__") and k.endswith("__"))
        }
        op_type = values.pop("op_type", None)
        if op_type is None:
            raise ParamError(f"{op_name}: required parameter 'op_type' is missing")
        prop_cls = lookup_prop(op_type)
        if prop_cls is None:
            names = ", ".join(registered_names()) or "none"
            raise ParamError(
                f"{op_name}: op_type {op_type!r} is not a registered custom "
                f"operator; registered with mx.operator.register: {names}"
            )
        try:
            prop = prop_cls(**values)
        except (TypeError, ValueError) as exc:
            raise ParamError(
                f"{op_name}: op_type {op_type!r}: {prop_cls.__name__}(**{values}) failed: {exc}"
            ) from exc
        return cls(
            op_type,
            tuple(values.items()),
            prop,
            tuple(prop.list_arguments()),
            tuple(prop.list_outputs()),
            tuple(prop.list_auxiliary_states()),
        )


def _who(p):
    return f"Custom op_type={p.op_type!r} ({type(p.prop).__name__})"


def _split(p, what, result, counts):
    """The (inputs, outputs, aux) lists a prop's infer_* returned, checked for length."""
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):
        raise CustomOpError(
            f"{_who(p)}: {what} must return (inputs, outputs[, aux]), got {result!r}"
        )
    parts = [list(part) for part in result] + ([[]] if len(result) == 2 else [])
    for part, count, kind in zip(parts, counts, ("input", "output", "aux"), strict=True):
        if len(part) != count:
            raise CustomOpError(
                f"{_who(p)}: {what} returned {len(part)} {kind} entries, "
                f"expected {count}: {result!r}"
            )
    return parts


def _as_shape(shape):
    if shape is None or len(shape) == 0:
        return None  # MXNet 1.x: an empty shape is an unknown one
    return tuple(int(d) for d in shape)


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    # The prop sees unknown inputs as [] (MXNet's ndim-0 shape). It is asked once
    # anything is known; while some input is unknown, a failure only means "not yet".
    if in_shapes and all(s is None for s in in_shapes):
        return in_shapes, out_shapes, aux_shapes
    complete = all(known(s) for s in in_shapes)
    try:
        result = p.prop.infer_shape([[] if s is None else list(s) for s in in_shapes])
    except Exception as exc:
        if not complete:
            return in_shapes, out_shapes, aux_shapes
        raise ShapeError(
            f"{_who(p)}: infer_shape({[list(s) for s in in_shapes]}) failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    counts = (len(in_shapes), len(out_shapes), len(aux_shapes))
    ins, outs, auxs = _split(p, "infer_shape", result, counts)
    ins = [
        merge_shape(_as_shape(s), given, name)
        for s, given, name in zip(ins, in_shapes, p.arguments, strict=True)
    ]
    outs = [
        merge_shape(_as_shape(s), given, name)
        for s, given, name in zip(outs, out_shapes, p.outputs, strict=True)
    ]
    auxs = [
        merge_shape(_as_shape(s), given, name)
        for s, given, name in zip(auxs, aux_shapes, p.aux_states, strict=True)
    ]
    return ins, outs, auxs


def _type_name(dtype):
    return None if dtype is None else np.dtype(dtype).name


def _infer_type(p, in_types, out_types, aux_types):
    if in_types and all(t is None for t in in_types):
        return in_types, out_types, aux_types
    query = [None if t is None else np.dtype(t).type for t in in_types]
    try:
        result = p.prop.infer_type(query)
    except Exception as exc:
        if any(t is None for t in in_types):
            return in_types, out_types, aux_types
        raise CustomOpError(
            f"{_who(p)}: infer_type({query}) failed: {type(exc).__name__}: {exc}"
        ) from exc
    counts = (len(in_types), len(out_types), len(aux_types))
    parts = _split(p, "infer_type", result, counts)
    given = (in_types, out_types, aux_types)
    return tuple(
        [g if g is not None else _type_name(t) for t, g in zip(part, old, strict=True)]
        for part, old in zip(parts, given, strict=True)
    )


def _operator_for(ctx, p, context, inputs, aux):
    """(CustomOp, output shapes, output dtypes), made on first use for these inputs."""
    shapes = [tuple(a.shape) for a in (*inputs, *aux)]
    dtypes = [a.dtype.name for a in (*inputs, *aux)]
    key = (context, tuple(shapes), tuple(dtypes), ctx.out_shapes)
    entry = p.operators.get(key)
    if entry is not None:
        return entry
    n = len(inputs)
    out_shapes = ctx.out_shapes
    if not (out_shapes and all(known(s) for s in out_shapes)):
        _, out_shapes, _ = _infer_shape(
            p, shapes[:n], [None] * len(p.outputs), [None] * len(p.aux_states)
        )
    if not all(known(s) for s in out_shapes):
        raise ShapeError(
            f"{_who(p)}: cannot infer the output shapes from input shapes "
            f"{shapes[:n]} (got {out_shapes})"
        )
    _, out_types, _ = _infer_type(p, dtypes[:n], [None] * len(p.outputs), dtypes[n:])
    fallback = dtypes[0] if dtypes else "float32"
    out_types = [t or fallback for t in out_types]
    op = p.prop.create_operator(
        str(context), [list(s) for s in shapes], [np.dtype(t).type for t in dtypes]
    )
    if not isinstance(op, CustomOp):
        raise CustomOpError(f"{_who(p)}: create_operator returned {op!r}, not a CustomOp")
    entry = p.operators[key] = (op, [tuple(s) for s in out_shapes], out_types)
    return entry


def _run_python(p, backward, call):
    """Run the user's forward/backward; the profiler, when running, records it by op_type.

    An exception from the user's code reaches the caller as a CustomOpError (an
    MXNetError, as MXNet reports it), chained to the original.
    """
    try:
        if PROFILER.symbolic or PROFILER.imperative:
            PROFILER.time_custom_python(p.op_type, backward, call)
        else:
            call()
    except MXNetError:
        raise
    except Exception as exc:
        stage = "backward" if backward else "forward"
        raise CustomOpError(f"{_who(p)}: its {stage} raised {type(exc).__name__}: {exc}") from exc


def _forward(ctx, p, inputs, aux):
    backend = ctx.backend
    context = Context(backend.device_type, ctx.device_id)
    op, out_shapes, out_types = _operator_for(ctx, p, context, inputs, aux)
    in_data = [NDArray(a, context) for a in inputs]
    aux_data = [NDArray(a, context) for a in aux]
    out_data = [
        NDArray(backend.zeros(s, t, ctx.device_id), context)
        for s, t in zip(out_shapes, out_types, strict=True)
    ]
    _run_python(
        p,
        False,
        lambda: op.forward(
            is_train=ctx.is_train,
            req=["write"] * len(out_data),
            in_data=in_data,
            out_data=out_data,
            aux=aux_data,
        ),
    )
    return [o._data for o in out_data], (op, context, in_data, out_data, aux_data)


def _backward(ctx, p, saved, out_grads, need_grad):
    op, context, in_data, out_data, aux_data = saved
    backend = ctx.backend
    in_grad = [
        NDArray(backend.zeros(a.shape, a._data.dtype, ctx.device_id), context) for a in in_data
    ]
    out_grad = [NDArray(g, context) for g in out_grads]
    req = ["write" if needed else "null" for needed in need_grad]
    _run_python(
        p,
        True,
        lambda: op.backward(
            req=req,
            out_grad=out_grad,
            in_data=in_data,
            out_data=out_data,
            in_grad=in_grad,
            aux=aux_data,
        ),
    )
    return [g._data if needed else None for g, needed in zip(in_grad, need_grad, strict=True)]


CUSTOM = OpDef(
    name="Custom",
    params=CustomParams,
    arguments=lambda p: p.arguments,
    outputs=lambda p: p.outputs,
    aux_states=lambda p: p.aux_states,
    infer_shape=_infer_shape,
    infer_type=_infer_type,
    forward=_forward,
    backward=_backward,
    is_loss=True,
    doc="An operator written in Python: a CustomOpProp registered with "
    "mx.operator.register(op_type); other keywords reach the prop as strings.",
)

OPS = [CUSTOM]
