"""CuPy kernels the GPU backend uses where CuPy's own operations fall short.

``ordered_scatter_add``: ``target[rows[i]] += values[i]`` with the additions of
each row in ascending ``i``, as ``numpy.add.at`` makes them. CuPy's ``add.at``
adds with atomics, in whatever order the threads arrive, so float sums change
from run to run in their last bits (the gradient of Embedding and take, and so
a resumed fit, were not reproducible on the GPU). Here the indices are sorted
stably (CuPy's argsort is stable), and one thread per (row, column) adds its
row's values in that order: the same sum as NumPy's, bit for bit, every run,
with no host synchronisation.

``sgd_step`` and ``adam_step``: the update rules of ``rebind.optimizer.rules``
as one fused kernel each, reading and writing every array once, where CuPy's
operations would make several passes and temporaries (SGD with momentum: 4
kernels and 2 temporaries). The operations are the rules', in their order; the
GPU compiler may contract a product and a sum into one fused multiply-add, so
results can differ from the CPU's in the last bit.

Kernels are compiled on first use; importing this module does not import CuPy.
"""

__all__ = [
    "adam_step",
    "is_cupy_array",
    "lstm_cell_backward",
    "lstm_cell_forward",
    "gru_step_backward",
    "gru_step_forward",
    "lstm_step_backward",
    "lstm_step_forward",
    "ordered_scatter_add",
    "sgd_step",
]

_KERNELS = {}

# the body runs inside CuPy's grid-stride loop over i: no early return, a thread may
# handle several positions
_SEGMENT_ADD_BODY = """
    const long long j = i / width;
    const long long col = i % width;
    const long long row = sorted_rows[j];
    if (j == 0 || sorted_rows[j - 1] != row) {  // the first of its row adds the whole run
        T acc = target[row * width + col];
        for (long long k = j; k < count && sorted_rows[k] == row; ++k) {
            acc += values[order[k] * width + col];
        }
        target[row * width + col] = acc;
    }
"""


def _segment_add(cupy):
    kernel = _KERNELS.get("segment_add")
    if kernel is None:
        kernel = _KERNELS["segment_add"] = cupy.ElementwiseKernel(
            "raw T values, raw int64 order, raw int64 sorted_rows, int64 count, int64 width",
            "raw T target",
            _SEGMENT_ADD_BODY,
            "rebind_ordered_segment_add",
        )
    return kernel


def ordered_scatter_add(cupy, target, rows, values):
    """``target[rows[i]] += values[i]`` along the first axis, in NumPy's order (see above).

    ``target`` is a C-contiguous CuPy array changed in place; ``rows`` holds
    ``n`` row indices (any shape, non-negative); ``values`` holds ``n`` slices
    of ``target[0]``'s shape (or broadcasts to them).
    """
    if not target.flags.c_contiguous:
        raise ValueError("ordered_scatter_add: target must be C-contiguous (it is written)")
    rows = rows.reshape(-1).astype(cupy.int64, copy=False)
    n = rows.size
    if n == 0:
        return
    width = target.size // target.shape[0] if target.shape[0] else 0
    rest = target.shape[1:]
    if values.size == n * width:  # one slice per index, in the indices' shape
        values = values.reshape(n, *rest)
    else:  # a scalar or a slice broadcast to every index
        values = cupy.broadcast_to(values, (n, *rest))
    values = cupy.ascontiguousarray(values.astype(target.dtype, copy=False)).reshape(n, width)
    order = cupy.argsort(rows).astype(cupy.int64, copy=False)
    sorted_rows = rows[order]
    _segment_add(cupy)(values, order, sorted_rows, n, width, target, size=n * width)


def is_cupy_array(array):
    """Whether ``array`` is a CuPy array (checked without importing CuPy)."""
    return type(array).__module__.startswith("cupy")


def _kernel(cupy, name, in_params, out_params, body):
    kernel = _KERNELS.get(name)
    if kernel is None:
        kernel = _KERNELS[name] = cupy.ElementwiseKernel(in_params, out_params, body, name)
    return kernel


_SGD_MOMENTUM_BODY = """
    T step = mom * momentum;
    if (decay != T(0)) {
        step = step - decay * weight;
    }
    step = step - rate * grad;
    mom = step;
    weight = weight + step;
"""

_SGD_BODY = """
    T w = weight;
    if (decay != T(0)) {
        w = w * (T(1) - decay);
    }
    weight = w - rate * grad;
"""


def sgd_step(cupy, weight, grad, mom, decay, rate, momentum):
    """``rules.sgd_step`` in one kernel; scalars already in the weight's dtype."""
    if mom is None:
        kernel = _kernel(cupy, "rebind_sgd", "T grad, T decay, T rate", "T weight", _SGD_BODY)
        kernel(grad, decay, rate, weight)
        return
    kernel = _kernel(
        cupy,
        "rebind_sgd_momentum",
        "T grad, T momentum, T decay, T rate",
        "T weight, T mom",
        _SGD_MOMENTUM_BODY,
    )
    kernel(grad, momentum, decay, rate, weight, mom)


_ADAM_BODY = """
    const T one = T(1);
    T m = mean * beta1;
    m = m + (one - beta1) * grad;
    T v = var * beta2;
    v = v + (one - beta2) * grad * grad;
    mean = m;
    var = v;
    weight = weight - lr * m / (sqrt(v) + epsilon);
"""


def adam_step(cupy, weight, grad, mean, var, lr, beta1, beta2, epsilon):
    """``rules.adam_step`` in one kernel; scalars already in the weight's dtype."""
    kernel = _kernel(
        cupy,
        "rebind_adam",
        "T grad, T lr, T beta1, T beta2, T epsilon",
        "T weight, T mean, T var",
        _ADAM_BODY,
    )
    kernel(grad, lr, beta1, beta2, epsilon, weight, mean, var)


# -- the LSTM cell (rebind.executor.fused_lstm) ------------------------------------------
# One thread per (row, unit): the four gate pre-activations of a unit sit H apart in
# a row of 4H; what backward needs (i, f, g, o, tanh(c)) is kept as a row of 5H.

_LSTM_FORWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long gates = row * 4 * H + j;
    const T a = i2h[gates] + h2h[gates];
    const T b = i2h[gates + H] + h2h[gates + H];
    const T z = i2h[gates + 2 * H] + h2h[gates + 2 * H];
    const T d = i2h[gates + 3 * H] + h2h[gates + 3 * H];
    const T in_gate = T(1) / (T(1) + exp(-a));
    const T forget_gate = T(1) / (T(1) + exp(-b));
    const T transform = tanh(z);
    const T out_gate = T(1) / (T(1) + exp(-d));
    const T state = forget_gate * c_prev[i] + in_gate * transform;
    const T squashed = tanh(state);
    c[i] = state;
    h[i] = out_gate * squashed;
    const long long kept = row * 5 * H + j;
    saved[kept] = in_gate;
    saved[kept + H] = forget_gate;
    saved[kept + 2 * H] = transform;
    saved[kept + 3 * H] = out_gate;
    saved[kept + 4 * H] = squashed;
"""

_LSTM_BACKWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long kept = row * 5 * H + j;
    const T in_gate = saved[kept];
    const T forget_gate = saved[kept + H];
    const T transform = saved[kept + 2 * H];
    const T out_gate = saved[kept + 3 * H];
    const T squashed = saved[kept + 4 * H];
    const T d_out = dh[i];
    const T d_state = dc[i] + (d_out * out_gate) * (T(1) - squashed * squashed);
    d_c_prev[i] = d_state * forget_gate;
    const long long gates = row * 4 * H + j;
    d_gates[gates] = (d_state * transform) * (in_gate * (T(1) - in_gate));
    d_gates[gates + H] = (d_state * c_prev[i]) * (forget_gate * (T(1) - forget_gate));
    d_gates[gates + 2 * H] = (d_state * in_gate) * (T(1) - transform * transform);
    d_gates[gates + 3 * H] = (d_out * squashed) * (out_gate * (T(1) - out_gate));
"""


def lstm_cell_forward(cupy, i2h, h2h, c_prev):
    """``(c, h, saved)`` of an LSTM cell from its projections ``(N, 4H)`` and ``c_prev``."""
    i2h, h2h, c_prev = (cupy.ascontiguousarray(a) for a in (i2h, h2h, c_prev))
    rows, hidden = c_prev.shape
    c, h = cupy.empty_like(c_prev), cupy.empty_like(c_prev)
    saved = cupy.empty((rows, 5 * hidden), dtype=c_prev.dtype)
    kernel = _kernel(
        cupy,
        "rebind_lstm_cell_forward",
        "raw T i2h, raw T h2h, raw T c_prev, int64 H",
        "raw T c, raw T h, raw T saved",
        _LSTM_FORWARD_BODY,
    )
    kernel(i2h, h2h, c_prev, hidden, c, h, saved, size=rows * hidden)
    return c, h, saved


def lstm_cell_backward(cupy, saved, c_prev, d_state, d_out):
    """``(d_gates (N, 4H), d_c_prev)`` from the gradients of ``c`` and ``h`` (None: zeros)."""
    c_prev = cupy.ascontiguousarray(c_prev)
    rows, hidden = c_prev.shape
    d_state = cupy.zeros_like(c_prev) if d_state is None else cupy.ascontiguousarray(d_state)
    d_out = cupy.zeros_like(c_prev) if d_out is None else cupy.ascontiguousarray(d_out)
    d_gates = cupy.empty((rows, 4 * hidden), dtype=c_prev.dtype)
    d_c_prev = cupy.empty_like(c_prev)
    kernel = _kernel(
        cupy,
        "rebind_lstm_cell_backward",
        "raw T saved, raw T c_prev, raw T dc, raw T dh, int64 H",
        "raw T d_gates, raw T d_c_prev",
        _LSTM_BACKWARD_BODY,
    )
    kernel(saved, c_prev, d_state, d_out, hidden, d_gates, d_c_prev, size=rows * hidden)
    return d_gates, d_c_prev


# -- one step of the fused RNN operator's LSTM (rebind.ops.rnn_cells) ---------------------
# The same arithmetic as the CPU's step, in its order: the sigmoid through tanh, the
# activated gates written over their pre-activations (backward reads them there).

_RNN_LSTM_FORWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long base = row * 4 * H + j;
    const T half = T(0.5);
    const T in_gate = half * tanh(half * g[base]) + half;
    const T forget_gate = half * tanh(half * g[base + H]) + half;
    const T transform = tanh(g[base + 2 * H]);
    const T out_gate = half * tanh(half * g[base + 3 * H]) + half;
    g[base] = in_gate;
    g[base + H] = forget_gate;
    g[base + 2 * H] = transform;
    g[base + 3 * H] = out_gate;
    const T state = forget_gate * c_prev[i] + in_gate * transform;
    const T squashed = tanh(state);
    c[i] = state;
    tanh_c[i] = squashed;
    y[i] = out_gate * squashed;
"""

_RNN_LSTM_BACKWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long base = row * 4 * H + j;
    const T in_gate = g[base];
    const T forget_gate = g[base + H];
    const T transform = g[base + 2 * H];
    const T out_gate = g[base + 3 * H];
    const T squashed = tanh_c[i];
    const T d_out = dy[i] + dh[i];
    const T d_cell = d_out * out_gate * (T(1) - squashed * squashed) + dc[i];
    d[base] = (d_cell * transform) * (in_gate * (T(1) - in_gate));
    d[base + H] = (d_cell * c_prev[i]) * (forget_gate * (T(1) - forget_gate));
    d[base + 2 * H] = (d_cell * in_gate) * (T(1) - transform * transform);
    d[base + 3 * H] = (d_out * squashed) * (out_gate * (T(1) - out_gate));
    dc_prev[i] = d_cell * forget_gate;
"""


def lstm_step_forward(cupy, g, c_prev, c, tanh_c, y):
    """One LSTM step: activates ``g`` (N, 4H) in place; writes ``c``, ``tanh_c``, ``y`` (N, H).

    Every array must be C-contiguous (the caller checks).
    """
    rows, hidden = c.shape
    kernel = _kernel(
        cupy,
        "rebind_rnn_lstm_step_forward",
        "raw T c_prev, int64 H",
        "raw T g, raw T c, raw T tanh_c, raw T y",
        _RNN_LSTM_FORWARD_BODY,
    )
    kernel(c_prev, hidden, g, c, tanh_c, y, size=rows * hidden)


def lstm_step_backward(cupy, g, tanh_c, c_prev, dy, dh, dc, d):
    """One LSTM step backwards: writes the gate gradients into ``d``; returns the new ``dc``."""
    rows, hidden = tanh_c.shape
    dc_prev = cupy.empty_like(tanh_c)
    kernel = _kernel(
        cupy,
        "rebind_rnn_lstm_step_backward",
        "raw T g, raw T tanh_c, raw T c_prev, raw T dy, raw T dh, raw T dc, int64 H",
        "raw T d, raw T dc_prev",
        _RNN_LSTM_BACKWARD_BODY,
    )
    kernel(g, tanh_c, c_prev, dy, dh, dc, hidden, d, dc_prev, size=rows * hidden)
    return dc_prev


# -- one step of the fused RNN operator's GRU (cuDNN's form: the reset gate scales the
# hidden-side candidate term h . W_hn^T + b_hn, kept in hidden_n for backward)

_RNN_GRU_FORWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long base = row * 3 * H + j;
    const T half = T(0.5);
    const T reset = half * tanh(half * (g[base] + hh[base])) + half;
    const T update = half * tanh(half * (g[base + H] + hh[base + H])) + half;
    const T candidate = tanh(g[base + 2 * H] + reset * hh[base + 2 * H]);
    g[base] = reset;
    g[base + H] = update;
    g[base + 2 * H] = candidate;
    hidden_n[i] = hh[base + 2 * H];
    y[i] = (h_prev[i] - candidate) * update + candidate;
"""

_RNN_GRU_BACKWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long base = row * 3 * H + j;
    const T reset = g[base];
    const T update = g[base + H];
    const T candidate = g[base + 2 * H];
    const T d_out = dy[i] + dh[i];
    const T d_candidate = (d_out * (T(1) - update)) * (T(1) - candidate * candidate);
    d[base + 2 * H] = d_candidate;
    d_hidden[base + 2 * H] = d_candidate * reset;
    const T d_reset = (d_candidate * hidden_n[i]) * (reset * (T(1) - reset));
    const T d_update = (d_out * (h_prev[i] - candidate)) * (update * (T(1) - update));
    d[base] = d_reset;
    d[base + H] = d_update;
    d_hidden[base] = d_reset;
    d_hidden[base + H] = d_update;
    carry[i] = d_out * update;
"""


def gru_step_forward(cupy, g, hh, h_prev, hidden_n, y):
    """One GRU step: activates ``g`` (N, 3H) in place; writes ``hidden_n`` and ``y`` (N, H).

    ``hh`` is ``h_prev . W_h^T + b_h`` (N, 3H). Every array must be C-contiguous.
    """
    rows, hidden = y.shape
    kernel = _kernel(
        cupy,
        "rebind_rnn_gru_step_forward",
        "raw T hh, raw T h_prev, int64 H",
        "raw T g, raw T hidden_n, raw T y",
        _RNN_GRU_FORWARD_BODY,
    )
    kernel(hh, h_prev, hidden, g, hidden_n, y, size=rows * hidden)


def gru_step_backward(cupy, g, hidden_n, h_prev, dy, dh, d, d_hidden):
    """One GRU step backwards into ``d`` and ``d_hidden`` (N, 3H); returns ``dh * z``.

    The caller adds that to ``d_hidden . W_h`` for the previous step's ``dh``.
    """
    rows, hidden = dy.shape
    carry = cupy.empty_like(dy)
    kernel = _kernel(
        cupy,
        "rebind_rnn_gru_step_backward",
        "raw T g, raw T hidden_n, raw T h_prev, raw T dy, raw T dh, int64 H",
        "raw T d, raw T d_hidden, raw T carry",
        _RNN_GRU_BACKWARD_BODY,
    )
    kernel(g, hidden_n, h_prev, dy, dh, hidden, d, d_hidden, carry, size=rows * hidden)
    return carry
