"""The benchmark models written directly in NumPy: the yardstick for rebind's executor.

Each ``*_step(arrays)`` runs forward and backward of exactly the computation
the executor runs (float32, SoftmaxOutput's gradient softmax - onehot with no
normalization, gradients of the parameters only) and returns the softmax
output and the gradients by parameter name. The code is what a careful NumPy
programmer writes: BLAS for every product, in-place element-wise updates where
the value is not needed again, and for the CNN channels-last (NHWC) activations,
im2col as one copy of a sliding-window view (patches in (row, column, channel)
order, so the copy moves runs of channels) + one matmul, col2im as one strided
add per kernel position, and 2x2 max pooling on four strided views.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _softmax_grad(logits, label):
    """Softmax of each row (in place) and SoftmaxOutput's gradient (a new array)."""
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    grad = logits.copy()
    grad[np.arange(grad.shape[0]), label] -= 1
    return logits, grad


def mlp_step(a):
    x, label = a["data"], a["softmax_label"].astype(np.intp)
    w1, w2, w3 = a["fc1_weight"], a["fc2_weight"], a["fc3_weight"]
    h1 = x @ w1.T
    h1 += a["fc1_bias"]
    np.maximum(h1, 0, out=h1)
    h2 = h1 @ w2.T
    h2 += a["fc2_bias"]
    np.maximum(h2, 0, out=h2)
    logits = h2 @ w3.T
    logits += a["fc3_bias"]
    prob, g3 = _softmax_grad(logits, label)
    grads = {"fc3_weight": g3.T @ h2, "fc3_bias": g3.sum(axis=0)}
    g2 = g3 @ w3
    g2 *= h2 > 0
    grads["fc2_weight"], grads["fc2_bias"] = g2.T @ h1, g2.sum(axis=0)
    g1 = g2 @ w2
    g1 *= h1 > 0
    grads["fc1_weight"], grads["fc1_bias"] = g1.T @ x, g1.sum(axis=0)
    return prob, grads


# -- LeNet ---------------------------------------------------------------------------------


def _im2col(x, k):
    """(N, H, W, C) -> (N * OH * OW, k * k * C) columns, each row a patch in (i, j, c) order."""
    windows = sliding_window_view(x, (k, k), axis=(1, 2))  # (N, OH, OW, C, k, k) view
    n, oh, ow = windows.shape[:3]
    return windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * oh * ow, -1), (n, oh, ow)


def _col2im(dcols, shape, k, xp=np):
    """The adjoint of ``_im2col``: (N*OH*OW, k*k*C) columns summed into (N, H, W, C).

    ``xp`` is the array module (the CuPy floor in ``_gpu_floor`` shares this).
    """
    n, h, w, c = shape
    oh, ow = h - k + 1, w - k + 1
    dcols = dcols.reshape(n, oh, ow, k, k, c)
    dx = xp.zeros(shape, dtype=dcols.dtype)
    for i in range(k):
        for j in range(k):
            dx[:, i : i + oh, j : j + ow, :] += dcols[:, :, :, i, j, :]
    return dx


def _weight_matrix(weight):
    """(F, C, k, k) -> (F, k * k * C), matching the patch order of ``_im2col``."""
    return weight.transpose(0, 2, 3, 1).reshape(weight.shape[0], -1)


def _conv_forward(x, weight, bias):
    """Valid 2-D convolution, stride 1, in NHWC; returns the output and the columns."""
    cols, (n, oh, ow) = _im2col(x, weight.shape[-1])
    out = cols @ _weight_matrix(weight).T
    out += bias
    return out.reshape(n, oh, ow, -1), cols


def _conv_backward(grad, cols, weight, x_shape=None):
    """Gradients of weight, bias and (when ``x_shape`` is given) data, from NHWC ``grad``."""
    f, c, k, _ = weight.shape
    gmat = grad.reshape(-1, f)
    dw = (gmat.T @ cols).reshape(f, k, k, c).transpose(0, 3, 1, 2)
    db = gmat.sum(axis=0)
    dx = None if x_shape is None else _col2im(gmat @ _weight_matrix(weight), x_shape, k)
    return dw, db, dx


_CORNERS = ((0, 0), (0, 1), (1, 0), (1, 1))


def _pool_forward(x):
    """2x2 max pooling, stride 2, NHWC (even sizes): the maximum of four strided views."""
    a, b, c, d = (x[:, i::2, j::2] for i, j in _CORNERS)
    return np.maximum(np.maximum(a, b), np.maximum(c, d))


def _pool_backward(grad, x, out):
    """Each window's gradient to its maximum (the data has no ties)."""
    dx = np.empty_like(x)
    for i, j in _CORNERS:
        np.multiply(x[:, i::2, j::2] == out, grad, out=dx[:, i::2, j::2])
    return dx


def lenet_step(a):
    label = a["softmax_label"].astype(np.intp)
    x = a["data"].transpose(0, 2, 3, 1)  # NHWC; a free view for one channel
    c1, cols1 = _conv_forward(x, a["conv1_weight"], a["conv1_bias"])
    t1 = np.tanh(c1, out=c1)
    p1 = _pool_forward(t1)
    c2, cols2 = _conv_forward(p1, a["conv2_weight"], a["conv2_bias"])
    t2 = np.tanh(c2, out=c2)
    p2 = _pool_forward(t2)
    flat = p2.transpose(0, 3, 1, 2).reshape(p2.shape[0], -1)  # MXNet flattens NCHW
    f1 = flat @ a["fc1_weight"].T
    f1 += a["fc1_bias"]
    t3 = np.tanh(f1, out=f1)
    logits = t3 @ a["fc2_weight"].T
    logits += a["fc2_bias"]
    prob, g = _softmax_grad(logits, label)

    grads = {"fc2_weight": g.T @ t3, "fc2_bias": g.sum(axis=0)}
    g = g @ a["fc2_weight"]
    g *= 1 - t3 * t3
    grads["fc1_weight"], grads["fc1_bias"] = g.T @ flat, g.sum(axis=0)
    g = (g @ a["fc1_weight"]).reshape(p2.shape[0], p2.shape[3], p2.shape[1], p2.shape[2])
    g = _pool_backward(g.transpose(0, 2, 3, 1), t2, p2)
    g *= 1 - t2 * t2
    dw, db, g = _conv_backward(g, cols2, a["conv2_weight"], p1.shape)
    grads["conv2_weight"], grads["conv2_bias"] = dw, db
    g = _pool_backward(g, t1, p1)
    g *= 1 - t1 * t1
    grads["conv1_weight"], grads["conv1_bias"], _ = _conv_backward(g, cols1, a["conv1_weight"])
    return prob, grads


STEPS = {"mlp": mlp_step, "mlp_small": mlp_step, "lenet": lenet_step}
