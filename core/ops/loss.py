"""Loss layers: SoftmaxOutput (alias Softmax), the three regression outputs,
MakeLoss and make_loss.

All are ``is_loss`` ops: their backward makes the head gradient itself (the
head gradient passed in is ignored, except by SoftmaxOutput with out_grad).
"""

import math

import attrs
import numpy as np

from rebind.backends import cupy_nn_kernels, cupy_row_kernels
from rebind.backends.cupy_kernels import fusable

from .base import ArgShapeMismatch, OpDef, merge_shape, mismatch
from .loss_types import check_label_dtype, data_led_type, uniform_type
from .params import param

__all__ = ["OPS"]

NORMALIZATIONS = ("null", "batch", "valid")


def _wide(x):
    """The dtype to compute in: float16 goes through float32."""
    return x.astype(np.float32, copy=False) if x.dtype == np.float16 else x


def _first_merge(candidates, given, argument):
    """The merge of ``given`` with the first candidate shape it fits, or None."""
    for candidate in candidates:
        try:
            return merge_shape(candidate, given, argument)
        except ArgShapeMismatch:
            continue
    return None


# -- SoftmaxOutput ------------------------------------------------------------


@attrs.frozen
class SoftmaxOutputParams:
    grad_scale: float = param("float", 1.0)
    ignore_label: float = param("float", -1.0)
    multi_output: bool = param("bool", False)
    use_ignore: bool = param("bool", False)
    preserve_shape: bool = param("bool", False)
    normalization: str = param("str", "null", choices=NORMALIZATIONS)
    out_grad: bool = param("bool", False)
    smooth_alpha: float = param("float", 0.0)

    def __attrs_post_init__(self):
        if not 0 <= self.smooth_alpha <= 1:
            raise ValueError(f"smooth_alpha must be in [0, 1], got {self.smooth_alpha}")


def _label_candidates(p, data):
    """The label shapes SoftmaxOutput accepts for ``data``, preferred first."""
    if p.multi_output:
        rest = data[2:]
        flat = math.prod(rest) if all(rest) else 0
        with_channel_one = (data[0], 1, *rest)
        # MXNet fills in (N, prod(rest)) and also accepts (N, rest...) and (N, 1, rest...).
        return [(data[0], flat), (data[0], *rest), with_channel_one]
    return [tuple(data[:-1])]


def _softmax_output_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    label = in_shapes[1]
    if data is not None:
        index_shapes = _label_candidates(p, data)
        if label is None:
            label = index_shapes[0]
        else:
            # a label shaped like data holds probabilities (checked exactly, as MXNet)
            label = _first_merge([data, *index_shapes], label, "label")
            if label is None:
                expected = " or ".join(str(s) for s in index_shapes[:2])
                raise mismatch(
                    "label",
                    tuple(in_shapes[1]),
                    expected,
                    "label must be data's shape or a class index per row",
                )
    return [data, label], [data], aux_shapes


# elements per block of rows in the CPU softmax: its passes then run in the L2 cache
_SOFTMAX_BLOCK = 1 << 18


def _softmax(xp, x, axis):
    if x.ndim == 2 and axis in (1, -1) and (xp is np or _one_kernel_rows(x)):
        return softmax_rows(xp, x, xp.empty_like(x))
    # one new array, worked on in place: these arrays are big (batch x classes)
    out = x - x.max(axis=axis, keepdims=True)
    xp.exp(out, out=out)
    out /= out.sum(axis=axis, keepdims=True)
    return out


def softmax_rows(xp, x, out, bias=None):
    """The softmax of each row of the 2-D ``x``, written into ``out`` (which may be ``x``).

    On the CPU a block of rows at a time, so that its passes (max, subtract,
    exp, sum, divide) run in the cache: the same operations, the same values.
    On a GPU, rows of up to ``cupy_row_kernels.MAX_WARP_WIDTH`` classes are
    one kernel (``cupy_row_kernels``: a thread a row of few classes, a warp a
    wider row).
    ``bias`` (one value a column) is added to ``x`` first: inside that kernel
    (the same float additions), else into ``x`` itself.
    """
    if _one_kernel_rows(x, out) and (bias is None or fusable(x, bias, contiguous=True)):
        return cupy_row_kernels.softmax_rows(xp, x, out, bias)
    if bias is not None:
        x += bias
    if x.shape[0] == 1 and x.shape[1] and xp is np:  # one row: whole-array reductions
        xp.subtract(x, x.max(), out=out)
        xp.exp(out, out=out)
        out /= out.sum()
        return out
    rows = max(1, _SOFTMAX_BLOCK // max(x.shape[1], 1)) if xp is np else x.shape[0]
    if rows >= x.shape[0]:  # one block: the whole array
        xp.subtract(x, x.max(axis=1, keepdims=True), out=out)
        xp.exp(out, out=out)
        out /= out.sum(axis=1, keepdims=True)
        return out
    for start in range(0, x.shape[0], max(rows, 1)):
        block, result = x[start : start + rows], out[start : start + rows]
        xp.subtract(block, block.max(axis=1, keepdims=True), out=result)
        xp.exp(result, out=result)
        result /= result.sum(axis=1, keepdims=True)
    return out


def _one_kernel_rows(x, out=None):
    """Whether a softmax of ``x``'s rows runs as one CuPy kernel (contiguous, not too wide)."""
    return (
        fusable(x, out, contiguous=True)
        and x.ndim == 2
        and 0 < x.shape[1] <= cupy_row_kernels.MAX_WARP_WIDTH
    )


def _softmax_output_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    check_label_dtype("SoftmaxOutput", data, inputs[1])
    wide = _wide(data)
    if p.multi_output:  # softmax over axis 1 of an (N, C, rest) view
        n, k = data.shape[0], data.shape[1]
        out = _softmax(xp, wide.reshape(n, k, -1), 1)
    elif p.preserve_shape:
        out = _softmax(xp, wide, -1)
    else:  # softmax of each row of the (N, size/N) view
        out = _softmax(xp, wide.reshape(data.shape[0], -1), 1)
    out = out.reshape(data.shape).astype(data.dtype, copy=False)
    return [out], (out, inputs[1])


def _class_gradient(xp, p, prob, classes, axis):
    """softmax minus the (smoothed) one-hot target of ``classes`` along ``axis``."""
    k = prob.shape[axis]
    if not p.smooth_alpha and prob.ndim == 2 and axis == 1:
        # the common case without a one-hot array: subtract 1 at each row's class
        grad = prob.copy()
        if fusable(grad, contiguous=True):  # one CuPy kernel, one thread per row
            cupy_nn_kernels.subtract_label_ones(xp, grad, classes)
        else:
            # a class out of range has no one-hot entry: its row subtracts 0 from
            # column 0, and nothing waits on the device to learn whether any class is such
            inside = (classes >= 0) & (classes < k)
            picked = xp.where(inside, classes, 0)
            grad[xp.arange(prob.shape[0]), picked] -= inside.astype(grad.dtype)
        if p.use_ignore:
            grad[classes == int(p.ignore_label)] = 0
        return grad
    index_shape = [1] * prob.ndim
    index_shape[axis] = k
    onehot = xp.arange(k).reshape(index_shape) == xp.expand_dims(classes, axis)
    if p.smooth_alpha:
        off = p.smooth_alpha / (k - 1) if k > 1 else 0.0
        target = xp.where(onehot, 1 - p.smooth_alpha, off)
    else:
        target = onehot
    grad = prob - target
    if p.use_ignore:
        keep = classes != int(p.ignore_label)
        grad = grad * xp.expand_dims(keep, axis)
    return grad


def _valid_count(xp, p, classes, batch):
    if p.normalization == "batch":
        return batch
    if p.normalization == "valid":
        # counts the labels that are not ignore_label, whether or not use_ignore is set
        return max(int((classes != int(p.ignore_label)).sum()), 1)
    return 1


def _softmax_output_backward(ctx, p, saved, out_grads, need_grad):
    xp, (out, label) = ctx.xp, saved
    grads = [None, None]
    if not need_grad[0]:
        return grads
    prob = _wide(out)
    if label.shape == out.shape:  # probability targets: no ignore, no normalization
        grad = (prob - _wide(label)) * p.grad_scale
    elif p.multi_output:
        n, k = out.shape[0], out.shape[1]
        prob = prob.reshape(n, k, -1)
        classes = label.reshape(n, prob.shape[2]).astype(np.int64)
        grad = _class_gradient(xp, p, prob, classes, 1)
        count = _valid_count(xp, p, classes, n)
        # without 'valid', MXNet also divides by the number of positions per sample
        positions = 1 if p.normalization == "valid" else prob.shape[2]
        grad = grad * (p.grad_scale / positions / count)
    else:
        rows = math.prod(out.shape[:-1]) if p.preserve_shape else out.shape[0]
        prob = prob.reshape(rows, -1)
        classes = label.reshape(-1).astype(np.int64)
        # MXNet reads one label per row, the first ``rows`` of the flattened
        # label, but normalizes by the whole label's size (4-D data case).
        grad = _class_gradient(xp, p, prob, classes[:rows], 1)
        scale = p.grad_scale / _valid_count(xp, p, classes, classes.size)
        if scale != 1:  # multiplying by 1 changes nothing; skip the pass over the array
            grad *= scale
    grad = grad.reshape(out.shape)
    if p.out_grad:
        # MXNet 1.9.1 wires the softmax output, not the head gradient, into the
        # backward node, so out_grad=True multiplies by the output (golden data).
        grad = grad * prob.reshape(out.shape)
    grads[0] = grad.astype(out.dtype, copy=False)
    return grads


SOFTMAX_OUTPUT = OpDef(
    name="SoftmaxOutput",
    aliases=("Softmax",),
    params=SoftmaxOutputParams,
    arguments=("data", "label"),
    infer_shape=_softmax_output_infer_shape,
    infer_type=data_led_type,
    forward=_softmax_output_forward,
    backward=_softmax_output_backward,
    is_loss=True,
    doc=(
        "Softmax forward; backward is the cross-entropy gradient softmax - onehot(label) "
        "(or - label for probability labels), scaled and normalized as configured."
    ),
)


# -- Regression outputs -------------------------------------------------------


@attrs.frozen
class RegressionParams:
    grad_scale: float = param("float", 1.0)


def _regression_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    label = in_shapes[1]
    if data is not None:
        if label is None:
            # a (N, 1) output takes a (N,) label by default
            label = (data[0],) if len(data) == 2 and data[1] == 1 else data
        elif (
            all(data)
            and all(label)
            and (label[0] != data[0] or math.prod(label) != math.prod(data))
        ):
            raise mismatch(
                "label", tuple(label), data, "label needs data's batch size and number of elements"
            )
    return [data, label], [data], aux_shapes


def _regression_op(name, transform, gradient, doc):
    def forward(ctx, p, inputs, aux):
        check_label_dtype(name, inputs[0], inputs[1])
        out = transform(ctx.xp, inputs[0])
        return [out], (out, inputs[1])

    def backward(ctx, p, saved, out_grads, need_grad):
        out, label = saved
        grads = [None, None]
        if need_grad[0]:
            # scaled by grad_scale over the number of outputs per sample
            per_sample = label.size // label.shape[0] if label.shape[0] else 1
            diff = gradient(ctx.xp, _wide(out), _wide(label).reshape(out.shape))
            grads[0] = (diff * (p.grad_scale / per_sample)).astype(out.dtype, copy=False)
        if need_grad[1]:
            grads[1] = ctx.xp.zeros_like(label)  # MXNet gives the label a zero gradient
        return grads

    return OpDef(
        name=name,
        params=RegressionParams,
        arguments=("data", "label"),
        infer_shape=_regression_infer_shape,
        infer_type=uniform_type,
        forward=forward,
        backward=backward,
        is_loss=True,
        doc=doc,
    )


def _sigmoid(xp, x):
    return (1 / (1 + xp.exp(-_wide(x)))).astype(x.dtype, copy=False)


LINEAR_REGRESSION = _regression_op(
    "LinearRegressionOutput",
    lambda xp, x: x.copy(),
    lambda xp, out, label: out - label,
    "Identity; gradient (out - label) * grad_scale / outputs per sample.",
)
LOGISTIC_REGRESSION = _regression_op(
    "LogisticRegressionOutput",
    _sigmoid,
    lambda xp, out, label: out - label,
    "Sigmoid; gradient (sigmoid(x) - label) * grad_scale / outputs per sample.",
)
MAE_REGRESSION = _regression_op(
    "MAERegressionOutput",
    lambda xp, x: x.copy(),
    # MXNet's sign here is -1 at a tie (out == label), never 0
    lambda xp, out, label: xp.where(out > label, 1.0, -1.0).astype(out.dtype),
    "Identity; gradient sign(out - label) * grad_scale / outputs per sample.",
)


# -- MakeLoss / make_loss -----------------------------------------------------


@attrs.frozen
class MakeLossParams:
    grad_scale: float = param("float", 1.0)
    valid_thresh: float = param("float", 0.0)
    normalization: str = param("str", "null", choices=NORMALIZATIONS)


def _make_loss_forward(ctx, p, inputs, aux):
    data = inputs[0]
    return [data.copy()], data


def _make_loss_backward(ctx, p, saved, out_grads, need_grad):
    xp, data = ctx.xp, saved
    if not need_grad[0]:
        return [None]
    scale = p.grad_scale
    if p.normalization == "batch":  # rows of the (prod(shape[:-1]), shape[-1]) view
        scale /= max(math.prod(data.shape[:-1]), 1)
    elif p.normalization == "valid":  # elements above valid_thresh, over the whole array
        scale /= max(int((data > p.valid_thresh).sum()), 1)
    return [xp.full(data.shape, scale, dtype=data.dtype)]


MAKE_LOSS = OpDef(
    name="MakeLoss",
    params=MakeLossParams,
    forward=_make_loss_forward,
    backward=_make_loss_backward,
    is_loss=True,
    doc="Identity whose gradient is grad_scale, normalized by batch or by valid count.",
)


def _identity_forward(ctx, p, inputs, aux):
    return [inputs[0].copy()], inputs[0]


def _ones_backward(ctx, p, saved, out_grads, need_grad):
    return [ctx.xp.ones_like(saved) if need_grad[0] else None]


MAKE_LOSS_LOWER = OpDef(
    name="make_loss",
    outputs=("loss",),
    forward=_identity_forward,
    backward=_ones_backward,
    is_loss=True,
    doc="Identity whose gradient is ones (no parameters; unlike MakeLoss).",
)

OPS = [
    SOFTMAX_OUTPUT,
    LINEAR_REGRESSION,
    LOGISTIC_REGRESSION,
    MAE_REGRESSION,
    MAKE_LOSS,
    MAKE_LOSS_LOWER,
]
