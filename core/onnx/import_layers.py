"""ONNX layers with a rebind layer op: Gemm/MatMul/Gather, Conv(Transpose), pooling,
BatchNormalization, LSTM/GRU/RNN.

Registered into ``import_ops.TRANSLATIONS`` (same translation signature).
An ONNX LSTM/GRU/RNN node (one layer, forward or bidirectional) becomes a
one-layer rebind ``RNN`` whose packed ``parameters`` vector is built from
W, R and B with the gates put back in MXNet's order (LSTM [i, f, g, o], GRU
[r, z, n]); its (T, N, D*H) output is laid out as ONNX's Y (T, D, N, H).
"""

import numpy as np

from .. import symbol as S
from .converters.rnn import onnx_gate_order
from .import_ops import fail, needs_const, pads_of, translation

__all__ = []


# -- dense layers ------------------------------------------------------------------------


@translation("Gemm")
def _gemm(reader, node, attrs, name):
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    trans_a, trans_b = attrs.get("transA", 0), attrs.get("transB", 0)
    weight = reader.const(node.input[1])
    bias = reader.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    has_bias = len(node.input) > 2 and bool(node.input[2])
    if weight is not None and not trans_a and alpha == 1.0 and weight.ndim == 2:
        hidden = weight.shape[0] if trans_b else weight.shape[1]
        if not has_bias or (bias is not None and beta == 1.0 and bias.size == hidden):
            return [_fully_connected(reader, node, name, weight, bias, trans_b, hidden)]
    a, b = reader.sym(node.input[0]), reader.sym(node.input[1])
    out = S.dot(a, b, transpose_a=bool(trans_a), transpose_b=bool(trans_b), name=f"{name}_dot")
    if alpha != 1.0:
        out = S._mul_scalar(out, scalar=alpha, name=reader.op_name(f"{name}_alpha"))
    if has_bias:
        c = reader.sym(node.input[2])
        if beta != 1.0:
            c = S._mul_scalar(c, scalar=beta, name=reader.op_name(f"{name}_beta"))
        out = S.broadcast_add(out, c, name=name)
    return [out]


def _fully_connected(reader, node, name, weight, bias, trans_b, hidden):
    w = reader.sym(node.input[1]) if trans_b else reader.param(f"{node.input[1]}_T", weight.T)
    kwargs = {"no_bias": bias is None}
    if bias is not None and bias.ndim == 1:
        kwargs["bias"] = reader.sym(node.input[2])
    elif bias is not None:
        kwargs["bias"] = reader.param(f"{node.input[2]}_flat", bias.reshape(-1))
    data = reader.sym(node.input[0])
    return S.FullyConnected(data, weight=w, num_hidden=hidden, flatten=False, name=name, **kwargs)


@translation("MatMul")
def _matmul(reader, node, attrs, name):
    a, b = reader.shape(node.input[0]), reader.shape(node.input[1])
    lhs, rhs = reader.sym(node.input[0]), reader.sym(node.input[1])
    if b is not None and len(b) == 2:
        return [S.dot(lhs, rhs, name=name)]
    if a is not None and b is not None and len(a) == len(b) == 3:
        return [S.batch_dot(lhs, rhs, name=name)]
    raise fail(node, f"MatMul of shapes {a} and {b}: only (..., K) x (K, N) and 3-D batches")


@translation("Gather")
def _gather(reader, node, attrs, name):
    axis = attrs.get("axis", 0)
    table = reader.const(node.input[0])
    indices = reader.sym(node.input[1])
    if table is not None and table.ndim == 2 and axis == 0:
        weight = reader.sym(node.input[0])
        rows, cols = table.shape
        return [S.Embedding(indices, weight=weight, input_dim=rows, output_dim=cols, name=name)]
    return [S.take(reader.sym(node.input[0]), indices, axis=axis, mode="wrap", name=name)]


# -- convolution, pooling, normalization ----------------------------------------------------


def _spatial_attrs(node, attrs, kernel):
    spatial = len(kernel)
    if any(d != 1 for d in attrs.get("dilations", [1] * spatial)) and "Pool" in node.op_type:
        raise fail(node, f"dilations {attrs['dilations']} in pooling have no rebind form")
    return {
        "kernel": tuple(int(k) for k in kernel),
        "stride": tuple(attrs.get("strides", [1] * spatial)),
        "pad": pads_of(node, attrs, spatial),
    }


def _kernel(reader, node, attrs):
    if "kernel_shape" in attrs:
        return attrs["kernel_shape"]
    shape = reader.shape(node.input[1])
    if shape is None or any(d is None for d in shape):
        raise fail(node, "the kernel shape is unknown (no kernel_shape, weight of unknown shape)")
    return shape[2:]


def _bias(reader, node):
    if len(node.input) > 2 and node.input[2]:
        return {"bias": reader.sym(node.input[2]), "no_bias": False}
    return {"no_bias": True}


@translation("Conv")
def _conv(reader, node, attrs, name):
    kernel = _kernel(reader, node, attrs)
    weight = reader.shape(node.input[1])
    if weight is None or weight[0] is None:
        raise fail(node, "the weight's shape (the number of filters) is unknown")
    return [
        S.Convolution(
            reader.sym(node.input[0]),
            weight=reader.sym(node.input[1]),
            num_filter=int(weight[0]),
            num_group=attrs.get("group", 1),
            dilate=tuple(attrs.get("dilations", [1] * len(kernel))),
            name=name,
            **_spatial_attrs(node, attrs, kernel),
            **_bias(reader, node),
        )
    ]


@translation("ConvTranspose")
def _conv_transpose(reader, node, attrs, name):
    if "output_shape" in attrs:
        raise fail(node, "output_shape is not supported (give pads and output_padding)")
    kernel = _kernel(reader, node, attrs)
    weight = reader.shape(node.input[1])
    if weight is None or weight[1] is None:
        raise fail(node, "the weight's shape (the number of filters) is unknown")
    group = attrs.get("group", 1)
    return [
        S.Deconvolution(
            reader.sym(node.input[0]),
            weight=reader.sym(node.input[1]),
            num_filter=int(weight[1]) * group,
            num_group=group,
            dilate=tuple(attrs.get("dilations", [1] * len(kernel))),
            adj=tuple(attrs.get("output_padding", [0] * len(kernel))),
            name=name,
            **_spatial_attrs(node, attrs, kernel),
            **_bias(reader, node),
        )
    ]


@translation("MaxPool", "AveragePool")
def _pool(reader, node, attrs, name):
    if len(node.output) > 1 and node.output[1]:
        raise fail(node, "the Indices output is not supported")
    kwargs = _spatial_attrs(node, attrs, attrs["kernel_shape"])
    if node.op_type == "AveragePool":
        kwargs["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
    return [
        S.Pooling(
            reader.sym(node.input[0]),
            pool_type="max" if node.op_type == "MaxPool" else "avg",
            pooling_convention="full" if attrs.get("ceil_mode", 0) else "valid",
            name=name,
            **kwargs,
        )
    ]


@translation("GlobalMaxPool", "GlobalAveragePool")
def _global_pool(reader, node, attrs, name):
    shape = reader.shape(node.input[0])
    spatial = len(shape) - 2 if shape else 2
    pool_type = "max" if node.op_type == "GlobalMaxPool" else "avg"
    data = reader.sym(node.input[0])
    return [
        S.Pooling(data, kernel=(1,) * spatial, global_pool=True, pool_type=pool_type, name=name)
    ]


@translation("BatchNormalization")
def _batch_norm(reader, node, attrs, name):
    if attrs.get("training_mode", 0) or any(node.output[1:]):
        raise fail(node, "training_mode (running statistics as outputs) is not supported")
    data, gamma, beta, mean, var = (reader.sym(i) for i in node.input)
    out = S.BatchNorm(
        data,
        gamma=gamma,
        beta=beta,
        moving_mean=mean,
        moving_var=var,
        eps=attrs.get("epsilon", 1e-5),
        momentum=attrs.get("momentum", 0.9),
        fix_gamma=False,
        name=name,
    )
    return [out]


# -- recurrent layers ---------------------------------------------------------------------

RECURRENT = {"LSTM": ("lstm", 4), "GRU": ("gru", 3), "RNN": (None, 1)}
DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


def _recurrent_mode(node, attrs, directions):
    mode, _ = RECURRENT[node.op_type]
    given = [a if isinstance(a, str) else a.decode() for a in attrs.get("activations", [])]
    if node.op_type == "RNN":
        per = given[: len(given) // directions] if given else ["Tanh"]
        if per not in (["Tanh"], ["Relu"]) or given != per * directions:
            raise fail(node, f"activations {given}: rebind's RNN has tanh or relu only")
        return "rnn_relu" if per == ["Relu"] else "rnn_tanh"
    if given and given != DEFAULT_ACTIVATIONS[node.op_type] * directions:
        raise fail(node, f"activations {given} differ from the defaults rebind computes")
    return mode


def _check_recurrent(node, attrs):
    problems = []
    if attrs.get("direction", "forward") == "reverse":
        problems.append("direction='reverse'")
    if attrs.get("layout", 0):
        problems.append("layout=1 (batch-major)")
    if "clip" in attrs:
        problems.append("clip")
    if attrs.get("input_forget", 0):
        problems.append("input_forget=1")
    if node.op_type == "GRU" and not attrs.get("linear_before_reset", 0):
        problems.append("linear_before_reset=0 (MXNet's GRU applies the reset after R)")
    if len(node.input) > 4 and node.input[4]:
        problems.append("sequence_lens")
    if node.op_type == "LSTM" and len(node.input) > 7 and node.input[7]:
        problems.append("peepholes (P)")
    if problems:
        raise fail(node, f"{', '.join(problems)} not supported by rebind's RNN operator")


def _packed_parameters(reader, node, mode, hidden):
    """W (D, G*H, in), R (D, G*H, H), B (D, 2*G*H) as rebind's flat parameter vector."""
    w = needs_const(reader, node, 1, "W")
    r = needs_const(reader, node, 2, "R")
    b = needs_const(reader, node, 3, "B")
    b = np.zeros((w.shape[0], 2 * w.shape[1]), w.dtype) if b is None else b
    order = onnx_gate_order(mode, to_onnx=False)

    def mxnet_order(array):
        return np.concatenate([array[i * hidden : (i + 1) * hidden] for i in order])

    rows = w.shape[1]
    weights = [mxnet_order(m).reshape(-1) for d in range(w.shape[0]) for m in (w[d], r[d])]
    biases = [mxnet_order(v) for d in range(w.shape[0]) for v in (b[d, :rows], b[d, rows:])]
    return np.concatenate(weights + biases).astype(w.dtype)


def _initial_state(reader, node, index, shape, name):
    if len(node.input) > index and node.input[index]:
        return reader.sym(node.input[index])
    return S.zeros(shape=shape, name=reader.op_name(name))  # batch 0: inferred from the data


@translation(*RECURRENT)
def _recurrent(reader, node, attrs, name):
    _check_recurrent(node, attrs)
    directions = 2 if attrs.get("direction", "forward") == "bidirectional" else 1
    mode, hidden = _recurrent_mode(node, attrs, directions), attrs["hidden_size"]
    # rebind's exporter names W "<parameters>_l<layer>_W": the layer's vector takes that stem
    weights = node.input[1]
    hint = weights[:-2] if weights.endswith("_W") else f"{name}_parameters"
    flat = reader.param(hint, _packed_parameters(reader, node, mode, hidden))
    states = {"state": _initial_state(reader, node, 5, (directions, 0, hidden), f"{name}_h0")}
    if mode == "lstm":
        states["state_cell"] = _initial_state(
            reader, node, 6, (directions, 0, hidden), f"{name}_c0"
        )
    wants_states = any(node.output[1:])
    out = S.RNN(
        reader.sym(node.input[0]),
        parameters=flat,
        state_size=hidden,
        num_layers=1,
        mode=mode,
        bidirectional=directions == 2,
        state_outputs=wants_states,
        name=name,
        **states,
    )
    y = out[0] if wants_states else out
    split = S.Reshape(y, shape=(0, 0, directions, hidden), name=reader.op_name(f"{name}_split"))
    results = [S.transpose(split, axes=(0, 2, 1, 3), name=reader.op_name(f"{name}_y"))]
    if wants_states:
        results += [out[i] for i in range(1, len(out.list_outputs()))]
    return results
