"""CuPy kernels of the activations: forward and backward in one launch each.

CuPy's array operations make a sigmoid four kernels (negate, exp, add,
divide) and an activation's gradient two or three (the local slope, then the
product) with temporaries in between. These kernels do the same float
operations, in the CPU kernels' order (``rebind.ops.nn``), in one pass:

- forward ``relu``, ``sigmoid``, ``tanh``, into a new array or over the input
  (an in-place activation, see ``OpContext.inplace``);
- backward of the same three from the output: ``grad * (out > 0)``,
  ``grad * (out * (1 - out))``, ``grad * (1 - out * out)``, into a new array or
  into the gradient received (``OpContext.grad_inplace``).

- BatchNorm's normalisation ``xhat = centered * invstd`` with its affine
  output ``xhat * gamma + beta``, and its input gradient
  ``factor * ((grad - mean(grad)) - xhat * mean(grad * xhat))``, each one
  pass (the per-channel vectors broadcast; the means stay CuPy reductions);
- SoftmaxOutput's gradient ``prob - onehot(label)``: one less at each row's
  label, in place, the changed values kept so they can be put back (the fused
  FullyConnected + SoftmaxOutput step changes its output for its backward),
  one thread per row;
- Dropout's forward from its uniform draws: the mask (``scale`` where the
  draw is below ``keep``, else 0) and the output ``x * mask`` in one pass.
- a FullyConnected's bias with the activation after it (``fused_dense``):
  forward ``act(x + bias)`` over the product in place, the bias added as
  the FullyConnected adds it; backward one thread per column walking down
  the rows, each product ``grad * slope`` written and summed into the bias's
  gradient in the rows' order (``cupy_row_kernels.column_sums``' order).

The GPU's ``exp`` and ``tanh`` are CUDA's, so values match the CPU's to float
rounding, not bit for bit. Importing this module does not import CuPy.
"""

from .cupy_kernels import _kernel

__all__ = [
    "FUSED_ACTIVATIONS",
    "activation_backward",
    "activation_backward_with_bias_sums",
    "activation_forward",
    "bias_activation_forward",
    "batchnorm_input_grad",
    "batchnorm_normalize",
    "dropout_forward",
    "restore_label_scores",
    "subtract_label_ones",
]

FUSED_ACTIVATIONS = ("relu", "sigmoid", "tanh")

_FORWARD = {
    # NumPy's maximum(x, 0): x where x > 0 or x is NaN, else 0 (so -0 becomes +0)
    "relu": "y = (x > T(0) || x != x) ? x : T(0);",
    "sigmoid": "y = T(1) / (T(1) + exp(-x));",
    "tanh": "y = tanh(x);",
}

_SLOPE = {
    "relu": "(y > T(0) ? T(1) : T(0))",
    "sigmoid": "(y * (T(1) - y))",
    "tanh": "(T(1) - y * y)",
}


def activation_forward(cupy, act_type, x, inplace):
    """``act_type`` of ``x`` (a CuPy float array): over ``x`` itself when ``inplace``."""
    kernel = _kernel(cupy, f"rebind_{act_type}", "T x", "T y", _FORWARD[act_type])
    return kernel(x, x) if inplace else kernel(x)


def activation_backward(cupy, act_type, out, grad, inplace):
    """The input's gradient from the output ``out`` and its gradient ``grad``.

    With ``inplace`` the product is written over ``grad`` (same shape and dtype).
    """
    body = f"dx = g * {_SLOPE[act_type]};"
    kernel = _kernel(cupy, f"rebind_{act_type}_grad", "T y, T g", "T dx", body)
    return kernel(out, grad, grad) if inplace else kernel(out, grad)


def bias_activation_forward(cupy, act_type, x, bias):
    """``act_type(x + bias)`` over the C-contiguous 2-D ``x`` itself (``bias``: a column's)."""
    body = f"const T x = pre + bias[i % width]; {_FORWARD[act_type]}"
    kernel = _kernel(cupy, f"rebind_bias_{act_type}", "T pre, raw T bias, int64 width", "T y", body)
    return kernel(x, bias, x.shape[1], x)


_BIAS_SUMS_BODY = """
    T total = T(0);
    for (long long r = 0; r < rows; ++r) {
        const long long k = r * width + i;
        const T y = outs[k];
        const T g = grads[k] * __SLOPE__;
        d_pre[k] = g;
        total = total + g;
    }
    d_bias = total;
"""


def activation_backward_with_bias_sums(cupy, act_type, out, grad, d_pre):
    """The activation's input gradient into ``d_pre``, and the bias's gradient returned.

    One thread per column of the C-contiguous 2-D ``out``, ``grad`` and ``d_pre``
    (``d_pre`` may be ``grad``): ``grad * slope(out)`` row by row, written and
    added up in the rows' order.
    """
    rows, width = out.shape
    kernel = _kernel(
        cupy,
        f"rebind_{act_type}_grad_bias_sums",
        "raw T outs, raw T grads, int64 rows, int64 width",
        "raw T d_pre, T d_bias",
        _BIAS_SUMS_BODY.replace("__SLOPE__", _SLOPE[act_type]),
    )
    d_bias = cupy.empty(width, dtype=out.dtype)
    kernel(out, grad, rows, width, d_pre, d_bias)
    return d_bias


# name -> (inputs, outputs, body) of the kernels below run through _run
_SPECS = {
    "dropout": (
        "T x, float32 draw, float32 keep, T scale",
        "T y, T mask",
        "mask = draw < keep ? T(1) * scale : T(0) * scale; y = x * mask;",
    ),
    "batchnorm_normalize": (
        "T centered, T invstd, T scale, T beta",
        "T xhat, T y",
        "xhat = centered * invstd; y = xhat * scale + beta;",
    ),
    "batchnorm_input_grad": (
        "T grad, T xhat, T mean_grad, T mean_grad_xhat, T factor",
        "T dx",
        "dx = factor * ((grad - mean_grad) - xhat * mean_grad_xhat);",
    ),
}


def _run(cupy, name, *args):
    in_params, out_params, body = _SPECS[name]
    return _kernel(cupy, f"rebind_{name}", in_params, out_params, body)(*args)


def dropout_forward(cupy, x, draws, keep, scale):
    """``(x * mask, mask)`` with ``mask = (draws < keep) * scale`` (draws: float32, x's shape)."""
    return _run(cupy, "dropout", x, draws, keep, scale)


def batchnorm_normalize(cupy, centered, invstd, scale, beta):
    """``(xhat, xhat * scale + beta)`` with ``xhat = centered * invstd`` (vectors broadcast)."""
    return _run(cupy, "batchnorm_normalize", centered, invstd, scale, beta)


def batchnorm_input_grad(cupy, grad, xhat, mean_grad, mean_grad_xhat, factor):
    """``factor * ((grad - mean_grad) - xhat * mean_grad_xhat)``, the means broadcast."""
    return _run(cupy, "batchnorm_input_grad", grad, xhat, mean_grad, mean_grad_xhat, factor)


# a row's class: its label truncated toward zero, as astype(int64) does; a label that
# is NaN or outside [0, width) after truncation has no one-hot entry
_LABEL_COLUMN = """
    const double lab = (double)label[i];
    const bool inside = lab > -1.0 && lab < (double)width;
    const long long at = inside ? i * width + (long long)lab : 0;
"""


# mode 0: subtract 1 at the label; 1: the same, keeping the old values; 2: put them back
_LABEL_SCORES_BODY = (
    _LABEL_COLUMN
    + """
    if (inside) {
        if (mode == 2) {
            prob[at] = kept[i];
        } else {
            if (mode == 1) {
                kept[i] = prob[at];
            }
            prob[at] = prob[at] - T(1);
        }
    }
"""
)


def _label_scores(cupy, prob, label, kept, mode):
    rows, width = prob.shape
    label = cupy.ascontiguousarray(label.reshape(-1)[:rows])
    kernel = _kernel(
        cupy,
        "rebind_label_scores",
        "raw L label, int64 width, int32 mode",
        "raw T prob, raw T kept",
        _LABEL_SCORES_BODY,
    )
    if kept is None:  # mode 0 never touches it; a separate array, not an alias of prob
        kept = cupy.empty(1, dtype=prob.dtype)
    kernel(label, width, mode, prob, kept, size=rows)


def subtract_label_ones(cupy, prob, label, keep=None):
    """``prob[r, label[r]] -= 1`` for each row ``r`` of the C-contiguous 2-D ``prob``.

    ``label`` holds at least one label per row (its first ``rows`` are read).
    With ``keep`` (a new array of one value per row) the values before the
    change are written there, for ``restore_label_scores``.
    """
    _label_scores(cupy, prob, label, keep, 0 if keep is None else 1)


def restore_label_scores(cupy, prob, label, kept):
    """Put back the values ``subtract_label_ones`` kept."""
    _label_scores(cupy, prob, label, kept, 2)
