"""The ONNX -> rebind translations of ``import_model``: ONNX op type -> function.

A translation is ``translate(reader, node, attrs, name) -> [result per output]``
where ``reader`` is the ``importer.GraphReader`` (``sym``, ``const``,
``param``, ``shape``, ``op_name``), ``attrs`` the node's attributes as Python
values and ``name`` a free rebind node name. A result is a Symbol, or a NumPy
array for a value known at import time (``Constant``). Inputs that rebind
takes as attributes (a Reshape's shape, a Slice's bounds, ...) must be
constants. The layers (Gemm/MatMul/Gather, Conv, pooling, BatchNormalization,
LSTM/GRU/RNN) are in ``import_layers``.
"""

import numpy as np

from .. import symbol as S
from .errors import OnnxImportError

__all__ = ["TRANSLATIONS", "translation", "fail", "needs_const", "pads_of"]

TRANSLATIONS = {}
HUGE = 2**62  # ONNX's "to the end" bounds (INT64_MAX / INT64_MIN) lie beyond


def translation(*op_types):
    """Register the decorated function as the translation of ``op_types``."""

    def register(function):
        for op_type in op_types:
            TRANSLATIONS[op_type] = function
        return function

    return register


def fail(node, what):
    return OnnxImportError(f"ONNX {node.op_type} node {node.name!r}: {what}")


def needs_const(reader, node, index, what):
    """Input ``index`` as a NumPy array (None when absent), or an error: it must be constant."""
    if len(node.input) <= index or not node.input[index]:
        return None
    value = reader.const(node.input[index])
    if value is None:
        raise fail(node, f"{what} (input {node.input[index]!r}) must be a constant to import")
    return value


def _ins(reader, node):
    return [reader.sym(name) for name in node.input if name]


def _axes(reader, node, attrs, index=1):
    """An op's axes: the attribute, or (newer opsets) the constant input ``index``."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    value = needs_const(reader, node, index, "axes")
    return None if value is None else [int(a) for a in value.reshape(-1)]


def pads_of(node, attrs, spatial):
    """MXNet's symmetric ``pad`` from ONNX's pads / auto_pad."""
    auto = attrs.get("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "VALID"):
        raise fail(node, f"auto_pad={auto} is not supported (give explicit pads)")
    pads = list(attrs.get("pads", [0] * 2 * spatial))
    begin, end = pads[:spatial], pads[spatial:]
    if begin != end:
        raise fail(node, f"asymmetric pads {pads} have no rebind form (MXNet pads symmetrically)")
    return tuple(begin)


# -- element-wise ----------------------------------------------------------------------

UNARY = {
    "Exp": "exp",
    "Log": "log",
    "Sqrt": "sqrt",
    "Abs": "abs",
    "Neg": "negative",
    "Reciprocal": "reciprocal",
    "Floor": "floor",
    "Ceil": "ceil",
    "Erf": "erf",
    "Sin": "sin",
    "Cos": "cos",
    "Identity": "identity",
}
ACTIVATIONS = {
    "Relu": "relu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "Softplus": "softrelu",
    "Softsign": "softsign",
}
BINARY = {
    "Add": "broadcast_add",
    "Sub": "broadcast_sub",
    "Mul": "broadcast_mul",
    "Div": "broadcast_div",
    "Pow": "broadcast_power",
    "Max": "broadcast_maximum",
    "Min": "broadcast_minimum",
    "Sum": "broadcast_add",
}


@translation(*UNARY)
def _unary(reader, node, attrs, name):
    return [getattr(S, UNARY[node.op_type])(reader.sym(node.input[0]), name=name)]


@translation(*ACTIVATIONS)
def _activation(reader, node, attrs, name):
    act = ACTIVATIONS[node.op_type]
    return [S.Activation(reader.sym(node.input[0]), act_type=act, name=name)]


# op type -> (scalar op with the constant on the right, with the constant on the left)
SCALAR = {
    "Add": ("_plus_scalar", "_plus_scalar"),
    "Sub": ("_minus_scalar", "_rminus_scalar"),
    "Mul": ("_mul_scalar", "_mul_scalar"),
    "Div": ("_div_scalar", "_rdiv_scalar"),
    "Pow": ("_power_scalar", "_rpower_scalar"),
    "Max": ("_maximum_scalar", "_maximum_scalar"),
    "Min": ("_minimum_scalar", "_minimum_scalar"),
}


def _with_scalar(reader, node, name):
    """A one-value constant operand as a scalar op (no parameter), or None."""
    if node.op_type not in SCALAR or len(node.input) != 2:
        return None
    consts = [reader.const(i) for i in node.input]
    for side, (value, other) in enumerate(zip(consts, consts[::-1], strict=True)):
        if value is not None and other is None and value.size == 1 and value.ndim <= 1:
            op = getattr(S, SCALAR[node.op_type][side == 0])
            data = reader.sym(node.input[1 - side])
            return op(data, scalar=float(value.reshape(-1)[0]), name=name)
    return None


@translation(*BINARY)
def _binary(reader, node, attrs, name, op_type=None):
    scalar = None if op_type else _with_scalar(reader, node, name)
    if scalar is not None:
        return [scalar]
    op = getattr(S, BINARY[op_type or node.op_type])
    ins = _ins(reader, node)
    out = ins[0]
    for i, other in enumerate(ins[1:]):
        out = op(out, other, name=name if i == len(ins) - 2 else reader.op_name(name))
    return [out]


@translation("Mean")
def _mean(reader, node, attrs, name):
    total = _binary(reader, node, attrs, reader.op_name(f"{name}_sum"), "Sum")[0]
    return [S._div_scalar(total, scalar=float(len(node.input)), name=name)]


@translation("LeakyRelu", "Elu", "PRelu", "Selu")
def _leaky(reader, node, attrs, name):
    data = reader.sym(node.input[0])
    if node.op_type == "PRelu":
        slope = needs_const(reader, node, 1, "the slope")
        gamma = reader.param(f"{name}_gamma", slope.reshape(-1))
        return [S.LeakyReLU(data, gamma=gamma, act_type="prelu", name=name)]
    if node.op_type == "Selu":
        alpha, gamma = attrs.get("alpha", 1.67326319), attrs.get("gamma", 1.05070102)
        if abs(alpha - 1.6732632) > 1e-6 or abs(gamma - 1.0507010) > 1e-6:
            raise fail(node, f"Selu alpha={alpha}, gamma={gamma}: rebind's selu fixes both")
        return [S.LeakyReLU(data, act_type="selu", name=name)]
    act, default = ("leaky", 0.01) if node.op_type == "LeakyRelu" else ("elu", 1.0)
    return [S.LeakyReLU(data, act_type=act, slope=attrs.get("alpha", default), name=name)]


@translation("HardSigmoid")
def _hard_sigmoid(reader, node, attrs, name):
    alpha, beta = attrs.get("alpha", 0.2), attrs.get("beta", 0.5)
    return [S.hard_sigmoid(reader.sym(node.input[0]), alpha=alpha, beta=beta, name=name)]


@translation("Softmax", "LogSoftmax")
def _softmax(reader, node, attrs, name):
    axis = attrs.get("axis", -1 if reader.opset >= 13 else 1)
    shape = reader.shape(node.input[0])
    if reader.opset < 13 and not (axis == -1 or (shape and axis == len(shape) - 1)):
        raise fail(node, f"opset {reader.opset} {node.op_type} over axes {axis}.. (flattened)")
    op = S.softmax if node.op_type == "Softmax" else S.log_softmax
    return [op(reader.sym(node.input[0]), axis=axis, name=name)]


@translation("Clip")
def _clip(reader, node, attrs, name):
    low = needs_const(reader, node, 1, "min")
    high = needs_const(reader, node, 2, "max")
    low = attrs.get("min", -np.inf) if low is None else float(low.reshape(-1)[0])
    high = attrs.get("max", np.inf) if high is None else float(high.reshape(-1)[0])
    return [S.clip(reader.sym(node.input[0]), a_min=low, a_max=high, name=name)]


@translation("Cast")
def _cast(reader, node, attrs, name):
    dtype = np.dtype(reader.onnx.helper.tensor_dtype_to_np_dtype(attrs["to"])).name
    return [S.Cast(reader.sym(node.input[0]), dtype=dtype, name=name)]


@translation("Constant")
def _constant(reader, node, attrs, name):
    if "value" in attrs:
        return [reader.onnx.numpy_helper.to_array(attrs["value"])]
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in attrs:
            return [np.asarray(attrs[key], dtype=dtype)]
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in attrs:
            return [np.asarray(list(attrs[key]), dtype=dtype)]
    raise fail(node, f"Constant with {sorted(attrs)} is not supported")


@translation("Dropout")
def _dropout(reader, node, attrs, name):
    if len(node.output) > 1 and node.output[1]:
        raise fail(node, "the dropout mask output is not supported")
    ratio = needs_const(reader, node, 1, "ratio")
    p = attrs.get("ratio", 0.5) if ratio is None else float(ratio)
    return [S.Dropout(reader.sym(node.input[0]), p=p, name=name)]


# -- shapes --------------------------------------------------------------------------------


@translation("Reshape")
def _reshape(reader, node, attrs, name):
    shape = [int(d) for d in needs_const(reader, node, 1, "the shape")]
    if attrs.get("allowzero", 0) and 0 in shape:
        raise fail(node, "allowzero=1 with a 0 in the shape (an empty dimension)")
    return [S.Reshape(reader.sym(node.input[0]), shape=tuple(shape), name=name)]


@translation("Flatten")
def _flatten(reader, node, attrs, name):
    axis, data = attrs.get("axis", 1), reader.sym(node.input[0])
    if axis == 1:
        return [S.Flatten(data, name=name)]
    if axis < 0:
        shape = reader.shape(node.input[0])
        if shape is None:
            raise fail(node, f"axis={axis} on an input of unknown rank")
        axis += len(shape)
    if axis == 0:
        return [S.Reshape(data, shape=(1, -1), name=name)]
    # keep the first ``axis`` dims and merge the rest, then merge the first ones (from the right)
    tail = S.Reshape(data, shape=(0,) * axis + (-1,), name=reader.op_name(f"{name}_tail"))
    return [S.Reshape(tail, shape=(-1, 0), reverse=True, name=name)]


@translation("Transpose")
def _transpose(reader, node, attrs, name):
    perm = tuple(attrs.get("perm", ()))
    return [S.transpose(reader.sym(node.input[0]), axes=perm, name=name)]


@translation("Concat")
def _concat(reader, node, attrs, name):
    ins = _ins(reader, node)
    return [S.Concat(*ins, dim=attrs["axis"], num_args=len(ins), name=name)]


@translation("Split")
def _split(reader, node, attrs, name):
    axis, count = attrs.get("axis", 0), len(node.output)
    sizes = attrs.get("split") or needs_const(reader, node, 1, "split")
    data = reader.sym(node.input[0])
    if sizes is None or len(set(int(s) for s in sizes)) == 1:
        out = S.SliceChannel(data, num_outputs=count, axis=axis, name=name)
        return [out] if count == 1 else [out[i] for i in range(count)]
    bounds = np.concatenate([[0], np.cumsum([int(s) for s in sizes])])
    return [
        S.slice_axis(data, axis=axis, begin=int(b), end=int(e), name=reader.op_name(name))
        for b, e in zip(bounds[:-1], bounds[1:], strict=True)
    ]


@translation("Slice")
def _slice(reader, node, attrs, name):
    starts = needs_const(reader, node, 1, "starts").reshape(-1)
    ends = needs_const(reader, node, 2, "ends").reshape(-1)
    axes = needs_const(reader, node, 3, "axes")
    steps = needs_const(reader, node, 4, "steps")
    axes = range(len(starts)) if axes is None else axes.reshape(-1)
    steps = [1] * len(starts) if steps is None else steps.reshape(-1)
    out = reader.sym(node.input[0])
    for i, (axis, start, end, step) in enumerate(zip(axes, starts, ends, steps, strict=True)):
        last = i == len(starts) - 1
        step_name = name if last else reader.op_name(f"{name}_{i}")
        out = _slice_one(node, out, int(axis), int(start), int(end), int(step), step_name)
    return [out]


def _slice_one(node, data, axis, start, end, step, name):
    if step == 1:
        end = None if end >= HUGE else end
        return S.slice_axis(data, axis=axis, begin=start, end=end, name=name)
    if step == -1 and start in (-1, np.iinfo(np.int64).max) and end <= -HUGE:
        return S.reverse(data, axis=axis, name=name)
    raise fail(node, f"step {step} on axis {axis} (only 1, or -1 over the whole axis)")


@translation("Squeeze")
def _squeeze(reader, node, attrs, name):
    axes = _axes(reader, node, attrs)
    kwargs = {} if axes is None else {"axis": tuple(axes)}
    return [S.squeeze(reader.sym(node.input[0]), name=name, **kwargs)]


@translation("Unsqueeze")
def _unsqueeze(reader, node, attrs, name):
    axes = _axes(reader, node, attrs)
    if any(a < 0 for a in axes):
        shape = reader.shape(node.input[0])
        if shape is None:
            raise fail(node, f"negative axes {axes} on an input of unknown rank")
        axes = [a + len(shape) + len(axes) if a < 0 else a for a in axes]
    out = reader.sym(node.input[0])
    for i, axis in enumerate(sorted(axes)):
        last = i == len(axes) - 1
        out = S.expand_dims(out, axis=axis, name=name if last else reader.op_name(name))
    return [out]


REDUCTIONS = {
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceProd": "prod",
}


@translation(*REDUCTIONS)
def _reduce(reader, node, attrs, name):
    axes = _axes(reader, node, attrs)
    data = reader.sym(node.input[0])
    if not axes and attrs.get("noop_with_empty_axes", 0):
        return [S.identity(data, name=name)]
    kwargs = {"keepdims": bool(attrs.get("keepdims", 1))}
    if axes:
        kwargs["axis"] = tuple(axes)
    return [getattr(S, REDUCTIONS[node.op_type])(data, name=name, **kwargs)]
