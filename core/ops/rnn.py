"""The fused RNN operator (MXNet's ``RNN``): stacked, optionally bidirectional
rnn_relu / rnn_tanh / LSTM / GRU over a TNC sequence, with full BPTT.

This module owns the parameters, the packing of the flat ``parameters``
vector, shape and type inference, and the layer/direction orchestration; the
per-step recurrences live in ``rnn_cells.py``.

Packing of ``parameters`` (MXNet's, cuDNN-compatible): every weight matrix
first, then every bias vector. Both are ordered by layer, then direction
(forward, backward); per (layer, direction) come W_i2h (G*H, in) then W_h2h
(G*H, H), and later b_i2h (G*H) then b_h2h (G*H). ``in`` is the input size
for layer 0 and D*H above it; G is 4 (LSTM), 3 (GRU) or 1.

Speed: per layer, the input projection of every time step (and of both
directions) is one matrix product; so are the weight and input gradients
after the backward recursion. Inside the recursion there is only the
recurrent product per step.
"""

import math

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .params import param, positive
from .rnn_cells import CELLS
from .sequence import lengths_keep_their_type

__all__ = ["OPS", "param_layout", "num_parameters"]

MODES = ("rnn_relu", "rnn_tanh", "lstm", "gru")
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}

SEQUENCE_LENGTH_REASON = (
    "RNN use_sequence_length=True has no valid CPU reference in MXNet 1.9.1: the native CPU "
    "kernel aborts ('only available for cuDNN') and the MKLDNN kernel silently ignores "
    "sequence_length; rebind does not guess the cuDNN semantics"
)


def _no_projection(instance, attribute, value):
    if value is not None:
        raise NotImplementedError(
            f"RNN: projection_size={value} (LSTM with projection, cuDNN-only in MXNet) "
            "is not implemented"
        )


def _dropout_rate(instance, attribute, value):
    if not 0.0 <= value < 1.0:
        raise ValueError(f"p must be in [0, 1), got {value}")


@attrs.frozen
class RNNParams:
    state_size: int = param("int", validator=positive)
    num_layers: int = param("int", validator=positive)
    mode: str = param("str", choices=MODES)
    bidirectional: bool = param("bool", False)
    p: float = param("float", 0.0, validator=_dropout_rate)
    state_outputs: bool = param("bool", False)
    projection_size: int = param("int", None, optional=True, validator=_no_projection)
    lstm_state_clip_min: float = param("float", None, optional=True)
    lstm_state_clip_max: float = param("float", None, optional=True)
    lstm_state_clip_nan: bool = param("bool", False)
    use_sequence_length: bool = param("bool", False)

    def __attrs_post_init__(self):
        lo, hi = self.lstm_state_clip_min, self.lstm_state_clip_max
        if lo is None and hi is None:
            return
        if self.mode != "lstm":
            raise ValueError("state clipping (lstm_state_clip_min/max) is only supported for LSTM")
        if lo is None or hi is None:
            raise ValueError("lstm_state_clip_min and lstm_state_clip_max must be given together")
        if hi < lo:
            raise ValueError(f"lstm_state_clip_max={hi} is less than lstm_state_clip_min={lo}")

    @property
    def directions(self):
        return 2 if self.bidirectional else 1

    @property
    def clip(self):
        """(lo, hi, nan_to_min) for the LSTM cell state, or None."""
        if self.lstm_state_clip_min is None:
            return None
        return (self.lstm_state_clip_min, self.lstm_state_clip_max, self.lstm_state_clip_nan)


# -- packing of the flat parameter vector --------------------------------------


@attrs.frozen
class Slot:
    """Where one (layer, direction)'s arrays lie: (offset, shape) for each."""

    wx: tuple
    wh: tuple
    bx: tuple
    bh: tuple


def param_layout(mode, input_size, state_size, num_layers, directions):
    """The Slot of every (layer, direction), indexed layer * D + direction, and the total size."""
    rows = GATES[mode] * state_size
    offset, weights = 0, []
    for layer in range(num_layers):
        in_size = input_size if layer == 0 else directions * state_size
        for _ in range(directions):
            wx, offset = (offset, (rows, in_size)), offset + rows * in_size
            wh, offset = (offset, (rows, state_size)), offset + rows * state_size
            weights.append((wx, wh))
    slots = []
    for wx, wh in weights:
        bx, bh, offset = (offset, (rows,)), (offset + rows, (rows,)), offset + 2 * rows
        slots.append(Slot(wx, wh, bx, bh))
    return slots, offset


def num_parameters(p, input_size):
    """Length of the ``parameters`` vector for data with ``input_size`` features."""
    return param_layout(p.mode, input_size, p.state_size, p.num_layers, p.directions)[1]


def _view(flat, place):
    offset, shape = place
    return flat[offset : offset + math.prod(shape)].reshape(shape)


def _views(flat, slot):
    return Slot(*(_view(flat, getattr(slot, f)) for f in ("wx", "wh", "bx", "bh")))


# -- names and inference --------------------------------------------------------


def _arguments(p):
    names = ["data", "parameters", "state"]
    if p.mode == "lstm":
        names.append("state_cell")
    if p.use_sequence_length:
        names.append("sequence_length")
    return tuple(names)


def _outputs(p):
    if not p.state_outputs:
        return ("output",)
    return ("output", "state_output", "statecell_output")[: 3 if p.mode == "lstm" else 2]


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if len(data) != 3:
        raise mismatch(
            "data",
            tuple(data),
            "(sequence_length, batch, input_size)",
            "RNN data must be 3-D, layout TNC",
        )
    steps, batch, width = data
    state = (p.num_layers * p.directions, batch, p.state_size)
    if width:
        in_shapes[1] = merge_shape((num_parameters(p, width),), in_shapes[1], "parameters")
    names = _arguments(p)
    for index, name in enumerate(names[2:], start=2):
        expected = (batch,) if name == "sequence_length" else state
        in_shapes[index] = merge_shape(expected, in_shapes[index], name)
    computed = [(steps, batch, p.directions * p.state_size)] + [state] * (len(out_shapes) - 1)
    out_shapes = [merge_shape(c, o, "output") for c, o in zip(computed, out_shapes, strict=True)]
    if not batch:  # batch size learned from the states or the output
        learned = next((s[1] for s in (*in_shapes[2:], *out_shapes) if s and s[1]), 0)
        if learned:
            return _infer_shape(
                p, [(steps, learned, width), *in_shapes[1:]], out_shapes, aux_shapes
            )
    return in_shapes, out_shapes, aux_shapes


# -- forward ---------------------------------------------------------------------


def _compute_dtype(dtype):
    """float16 runs in float32 (long recurrences lose too much in half precision)."""
    return np.dtype("float32") if dtype == np.float16 else np.dtype(dtype)


def _layer_forward(xp, p, x, weights, h0, c0):
    """One layer, every direction; weights is a list of Slot views, h0/c0 (D, N, H)."""
    cell, hidden = CELLS[p.mode], p.state_size
    steps, batch, in_size = x.shape
    rows = cell.gates * hidden
    wx = weights[0].wx if len(weights) == 1 else xp.concatenate([w.wx for w in weights])
    bias = xp.concatenate([w.bx + w.bh if cell.fold_hidden_bias else w.bx for w in weights])
    xg = xp.matmul(x.reshape(steps * batch, in_size), wx.T).reshape(steps, batch, -1)
    xg += bias
    y = xp.empty((steps, batch, len(weights) * hidden), dtype=x.dtype)
    finals, caches = [], []
    for d, w in enumerate(weights):
        h, c, cache = cell.forward(
            xp,
            xg[:, :, d * rows : (d + 1) * rows],
            w.wh,
            w.bh,
            h0[d],
            None if c0 is None else c0[d],
            y[:, :, d * hidden : (d + 1) * hidden],
            d == 1,
            p.clip,
        )
        finals.append((h, c))
        caches.append(cache)
    return y, finals, (wx, caches)


def _dropout_mask(ctx, p, shape, dtype):
    keep = ctx.backend.uniform(0.0, 1.0, shape, dtype, ctx.device_id) >= p.p
    return keep.astype(dtype) * dtype.type(1.0 / (1.0 - p.p))


def _rnn_forward(ctx, p, inputs, aux):
    if p.use_sequence_length:
        raise NotImplementedError(SEQUENCE_LENGTH_REASON)
    xp, dtype = ctx.xp, inputs[0].dtype
    work = _compute_dtype(dtype)
    data, flat, state = (a.astype(work, copy=False) for a in inputs[:3])
    cell = inputs[3].astype(work, copy=False) if p.mode == "lstm" else None
    slots, _ = param_layout(p.mode, data.shape[2], p.state_size, p.num_layers, p.directions)
    n_dir = p.directions
    hy, cy, layers, x = [], [], [], data
    for layer in range(p.num_layers):
        rows = slice(layer * n_dir, (layer + 1) * n_dir)
        weights = [_views(flat, s) for s in slots[rows]]
        y, finals, cache = _layer_forward(
            xp, p, x, weights, state[rows], None if cell is None else cell[rows]
        )
        hy += [h for h, _ in finals]
        cy += [c for _, c in finals]
        mask = None
        if ctx.is_train and p.p > 0 and layer < p.num_layers - 1:
            mask = _dropout_mask(ctx, p, y.shape, work)
        layers.append((x, y, weights, cache, mask))
        x = y if mask is None else y * mask
    outputs = [x.astype(dtype, copy=False)]
    if p.state_outputs:
        outputs.append(xp.stack(hy).astype(dtype, copy=False))
        if p.mode == "lstm":
            outputs.append(xp.stack(cy).astype(dtype, copy=False))
    # saved in inference too: autograd may differentiate a forward run outside training
    return outputs, (layers, state, cell, flat.shape, dtype)


# -- backward --------------------------------------------------------------------


def _hidden_history(xp, y, h0, reverse):
    """h_{t-1} for every step t of one direction (in time order): y shifted, h0 first."""
    history = xp.empty(y.shape, dtype=y.dtype)
    if reverse:
        history[:-1], history[-1] = y[1:], h0
    else:
        history[1:], history[0] = y[:-1], h0
    return history


def _layer_backward(xp, p, layer_saved, h0, c0, dy, dhy, dcy, grads, need_dx):
    """Gradients of one layer: weights into ``grads`` (Slot views), returns (dx, dh0, dc0)."""
    x, y, weights, (wx, caches), _ = layer_saved
    cell, hidden = CELLS[p.mode], p.state_size
    steps, batch, in_size = x.shape
    rows, flat_rows = cell.gates * hidden, steps * batch
    dxg = xp.empty((steps, batch, len(weights) * rows), dtype=x.dtype)
    dh0, dc0 = [], []
    for d, (w, g) in enumerate(zip(weights, grads, strict=True)):
        cols = slice(d * hidden, (d + 1) * hidden)
        dhg, dh, dc = cell.backward(
            xp,
            caches[d],
            w.wh,
            h0[d],
            None if c0 is None else c0[d],
            y[:, :, cols],
            dy[:, :, cols],
            dhy[d],
            None if dcy is None else dcy[d],
            d == 1,
            dxg[:, :, d * rows : (d + 1) * rows],
        )
        dh0.append(dh)
        dc0.append(dc)
        if g is not None:
            history = _hidden_history(xp, y[:, :, cols], h0[d], d == 1)
            dhg_flat = dhg.reshape(flat_rows, rows)
            g.wh[...] = xp.matmul(dhg_flat.T, history.reshape(flat_rows, hidden))
            g.bh[...] = dhg_flat.sum(axis=0)
    dxg_flat = dxg.reshape(flat_rows, -1)
    if grads[0] is not None:
        dwx = xp.matmul(dxg_flat.T, x.reshape(flat_rows, in_size))
        dbx = dxg_flat.sum(axis=0)
        for d, g in enumerate(grads):
            g.wx[...] = dwx[d * rows : (d + 1) * rows]
            g.bx[...] = dbx[d * rows : (d + 1) * rows]
    dx = xp.matmul(dxg_flat, wx).reshape(steps, batch, in_size) if need_dx else None
    return dx, dh0, dc0


def _rnn_backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    layers, state, cell, flat_shape, dtype = saved
    work = state.dtype
    heads = [g.astype(work, copy=False) for g in out_grads]
    n_dir, n_state = p.directions, p.num_layers * p.directions
    zeros = xp.zeros(state.shape, dtype=work)
    dhy = heads[1] if p.state_outputs else zeros
    dcy = (heads[2] if p.state_outputs else zeros) if p.mode == "lstm" else None
    dflat = xp.zeros(flat_shape, dtype=work) if need_grad[1] else None
    slots, _ = param_layout(p.mode, layers[0][0].shape[2], p.state_size, p.num_layers, n_dir)
    dstate, dcell = [None] * n_state, [None] * n_state
    dy = heads[0]
    for layer in range(p.num_layers - 1, -1, -1):
        rows = slice(layer * n_dir, (layer + 1) * n_dir)
        grads = [None if dflat is None else _views(dflat, s) for s in slots[rows]]
        dx, dh0, dc0 = _layer_backward(
            xp,
            p,
            layers[layer],
            state[rows],
            None if cell is None else cell[rows],
            dy,
            dhy[rows],
            None if dcy is None else dcy[rows],
            grads,
            layer > 0 or need_grad[0],
        )
        dstate[rows], dcell[rows] = dh0, dc0
        if layer > 0:
            mask = layers[layer - 1][4]
            dy = dx if mask is None else dx * mask
    result = [dx if need_grad[0] else None, dflat, xp.stack(dstate) if need_grad[2] else None]
    if p.mode == "lstm":
        result.append(xp.stack(dcell) if need_grad[3] else None)
    result = [None if g is None else g.astype(dtype, copy=False) for g in result]
    return result + [None] * p.use_sequence_length


RNN = OpDef(
    name="RNN",
    params=RNNParams,
    arguments=_arguments,
    outputs=_outputs,
    infer_shape=_infer_shape,
    infer_type=lengths_keep_their_type,
    forward=_rnn_forward,
    backward=_rnn_backward,
    doc="Fused multi-layer (bi)directional rnn_relu/rnn_tanh/LSTM/GRU over TNC data.",
)

OPS = [RNN]
