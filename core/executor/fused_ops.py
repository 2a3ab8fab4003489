"""Operators that exist only inside optimized plans (see ``optimize.py``).

Each stands for several graph nodes and computes exactly what they compute,
with fewer passes over memory. They never appear in a Symbol: they have no
shape rule and are not registered.
"""

import attrs
import numpy as np

from rebind.backends import cupy_gemm as gemm
from rebind.backends import cupy_nn_kernels, cupy_row_kernels
from rebind.backends.cupy_kernels import fusable

from ..ops.base import OpDef
from ..ops.consecutive import stacked
from ..ops.loss import softmax_rows
from ..ops.nn import bias_gradient

__all__ = [
    "BATCHED_FULLY_CONNECTED",
    "PROJECTED_SOFTMAX_OUTPUT",
    "BatchedParams",
    "ProjectedSoftmaxParams",
    "bias_in_kernel",
    "replaced",
    "run_replaced",
]


def replaced(step):
    """What a plan-only step keeps of a step it replaces: ``(op, train ctx, infer ctx, params)``."""
    return (step.op, step.train_ctx, step.infer_ctx, step.params)


def run_replaced(ctx, kept, inputs, params=None):
    """A replaced step's forward (``kept`` from ``replaced``), in ``ctx``'s mode.

    ``params`` stands in for the step's own where given.
    """
    op, train_ctx, infer_ctx, own = kept
    step_ctx = train_ctx if ctx.is_train else infer_ctx
    return op.forward(step_ctx, own if params is None else params, inputs, [])


def bias_in_kernel(data, weight, bias):
    """Whether a GPU kernel after a product may add ``bias`` itself (raw C-contiguous reads)."""
    return fusable(data, weight, bias) and bias.flags.c_contiguous


def _not_for_symbols(*_args):
    raise NotImplementedError(
        "this operator exists only inside compiled plans (core/executor/optimize.py); "
        "it has no shape rule"
    )


# -- FullyConnected over several time steps as one product ---------------------------------


@attrs.frozen
class BatchedParams:
    """A batched projection: the FullyConnected's parameters and how its inputs come in.

    ``split_axis`` is the time axis of one ``(.., .., in)`` input array, or
    None when the ``count`` step inputs are separate arrays (stacked).
    """

    num_hidden: int
    no_bias: bool
    count: int
    split_axis: object = None


def _batched_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    if p.split_axis is None:
        data, rest, axis = stacked(xp, inputs[: p.count]), inputs[p.count :], 0
    else:
        data, rest, axis = inputs[0], inputs[1:], p.split_axis
    weight = rest[0]
    flat = data.reshape(-1, data.shape[-1])
    out = gemm.matmul(xp, flat, weight.T)
    if not p.no_bias:
        out += rest[1]
    out = out.reshape(*data.shape[:-1], p.num_hidden)
    steps = [out[t] for t in range(p.count)] if axis == 0 else [out[:, t] for t in range(p.count)]
    return steps, (data.shape, flat, weight)


def _batched_backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    shape, flat, weight = saved
    axis = 0 if p.split_axis is None else p.split_axis
    grad = stacked(xp, out_grads, axis=axis).reshape(-1, p.num_hidden)
    n_data = p.count if p.split_axis is None else 1
    grads = [None] * (n_data + (1 if p.no_bias else 2))
    if any(need_grad[:n_data]):
        data_grad = gemm.matmul(xp, grad, weight).reshape(shape)
        if p.split_axis is None:
            grads[:n_data] = [data_grad[t] if need_grad[t] else None for t in range(n_data)]
        else:
            grads[0] = data_grad
    if need_grad[n_data]:
        grads[n_data] = gemm.matmul(xp, grad.T, flat)
    if not p.no_bias and need_grad[n_data + 1]:
        grads[n_data + 1] = bias_gradient(xp, grad)
    return grads


def _batched_arguments(p):
    data = (f"data{t}" for t in range(p.count)) if p.split_axis is None else ("data",)
    return (*data, "weight") if p.no_bias else (*data, "weight", "bias")


BATCHED_FULLY_CONNECTED = OpDef(
    name="_batched_FullyConnected",
    params=BatchedParams,
    arguments=_batched_arguments,
    outputs=lambda p: tuple(f"output{t}" for t in range(p.count)),
    infer_shape=_not_for_symbols,
    forward=_batched_forward,
    backward=_batched_backward,
    doc="Several FullyConnected applications of one weight as one matrix product.",
)


# -- FullyConnected into SoftmaxOutput, without the two big temporaries ----------------------


@attrs.frozen
class ProjectedSoftmaxParams:
    """The two fused steps' kernels and parameters (the FullyConnected has a bias or not)."""

    fc_op: object
    fc_params: object
    softmax_op: object
    softmax_params: object
    has_bias: bool
    # the FullyConnected's parameters without its bias, which a GPU's softmax kernel adds
    # (None without a bias)
    fc_unbiased: object = None


_IN_PLACE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _projected_softmax_forward(ctx, p, inputs, aux):
    """The FullyConnected kernel, then the softmax in place over its fresh logits.

    SoftmaxOutput computes its softmax into a new array of the logits' size;
    here the logits (which nothing else reads) become the output. float16
    (computed through float32) runs the two kernels as they are.
    """
    label = inputs[-1]
    if p.fc_unbiased is not None and _bias_in_softmax(p, inputs):
        # on a GPU the bias is added in the softmax kernel, one launch less
        (logits,), fc_saved = p.fc_op.forward(ctx, p.fc_unbiased, inputs[:2], [])
        prob = softmax_rows(ctx.xp, logits, logits, bias=inputs[2])
        return [prob], (fc_saved, (prob, label))
    (logits,), fc_saved = p.fc_op.forward(ctx, p.fc_params, inputs[:-1], [])
    if logits.dtype not in _IN_PLACE_DTYPES:
        (prob,), softmax_saved = p.softmax_op.forward(ctx, p.softmax_params, [logits, label], [])
        return [prob], (fc_saved, softmax_saved)
    prob = softmax_rows(ctx.xp, logits, logits)
    return [prob], (fc_saved, (prob, label))


def _bias_in_softmax(p, inputs):
    classes = p.fc_params.num_hidden
    return 0 < classes <= cupy_row_kernels.MAX_WARP_WIDTH and bias_in_kernel(*inputs[:3])


def _projected_softmax_backward(ctx, p, saved, out_grads, need_grad):
    """The FullyConnected backward of SoftmaxOutput's gradient ``prob - onehot(label)``.

    That gradient differs from the output only at each row's label, so
    instead of a copy the output itself is changed there for the FullyConnected
    backward and then given back its exact values.
    """
    fc_saved, softmax_saved = saved
    if not isinstance(softmax_saved, tuple) or softmax_saved[0].dtype not in _IN_PLACE_DTYPES:
        grad = p.softmax_op.backward(ctx, p.softmax_params, softmax_saved, out_grads, [True, False])
        return [*p.fc_op.backward(ctx, p.fc_params, fc_saved, grad[:1], need_grad[:-1]), None]
    xp, (prob, label) = ctx.xp, softmax_saved
    rows, width = prob.shape
    if xp is np and prob.flags.c_contiguous:
        return _numpy_projected_backward(ctx, p, fc_saved, prob, label, need_grad)
    if fusable(prob, contiguous=True) and label.size >= rows:  # two CuPy kernels in all
        kept = xp.empty(rows, dtype=prob.dtype)
        cupy_nn_kernels.subtract_label_ones(xp, prob, label, kept)
        try:
            grads = p.fc_op.backward(ctx, p.fc_params, fc_saved, [prob], need_grad[:-1])
        finally:
            cupy_nn_kernels.restore_label_scores(xp, prob, label, kept)
        return [*grads, None]
    classes = label.reshape(-1)[:rows].astype(np.int64)
    # a label out of range has no one-hot entry: its row subtracts 0 from column 0,
    # which changes nothing, and nothing waits to learn whether any label is such
    inside = (classes >= 0) & (classes < width)
    classes *= inside
    if prob.flags.c_contiguous:  # one flat index per row: cheaper than (row, column) pairs
        classes += xp.arange(0, rows * width, width)
        values, where = prob.reshape(-1), classes
    else:
        values, where = prob, (xp.arange(rows), classes)
    kept = values[where]
    values[where] = kept - inside.astype(prob.dtype)
    try:
        grads = p.fc_op.backward(ctx, p.fc_params, fc_saved, [prob], need_grad[:-1])
    finally:
        values[where] = kept
    return [*grads, None]


def _numpy_projected_backward(ctx, p, fc_saved, prob, label, need_grad):
    """``_projected_softmax_backward`` on the CPU: the labels' flat indices checked on the host.

    The same values as the device form (one less at each row's label, nothing
    for a label out of range), with fewer array operations: a CPU has nothing
    to wait for when it looks at the labels.
    """
    rows, width = prob.shape
    classes = label.reshape(-1)[:rows].astype(np.intp)
    if rows and (classes.min() < 0 or classes.max() >= width):
        inside = (classes >= 0) & (classes < width)
        classes, rows_taken = classes[inside], np.flatnonzero(inside)
    else:
        rows_taken = _row_numbers(rows)
    where = rows_taken * width + classes
    values = prob.reshape(-1)
    kept = values[where]
    values[where] = kept - prob.dtype.type(1)
    try:
        grads = p.fc_op.backward(ctx, p.fc_params, fc_saved, [prob], need_grad[:-1])
    finally:
        values[where] = kept
    return [*grads, None]


_ROWS = {}  # rows -> arange(rows), read-only: batch sizes repeat


def _row_numbers(rows):
    numbers = _ROWS.get(rows)
    if numbers is None:
        numbers = np.arange(rows, dtype=np.intp)
        numbers.flags.writeable = False
        if len(_ROWS) < 64:
            _ROWS[rows] = numbers
    return numbers


def _projected_arguments(p):
    return ("data", "weight", "bias", "label") if p.has_bias else ("data", "weight", "label")


PROJECTED_SOFTMAX_OUTPUT = OpDef(
    name="_projected_SoftmaxOutput",
    params=ProjectedSoftmaxParams,
    arguments=_projected_arguments,
    infer_shape=_not_for_symbols,
    forward=_projected_softmax_forward,
    backward=_projected_softmax_backward,
    is_loss=True,
    doc="FullyConnected followed by SoftmaxOutput (class labels, no scaling) as one step.",
)
