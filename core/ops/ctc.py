"""CTCLoss: connectionist temporal classification loss, per sequence, with its gradient.

``data`` holds unnormalised activations (time, batch, alphabet); the loss of
each sequence is -log p(label | data) under a softmax over the alphabet, one
channel reserved for the blank ('first': channel 0, labels padded with 0;
'last': the last channel, labels padded with -1). As MXNet (warp-ctc) does,
the forward pass also computes the gradient w.r.t. the activations and keeps
it as a hidden second output; the backward pass scales it by the head
gradient of each sequence. Alpha and beta run in log space, vectorised over
the batch; one step per time frame.

Like MXNet: time steps past a sequence's ``data_lengths`` get a zero
gradient, and a label that cannot fit its sequence (length plus repeated
neighbours longer than the data) gives loss 0 (gradient 0 here; MXNet leaves
it unset). An empty label (all padding, or label length 0) costs
-sum_t log p_t(blank), as in MXNet when some other label of the batch is not
empty (when all are, warp-ctc gets no label buffer, refuses, and MXNet
returns its output buffers unset); on data of length 0 it costs 0 (MXNet:
inf). Label values outside the alphabet and lengths outside their axis raise
(warp-ctc indexes past its buffers there). Where a frame's symbol is certain
(log occupancy exactly 0.0), warp-ctc takes it for unset and its gradient is
p, not p - 1; here it is the derivative.
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .conv_utils import work_dtype
from .params import param

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class CTCLossParams:
    use_data_lengths: bool = param("bool", False)
    use_label_lengths: bool = param("bool", False)
    blank_label: str = param("str", "first", choices=("first", "last"))


def _arguments(p):
    names = ["data", "label"]
    if p.use_data_lengths:
        names.append("data_lengths")
    if p.use_label_lengths:
        names.append("label_lengths")
    return tuple(names)


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, label = in_shapes[0], in_shapes[1]
    if data is not None and len(data) != 3:
        raise mismatch("data", data, "(sequence_length, batch, alphabet)", "data must be 3-D")
    if label is not None and len(label) != 2:
        raise mismatch("label", label, "(batch, label_length)", "label must be 2-D")
    batch = None if data is None else (data[1],)
    if label is not None:
        if batch and batch[0] and label[0] and label[0] != batch[0]:
            raise mismatch("label", label, (batch[0], label[1]), "batch sizes differ")
        if data is not None and data[0] and label[1] > data[0]:
            raise mismatch("label", label, f"at most {data[0]} labels", "longer than the data")
        batch = merge_shape(batch, label[:1], "label")
    for index, name in enumerate(_arguments(p)[2:], start=2):
        shape = in_shapes[index]
        if shape is not None and len(shape) != 1:
            raise mismatch(name, shape, "(batch,)", f"{name} is a vector")
        in_shapes[index] = batch = merge_shape(batch, shape, name)
    return in_shapes, [merge_shape(batch, out_shapes[0], "output")], aux_shapes


def _infer_type(p, in_types, out_types, aux_types):
    dtype = in_types[0] or out_types[0]
    if dtype is None:
        return in_types, out_types, aux_types
    return [dtype, *in_types[1:]], [dtype], aux_types


def _check_range(lengths, name, limit, axis):
    """Raise for a length outside [0, limit] (warp-ctc reads or writes past its buffers)."""
    outside = (lengths < 0) | (lengths > limit)
    if bool(outside.any()):
        found = int(lengths[outside][0])
        raise ValueError(
            f"CTCLoss: {name} holds {found}, outside [0, {limit}] ({limit} is the size of "
            f"{axis}); give lengths between 0 and {limit}"
        )


def _lengths(xp, p, inputs, label):
    """Per sequence: (data length, label length) as int64 vectors."""
    steps, batch = inputs[0].shape[:2]
    data_len = xp.full(batch, steps, dtype=np.int64)
    extra = list(inputs[2:])
    if p.use_data_lengths:
        data_len = extra.pop(0).astype(np.float32).astype(np.int64)
        _check_range(data_len, "data_lengths", steps, "the sequence axis (0) of 'data'")
    width = label.shape[1]
    if p.use_label_lengths:
        label_len = extra.pop(0).astype(np.int64)
        _check_range(label_len, "label_lengths", width, "the label axis (1) of 'label'")
    else:
        padding = label == (0 if p.blank_label == "first" else -1)
        label_len = xp.where(padding.any(axis=1), padding.argmax(axis=1), width)
    return data_len, label_len


def _extended(xp, label, label_len, blank, alphabet):
    """Labels with blanks between (B, 2L+1), which states may skip two, and their validity.

    As warp-ctc: the forward pass may enter label state s from s - 2 when it
    is no blank and differs from it; the backward pass may leave state s for
    s + 2 on the same test made at s (the two differ only for labels that hold
    the blank value).
    """
    batch, width = label.shape
    states = 2 * width + 1
    ext = xp.full((batch, states), blank, dtype=np.int64)
    ext[:, 1::2] = xp.clip(label, 0, alphabet - 1)
    differs = (ext[:, 2:] != ext[:, :-2]) & (xp.arange(2, states) % 2 == 1)
    enter = xp.zeros((batch, states), dtype=bool)
    enter[:, 2:] = differs & (ext[:, 2:] != blank)
    leave = xp.zeros((batch, states), dtype=bool)
    leave[:, :-2] = differs & (ext[:, :-2] != blank)
    valid = xp.arange(states)[None, :] < (2 * label_len + 1)[:, None]
    in_label = xp.arange(width)[None, :] < label_len[:, None]
    repeats = ((label[:, 1:] == label[:, :-1]) & in_label[:, 1:]).sum(axis=1)
    return ext, (enter, leave), valid, repeats


def _logsumexp(xp, *terms):
    top = terms[0]
    for term in terms[1:]:
        top = xp.maximum(top, term)
    shift = xp.where(xp.isfinite(top), top, 0)
    total = sum(xp.exp(term - shift) for term in terms)
    with np.errstate(divide="ignore"):
        return xp.log(total) + shift


def _shift(xp, values, by):
    """values[..., s - by] along the last axis (``by`` > 0 looks left, < 0 right), -inf padded."""
    out = xp.full(values.shape, -xp.inf, dtype=values.dtype)
    if by > 0:
        out[:, by:] = values[:, :-by]
    else:
        out[:, :by] = values[:, -by:]
    return out


def _alphas(xp, emit, skip, valid):
    """Forward variables (T, B, S), the emission of frame t included."""
    alphas = xp.full(emit.shape, -xp.inf, dtype=emit.dtype)
    alphas[0, :, :2] = emit[0, :, :2]
    alphas[0] = xp.where(valid, alphas[0], -xp.inf)
    for t in range(1, emit.shape[0]):
        prev = alphas[t - 1]
        skipped = xp.where(skip[0], _shift(xp, prev, 2), -xp.inf)
        step = _logsumexp(xp, prev, _shift(xp, prev, 1), skipped) + emit[t]
        alphas[t] = xp.where(valid, step, -xp.inf)
    return alphas


def _betas(xp, emit, skip, valid, data_len, label_len):
    """Backward variables (T, B, S), emission of frame t included, from each sequence's end."""
    steps, batch, states = emit.shape
    position = xp.arange(states)[None, :]
    ends = valid & (position >= 2 * label_len[:, None] - 1)
    betas = xp.full(emit.shape, -xp.inf, dtype=emit.dtype)
    following = xp.full((batch, states), -xp.inf, dtype=emit.dtype)
    for t in range(steps - 1, -1, -1):
        skipped = xp.where(skip[1], _shift(xp, following, -2), -xp.inf)
        step = _logsumexp(xp, following, _shift(xp, following, -1), skipped) + emit[t]
        start = xp.where(ends, emit[t], -xp.inf)
        last = (data_len - 1 == t)[:, None]
        inside = (t < data_len - 1)[:, None]
        following = xp.where(last, start, xp.where(inside & valid, step, -xp.inf))
        betas[t] = following
    return betas


def _log_softmax(xp, data):
    shifted = data - data.max(axis=2, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=2, keepdims=True))


def _log_likelihood(xp, alphas, data_len, label_len):
    """log p(label | data) per sequence from the forward variables.

    An empty label on empty data has probability 1 (log 0 here; warp-ctc
    gives -inf there), and a label on empty data probability 0.
    """
    steps, batch, _ = alphas.shape
    rows = xp.arange(batch)
    final = alphas[xp.clip(data_len - 1, 0, steps - 1), rows]  # (B, S)
    last = 2 * label_len
    before = xp.where(label_len > 0, final[rows, xp.maximum(last - 1, 0)], -xp.inf)
    log_likelihood = _logsumexp(xp, final[rows, last], before)
    empty = xp.where(label_len == 0, 0.0, -xp.inf).astype(alphas.dtype)
    return xp.where(data_len == 0, empty, log_likelihood)


def _check_label_values(xp, label, label_len, alphabet):
    """Raise for a label value outside the alphabet (warp-ctc reads past its buffer)."""
    used = xp.arange(label.shape[1])[None, :] < label_len[:, None]
    outside = used & ((label < 0) | (label >= alphabet))
    if bool(outside.any()):
        found = int(label[outside][0])
        raise ValueError(
            f"CTCLoss: label value {found} is outside the alphabet [0, {alphabet}) of "
            f"'data' (its last axis); use label values below {alphabet}, or widen the "
            "alphabet axis of 'data'"
        )


def _ctc(xp, p, inputs):
    """(loss per sequence, gradient w.r.t. the activations), in the work dtype."""
    data = inputs[0].astype(work_dtype(inputs[0].dtype), copy=False)
    steps, batch, alphabet = data.shape
    label = inputs[1].astype(np.int64)
    data_len, label_len = _lengths(xp, p, inputs, label)
    _check_label_values(xp, label, label_len, alphabet)
    blank = 0 if p.blank_label == "first" else alphabet - 1
    ext, skip, valid, repeats = _extended(xp, label, label_len, blank, alphabet)
    log_probs = _log_softmax(xp, data)
    index = xp.broadcast_to(ext[None], (steps, *ext.shape))
    emit = xp.take_along_axis(log_probs, index, axis=2)  # (T, B, S)
    alphas = _alphas(xp, emit, skip, valid)
    betas = _betas(xp, emit, skip, valid, data_len, label_len)
    log_likelihood = _log_likelihood(xp, alphas, data_len, label_len)
    feasible = (label_len + repeats <= data_len) & xp.isfinite(log_likelihood)
    log_z = xp.where(feasible, log_likelihood, 0)
    paths = xp.where(xp.isfinite(emit), alphas + betas - emit, -xp.inf)
    occupancy = xp.exp(paths - log_z[None, :, None])  # (T, B, S)
    one_hot = (ext[:, :, None] == xp.arange(alphabet)[None, None, :]).astype(data.dtype)
    grad = xp.exp(log_probs) - xp.einsum("tbs,bsa->tba", occupancy, one_hot)
    in_time = xp.arange(steps)[:, None] < data_len[None, :]
    grad = xp.where((in_time & feasible[None, :])[:, :, None], grad, 0)
    # 0 - x rather than -x: a certain empty label costs +0.0, not -0.0
    return xp.where(feasible, 0 - log_likelihood, 0), grad


def _forward(ctx, p, inputs, aux):
    dtype = inputs[0].dtype
    loss, grad = _ctc(ctx.xp, p, inputs)
    return [loss.astype(dtype, copy=False)], (grad, len(inputs), dtype)


def _backward(ctx, p, saved, out_grads, need_grad):
    grad, count, dtype = saved
    grads = [None] * count
    if need_grad[0]:
        head = out_grads[0].astype(grad.dtype, copy=False)
        grads[0] = (grad * head[None, :, None]).astype(dtype, copy=False)
    return grads


OPS = [
    OpDef(
        name="CTCLoss",
        aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
        params=CTCLossParams,
        arguments=_arguments,
        outputs=("output0",),
        hidden_outputs=1,  # MXNet's gradient, computed in the forward pass
        infer_shape=_infer_shape,
        infer_type=_infer_type,
        forward=_forward,
        backward=_backward,
        doc="Connectionist temporal classification loss of each sequence.",
    ),
]
