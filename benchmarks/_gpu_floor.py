"""Worker of ``benchmarks/gpu.py``: the training loop written bare against an array module.

    python benchmarks/_gpu_floor.py MODEL DEVICE SIZE BATCHES EPOCHS

(see ``_gpu_models``). ``xp`` is CuPy on the GPU, NumPy on the CPU; no
framework, no graph: per batch the host NumPy slice is copied to the device
(``xp.asarray``), forward, SoftmaxOutput's gradient (softmax - onehot), backward
to the parameters, MXNet's SGD update in its order of operations (with
momentum: ``mom = momentum * mom - lr * wd * w - lr * rescale * g; w += mom``;
the LSTM without momentum: ``w -= lr * wd * w + lr * rescale * g``, rescale =
1/batch; as Module's optimizer, weight decay for the ``*_weight`` parameters
only, not the biases), and the accuracy counted on the device and read back once (one
synchronisation per batch, as a Module's metric). The steps follow
``_numpy_reference`` (MLP, LeNet: NHWC im2col + matmul) and ``_numpy_lstm``
(the LSTM: one product for the input projections of all steps, one per step
for the recurrence), written here once more for any ``xp``. This is what the
arithmetic costs without a framework: the floor rebind is measured against.
"""

import importlib
import sys
import time

import _common

_common.configure_threads()

import _gpu_models as models  # noqa: E402
import _lstm_lm as lm  # noqa: E402
import numpy as np  # noqa: E402
from _numpy_reference import _col2im, _weight_matrix  # noqa: E402  (NumPy's, xp-generic)

F32 = np.float32


def softmax_grad(xp, logits, label):
    """Softmax of each row (in place) and SoftmaxOutput's gradient (a new array)."""
    logits -= logits.max(axis=1, keepdims=True)
    xp.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    grad = logits.copy()
    grad[xp.arange(grad.shape[0]), label] -= 1
    return logits, grad


def mlp_step(xp, p, x, label):
    """Forward and backward of the relu MLP ``fc1``..``fcL``: (softmax output, gradients)."""
    layers = sum(1 for name in p if name.endswith("_weight"))
    inputs, h = [], x
    for index in range(1, layers + 1):
        inputs.append(h)
        h = h @ p[f"fc{index}_weight"].T
        h += p[f"fc{index}_bias"]
        if index < layers:
            xp.maximum(h, 0, out=h)
    prob, g = softmax_grad(xp, h, label)
    grads = {}
    for index in range(layers, 0, -1):
        below = inputs[index - 1]
        grads[f"fc{index}_weight"], grads[f"fc{index}_bias"] = g.T @ below, g.sum(axis=0)
        if index > 1:
            g = g @ p[f"fc{index}_weight"]
            g *= below > 0
    return prob, grads


# -- LeNet (NHWC activations, im2col as one copy of a strided view) ------------------------


def _im2col(xp, x, k):
    """(N, H, W, C) -> (N * OH * OW, k * k * C) patches in (row, column, channel) order."""
    n, h, w, c = x.shape
    oh, ow = h - k + 1, w - k + 1
    sn, sh, sw, sc = x.strides
    tricks = importlib.import_module(xp.__name__ + ".lib.stride_tricks")
    windows = tricks.as_strided(x, (n, oh, ow, k, k, c), (sn, sh, sw, sh, sw, sc))
    return windows.reshape(n * oh * ow, k * k * c), (n, oh, ow)


def _conv(xp, x, weight, bias):
    cols, (n, oh, ow) = _im2col(xp, x, weight.shape[-1])
    out = cols @ _weight_matrix(weight).T
    out += bias
    return out.reshape(n, oh, ow, -1), cols


def _conv_backward(xp, grad, cols, weight, x_shape=None):
    f, c, k, _ = weight.shape
    gmat = grad.reshape(-1, f)
    dw = (gmat.T @ cols).reshape(f, k, k, c).transpose(0, 3, 1, 2)
    dx = None if x_shape is None else _col2im(gmat @ _weight_matrix(weight), x_shape, k, xp)
    return dw, gmat.sum(axis=0), dx


_CORNERS = ((0, 0), (0, 1), (1, 0), (1, 1))


def _pool(xp, x):
    a, b, c, d = (x[:, i::2, j::2] for i, j in _CORNERS)
    return xp.maximum(xp.maximum(a, b), xp.maximum(c, d))


def _pool_backward(xp, grad, x, out):
    dx = xp.empty_like(x)
    for i, j in _CORNERS:
        xp.multiply(x[:, i::2, j::2] == out, grad, out=dx[:, i::2, j::2])
    return dx


def lenet_step(xp, p, data, label):
    x = xp.ascontiguousarray(data.transpose(0, 2, 3, 1))
    c1, cols1 = _conv(xp, x, p["conv1_weight"], p["conv1_bias"])
    t1 = xp.tanh(c1, out=c1)
    p1 = _pool(xp, t1)
    c2, cols2 = _conv(xp, p1, p["conv2_weight"], p["conv2_bias"])
    t2 = xp.tanh(c2, out=c2)
    p2 = _pool(xp, t2)
    flat = p2.transpose(0, 3, 1, 2).reshape(p2.shape[0], -1)  # MXNet flattens NCHW
    f1 = flat @ p["fc1_weight"].T
    f1 += p["fc1_bias"]
    t3 = xp.tanh(f1, out=f1)
    logits = t3 @ p["fc2_weight"].T
    logits += p["fc2_bias"]
    prob, g = softmax_grad(xp, logits, label)
    grads = {"fc2_weight": g.T @ t3, "fc2_bias": g.sum(axis=0)}
    g = g @ p["fc2_weight"]
    g *= 1 - t3 * t3
    grads["fc1_weight"], grads["fc1_bias"] = g.T @ flat, g.sum(axis=0)
    n, ph, pw, pc = p2.shape
    g = (g @ p["fc1_weight"]).reshape(n, pc, ph, pw).transpose(0, 2, 3, 1)
    g = _pool_backward(xp, g, t2, p2)
    g *= 1 - t2 * t2
    grads["conv2_weight"], grads["conv2_bias"], g = _conv_backward(
        xp, g, cols2, p["conv2_weight"], p1.shape
    )
    g = _pool_backward(xp, g, t1, p1)
    g *= 1 - t1 * t1
    grads["conv1_weight"], grads["conv1_bias"], _ = _conv_backward(xp, g, cols1, p["conv1_weight"])
    return prob, grads


# -- the LSTM language model ---------------------------------------------------------------


def _sigmoid(xp, x):
    xp.negative(x, out=x)
    xp.exp(x, out=x)
    x += 1
    return xp.reciprocal(x, out=x)


def _lstm_forward(xp, p, prefix, x):
    """One layer over (N, T, C) inputs; its (N, T, H) outputs and what backward needs."""
    hid, (n, steps, width) = lm.HIDDEN, x.shape
    flat = x.reshape(n * steps, width)
    projected = (flat @ p[prefix + "i2h_weight"].T).reshape(n, steps, 4 * hid)
    projected += p[prefix + "i2h_bias"] + p[prefix + "h2h_bias"]
    gates = xp.empty((steps, n, 4 * hid), dtype=xp.float32)
    cells = xp.zeros((steps + 1, n, hid), dtype=xp.float32)
    tanh_cells = xp.empty((steps, n, hid), dtype=xp.float32)
    outs = xp.zeros((n, steps, hid), dtype=xp.float32)
    h = xp.zeros((n, hid), dtype=xp.float32)
    for t in range(steps):
        a = gates[t]
        xp.matmul(h, p[prefix + "h2h_weight"].T, out=a)
        a += projected[:, t]
        _sigmoid(xp, a[:, : 2 * hid])
        xp.tanh(a[:, 2 * hid : 3 * hid], out=a[:, 2 * hid : 3 * hid])
        _sigmoid(xp, a[:, 3 * hid :])
        xp.multiply(a[:, hid : 2 * hid], cells[t], out=cells[t + 1])
        cells[t + 1] += a[:, :hid] * a[:, 2 * hid : 3 * hid]
        xp.tanh(cells[t + 1], out=tanh_cells[t])
        h = a[:, 3 * hid :] * tanh_cells[t]
        outs[:, t] = h
    return outs, (flat, gates, cells, tanh_cells, outs)


def _lstm_backward(xp, p, prefix, cache, d_out, grads):
    """Backpropagation through time of one layer; the gradient of its inputs."""
    flat, gates, cells, tanh_cells, outs = cache
    hid, (n, steps, _) = lm.HIDDEN, d_out.shape
    d_gates = xp.empty((n, steps, 4 * hid), dtype=xp.float32)
    dh = xp.zeros((n, hid), dtype=xp.float32)
    dc = xp.zeros((n, hid), dtype=xp.float32)
    for t in reversed(range(steps)):
        a, dg, tc = gates[t], d_gates[:, t], tanh_cells[t]
        i, f, g, o = (a[:, k * hid : (k + 1) * hid] for k in range(4))
        dh += d_out[:, t]
        dc += dh * o * (1 - tc * tc)
        dg[:, 3 * hid :] = dh * tc * o * (1 - o)
        dg[:, :hid] = dc * g * i * (1 - i)
        dg[:, hid : 2 * hid] = dc * cells[t] * f * (1 - f)
        dg[:, 2 * hid : 3 * hid] = dc * i * (1 - g * g)
        dc *= f
        dh = dg @ p[prefix + "h2h_weight"]
    flat_dg = d_gates.reshape(n * steps, 4 * hid)
    previous = xp.zeros_like(outs)
    previous[:, 1:] = outs[:, :-1]
    grads[prefix + "h2h_weight"] = flat_dg.T @ previous.reshape(n * steps, hid)
    grads[prefix + "i2h_weight"] = flat_dg.T @ flat
    grads[prefix + "i2h_bias"] = grads[prefix + "h2h_bias"] = flat_dg.sum(axis=0)
    return (flat_dg @ p[prefix + "i2h_weight"]).reshape(n, steps, flat.shape[1])


def lstm_step(xp, p, data, label):
    ids = data.astype(xp.int64)
    n, steps = ids.shape
    x, caches = p["embed_weight"][ids], []
    for layer in range(lm.LAYERS):
        x, cache = _lstm_forward(xp, p, f"lstm_l{layer}_", x)
        caches.append(cache)
    hidden = x.reshape(n * steps, lm.HIDDEN)
    logits = hidden @ p["pred_weight"].T
    logits += p["pred_bias"]
    prob, g = softmax_grad(xp, logits, label.reshape(-1))
    grads = {"pred_weight": g.T @ hidden, "pred_bias": g.sum(axis=0)}
    dx = (g @ p["pred_weight"]).reshape(n, steps, lm.HIDDEN)
    for layer in reversed(range(lm.LAYERS)):
        dx = _lstm_backward(xp, p, f"lstm_l{layer}_", caches[layer], dx, grads)
    embed = xp.zeros_like(p["embed_weight"])
    rows, values = ids.reshape(-1), dx.reshape(-1, lm.EMBED)
    if hasattr(xp.add, "at"):
        xp.add.at(embed, rows, values)
    else:  # a CuPy without ufunc.at
        importlib.import_module("cupyx").scatter_add(embed, rows, values)
    grads["embed_weight"] = embed
    return prob, grads


STEPS = {"mlp": mlp_step, "mlp4096": mlp_step, "lenet": lenet_step, "lstm": lstm_step}


# -- SGD in MXNet's order of operations ------------------------------------------------------


def sgd(xp, weight, grad, mom, scratch, lr, wd, momentum, rescale):
    """MXNet's sgd_mom_update (``mom`` given) or sgd_update, in place (no decay when wd is 0)."""
    target = weight if mom is None else mom
    if mom is not None:
        mom *= F32(momentum)
    if wd:
        xp.multiply(weight, F32(lr) * F32(wd), out=scratch)
        target -= scratch
    xp.multiply(grad, F32(lr) * F32(rescale), out=scratch)
    target -= scratch
    if mom is not None:
        weight += mom


def fit(model, device, size, batches, epochs):
    """Train 1 + ``epochs`` epochs; samples/s of each epoch after the first."""
    xp = models.array_module(device)
    batch, opt = models.BATCH[model], models.optimizer_params(model)
    data, labels = models.dataset(model, batches, size)
    params = {name: xp.asarray(value) for name, value in models.initial_params(model, size).items()}
    moms = {name: xp.zeros_like(value) for name, value in params.items()}
    if not opt["momentum"]:
        moms = dict.fromkeys(params)
    scratch = {name: xp.empty_like(value) for name, value in params.items()}
    step, stamps, started = STEPS[model], [], time.perf_counter()
    for _ in range(1 + epochs):
        correct = seen = 0
        for start in range(0, batches * batch, batch):
            x = xp.asarray(data[start : start + batch])
            label = xp.asarray(labels[start : start + batch]).astype(xp.int64)
            prob, grads = step(xp, params, x, label)
            for name, grad in grads.items():
                sgd(
                    xp,
                    params[name],
                    grad,
                    moms[name],
                    scratch[name],
                    opt["learning_rate"],
                    opt["wd"] if name.endswith("_weight") else 0.0,
                    opt["momentum"],
                    1.0 / batch,
                )
            correct += int(xp.count_nonzero(prob.argmax(axis=1) == label.reshape(-1)))
            seen += label.size
        stamps.append(time.perf_counter())
    result = models.summary(batches * batch, stamps, correct, seen, params.values())
    result["warmup_s"] = stamps[0] - started
    result["transfer"] = "xp.asarray of each host NumPy batch (pageable)"
    if device == "gpu":
        result.update(models.cupy_pool())
    return result


def main(argv):
    model, device, size, batches, epochs = models.parse_job(argv)
    result = fit(model, device, size, batches, epochs)
    xp = models.array_module(device)
    result["version"] = f"bare {xp.__name__} {xp.__version__} loop"
    models.print_result(result)


if __name__ == "__main__":
    main(sys.argv[1:])
