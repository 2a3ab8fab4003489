"""The benchmark's LSTM language model trained by hand in NumPy: the work itself, for reference.

One training step of ``_lstm_lm``'s model written directly: embedding
look-up, per layer one matrix product for the input projections of all time
steps and one small product per step for the recurrence, the output layer
with softmax and the cross-entropy gradient (SoftmaxOutput's, not
normalized), backpropagation through time, and MXNet's SGD update
``w -= lr * (grad / batch + wd * w)``. In-place where it is cheap; no graph,
no framework. Python 3.8 compatible (the MXNet worker may import it).
"""

import _lstm_lm as lm
import numpy as np


def _sigmoid(x, out=None):
    out = np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


class NumpyLSTM:
    """The language model's parameters and a ``step(data, label)`` that trains on one batch."""

    def __init__(self, params):
        self.params = {name: value.copy() for name, value in params.items()}
        self.last_prob = None

    def step(self, data, label):
        """Forward, backward and SGD on one ``(batch, T)`` batch; returns the softmax output."""
        p = self.params
        ids = data.astype(np.int64)
        batch, steps = ids.shape
        x = p["embed_weight"][ids]  # (N, T, C)
        caches = []
        for layer in range(lm.LAYERS):
            x, cache = self._layer_forward(layer, x)
            caches.append(cache)
        hidden = x.reshape(batch * steps, lm.HIDDEN)
        logits = np.matmul(hidden, p["pred_weight"].T)
        logits += p["pred_bias"]
        prob = _softmax_rows(logits)
        grad = prob.copy()
        grad[np.arange(grad.shape[0]), label.reshape(-1).astype(np.int64)] -= 1
        grads = {
            "pred_weight": np.matmul(grad.T, hidden),
            "pred_bias": grad.sum(axis=0),
        }
        dx = np.matmul(grad, p["pred_weight"]).reshape(batch, steps, lm.HIDDEN)
        for layer in reversed(range(lm.LAYERS)):
            dx = self._layer_backward(layer, caches[layer], dx, grads)
        embed_grad = np.zeros_like(p["embed_weight"])
        np.add.at(embed_grad, ids.reshape(-1), dx.reshape(-1, lm.EMBED))
        grads["embed_weight"] = embed_grad
        self._sgd(grads, batch)
        self.last_prob = prob
        return prob

    def _layer_forward(self, layer, x):
        p, prefix, hid = self.params, f"lstm_l{layer}_", lm.HIDDEN
        batch, steps, width = x.shape
        flat = x.reshape(batch * steps, width)
        gates_in = np.matmul(flat, p[prefix + "i2h_weight"].T)
        gates_in += p[prefix + "i2h_bias"] + p[prefix + "h2h_bias"]
        gates_in = gates_in.reshape(batch, steps, 4 * hid)
        h_weight_t = p[prefix + "h2h_weight"].T
        acts = np.empty((steps, batch, 4 * hid), dtype=np.float32)
        cells = np.empty((steps + 1, batch, hid), dtype=np.float32)
        tanh_cells = np.empty((steps, batch, hid), dtype=np.float32)
        outs = np.empty((batch, steps, hid), dtype=np.float32)
        cells[0] = 0
        h = np.zeros((batch, hid), dtype=np.float32)
        for t in range(steps):
            a = acts[t]
            np.matmul(h, h_weight_t, out=a)
            a += gates_in[:, t]
            _sigmoid(a[:, : 2 * hid], out=a[:, : 2 * hid])
            np.tanh(a[:, 2 * hid : 3 * hid], out=a[:, 2 * hid : 3 * hid])
            _sigmoid(a[:, 3 * hid :], out=a[:, 3 * hid :])
            c = cells[t + 1]
            np.multiply(a[:, hid : 2 * hid], cells[t], out=c)
            c += a[:, :hid] * a[:, 2 * hid : 3 * hid]
            np.tanh(c, out=tanh_cells[t])
            h = np.multiply(a[:, 3 * hid :], tanh_cells[t])
            outs[:, t] = h
        return outs, (flat, acts, cells, tanh_cells, outs)

    def _layer_backward(self, layer, cache, d_out, grads):
        p, prefix, hid = self.params, f"lstm_l{layer}_", lm.HIDDEN
        flat, acts, cells, tanh_cells, outs = cache
        batch, steps, _ = d_out.shape
        h_weight = p[prefix + "h2h_weight"]
        d_gates = np.empty((batch, steps, 4 * hid), dtype=np.float32)
        dh = np.zeros((batch, hid), dtype=np.float32)
        dc = np.zeros((batch, hid), dtype=np.float32)
        for t in reversed(range(steps)):
            a, dg = acts[t], d_gates[:, t]
            i, f, g, o = a[:, :hid], a[:, hid : 2 * hid], a[:, 2 * hid : 3 * hid], a[:, 3 * hid :]
            dh = dh + d_out[:, t]
            tc = tanh_cells[t]
            dc += dh * o * (1 - tc * tc)
            dg[:, 3 * hid :] = dh * tc * o * (1 - o)
            dg[:, :hid] = dc * g * i * (1 - i)
            dg[:, hid : 2 * hid] = dc * cells[t] * f * (1 - f)
            dg[:, 2 * hid : 3 * hid] = dc * i * (1 - g * g)
            dc *= f
            dh = np.matmul(dg, h_weight)
        flat_dg = d_gates.reshape(batch * steps, 4 * hid)
        prev = np.zeros_like(outs)
        prev[:, 1:] = outs[:, :-1]
        grads[prefix + "h2h_weight"] = np.matmul(flat_dg.T, prev.reshape(batch * steps, hid))
        grads[prefix + "i2h_weight"] = np.matmul(flat_dg.T, flat)
        bias = flat_dg.sum(axis=0)
        grads[prefix + "i2h_bias"], grads[prefix + "h2h_bias"] = bias, bias
        width = flat.shape[1]
        return np.matmul(flat_dg, p[prefix + "i2h_weight"]).reshape(batch, steps, width)

    def _sgd(self, grads, batch):
        rescale = 1.0 / batch
        for name, grad in grads.items():
            weight = self.params[name]
            grad = grad * rescale
            if lm.WEIGHT_DECAY:
                grad += lm.WEIGHT_DECAY * weight
            weight -= lm.LEARNING_RATE * grad


def _softmax_rows(logits):
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    return logits
