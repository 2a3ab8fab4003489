"""The fused RNN operator to ONNX LSTM / GRU / RNN nodes, one per layer.

rebind's ``parameters`` vector (layout in ``rebind.ops.rnn``: every weight
matrix by layer and direction, then every bias) is read at export time and
repacked into ONNX's per-layer ``W`` (D, G*H, in), ``R`` (D, G*H, H) and
``B`` (D, 2*G*H) initializers, with the gates reordered: MXNet's LSTM
[i, f, g, o] becomes ONNX's [i, o, f, c], its GRU [r, z, n] ONNX's
[z, r, h] (``linear_before_reset=1`` is MXNet's GRU: the hidden bias sits
inside the reset gate's product). Layers are chained: ONNX's Y
(T, D, N, H) is transposed and reshaped to MXNet's (T, N, D*H) with 0-copy
codes, so the batch axis may stay symbolic. Dropout ``p`` acts only in
training and is dropped.
"""

import numpy as np

from ...ops.rnn import param_layout
from ..errors import OnnxExportError
from . import converter

__all__ = ["convert_rnn", "onnx_gate_order", "ONNX_OP"]

ONNX_OP = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}

# for each ONNX gate block, the MXNet gate block it takes
_TO_ONNX = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2), "rnn_tanh": (0,), "rnn_relu": (0,)}


def onnx_gate_order(mode, to_onnx=True):
    """Which MXNet gate block fills each ONNX block (or the reverse with to_onnx=False)."""
    order = _TO_ONNX[mode]
    if to_onnx:
        return order
    return tuple(int(i) for i in np.argsort(order))


def _reorder(array, mode, hidden):
    """Gate blocks of ``array`` (stacked along axis 0, H rows each) in ONNX's order."""
    blocks = [array[i * hidden : (i + 1) * hidden] for i in onnx_gate_order(mode)]
    return np.concatenate(blocks, axis=0)


def _check_expressible(node, g):
    p = node.params
    reasons = []
    if p.use_sequence_length:
        reasons.append("use_sequence_length=True (per-sample lengths, cuDNN-only in MXNet)")
    if p.projection_size is not None:
        reasons.append(f"projection_size={p.projection_size} (LSTM with projection)")
    if p.lstm_state_clip_min is not None:
        reasons.append("lstm_state_clip_min/max (ONNX's clip bounds the gates, not the cell)")
    if reasons:
        raise OnnxExportError(
            f"{node.op.name} node {node.name!r}: {'; '.join(reasons)} "
            f"is not expressible in ONNX opset {g.opset}"
        )


def _packed(node, g):
    flat = g.param(node.inputs[1])
    if flat is None:
        raise OnnxExportError(
            f"{node.op.name} node {node.name!r}: the packed 'parameters' input "
            f"{node.inputs[1]!r} is computed, not a parameter; only parameter weights "
            f"can be repacked into ONNX's W/R/B in ONNX opset {g.opset}"
        )
    return np.asarray(flat).reshape(-1)


def _layer_weights(node, g, flat, layer):
    """The W, R, B initializer names of one layer (all its directions)."""
    p = node.params
    hidden, dirs = p.state_size, p.directions
    slots, total = param_layout(p.mode, node.in_shapes[0][2], hidden, p.num_layers, dirs)
    if flat.size != total:
        raise OnnxExportError(
            f"{node.op.name} node {node.name!r}: 'parameters' holds {flat.size} values, "
            f"the layout needs {total}"
        )

    def view(place):
        offset, shape = place
        return flat[offset : offset + int(np.prod(shape))].reshape(shape)

    w, r, b = [], [], []
    for slot in slots[layer * dirs : (layer + 1) * dirs]:
        w.append(_reorder(view(slot.wx), p.mode, hidden))
        r.append(_reorder(view(slot.wh), p.mode, hidden))
        b.append(
            np.concatenate(
                [_reorder(view(slot.bx), p.mode, hidden), _reorder(view(slot.bh), p.mode, hidden)]
            )
        )
    base = f"{node.inputs[1]}_l{layer}"
    return [
        g.const(np.stack(arrays), dtype=flat.dtype, hint=f"{base}_{letter}")
        for letter, arrays in (("W", w), ("R", r), ("B", b))
    ]


def _layer_states(node, g, layer):
    """This layer's rows of the initial states (initial_h[, initial_c])."""
    p = node.params
    count = 2 if p.mode == "lstm" else 1
    states = node.inputs[2 : 2 + count]
    if p.num_layers == 1:
        return list(states)
    dirs = p.directions
    starts = g.const([layer * dirs], dtype=np.int64, hint=f"{node.name}_l{layer}_start")
    ends = g.const([(layer + 1) * dirs], dtype=np.int64, hint=f"{node.name}_l{layer}_end")
    axes = g.const([0], dtype=np.int64, hint=f"{node.name}_axes")
    sliced = []
    for state in states:
        out = g.fresh(f"{node.name}_l{layer}_{state}")
        g.add_node("Slice", [state, starts, ends, axes], [out])
        sliced.append(out)
    return sliced


def _cell_attributes(p):
    attributes = {
        "hidden_size": p.state_size,
        "direction": "bidirectional" if p.bidirectional else "forward",
    }
    if p.mode == "gru":
        attributes["linear_before_reset"] = 1
    elif p.mode != "lstm":
        activation = "Relu" if p.mode == "rnn_relu" else "Tanh"
        attributes["activations"] = [activation] * p.directions
    return attributes


def _to_mxnet_layout(node, g, y, out):
    """ONNX's Y (T, D, N, H) as MXNet's (T, N, D*H)."""
    moved = g.fresh(f"{node.name}_tnd")
    g.add_node("Transpose", [y], [moved], perm=[0, 2, 1, 3])
    shape = g.const([0, 0, -1], dtype=np.int64, hint=f"{node.name}_tnc")
    g.add_node("Reshape", [moved, shape], [out])


def _final_states(node, g, per_layer, outputs):
    """Each state output: the layers' (D, N, H) finals stacked along axis 0."""
    for index, out in enumerate(outputs):
        parts = [finals[index] for finals in per_layer]
        if len(parts) == 1:
            g.add_node("Identity", parts, [out])
        else:
            g.add_node("Concat", parts, [out], axis=0)


@converter("RNN")
def convert_rnn(node, g):
    """RNN (lstm / gru / rnn_tanh / rnn_relu, stacked, bidirectional) -> ONNX per layer."""
    _check_expressible(node, g)
    p = node.params
    flat = _packed(node, g)
    op_type, attributes = ONNX_OP[p.mode], _cell_attributes(p)
    n_states = 2 if p.mode == "lstm" else 1
    x, per_layer = node.inputs[0], []
    for layer in range(p.num_layers):
        weights = _layer_weights(node, g, flat, layer)
        states = _layer_states(node, g, layer)
        y = g.fresh(f"{node.name}_l{layer}_y")
        finals = [g.fresh(f"{node.name}_l{layer}_final{i}") for i in range(n_states)]
        g.add_node(op_type, [x, *weights, "", *states], [y, *finals], **attributes)
        per_layer.append(finals)
        last = layer == p.num_layers - 1
        x = node.outputs[0] if last else g.fresh(f"{node.name}_l{layer}_out")
        _to_mxnet_layout(node, g, y, x)
    if p.state_outputs:
        _final_states(node, g, per_layer, node.outputs[1:])
