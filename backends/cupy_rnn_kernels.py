"""CuPy kernels of the recurrent cells: each time step's gate arithmetic in one launch.

``lstm_cell_*`` and ``gru_cell_*`` serve the fused cell steps of unrolled
``mx.rnn.LSTMCell``/``GRUCell`` graphs (``rebind.executor.fused_lstm``);
``lstm_step_*`` and ``gru_step_*`` the time steps of the RNN operator
(``rebind.ops.rnn_cells``). Each runs one thread per (row, unit) over the
``(N, G*H)`` gates of a batch, the same arithmetic as the CPU's kernels in
their order (the compiler may contract a product and a sum into a fused
multiply-add). Kernel code avoids ``n``, ``i`` and leading underscores, which
CuPy reserves, and has no early ``return`` (the bodies run in a grid-stride
loop). Compiled on first use; importing this module does not import CuPy.
"""

import functools

from . import cupy_kernels
from .cupy_kernels import _kernel


def _per_unit(cupy, name, in_params, out_params, body, hidden, rows):
    """A kernel over the ``rows * hidden`` units of a batch; called with the arrays and H.

    The sized callable is kept beside the kernel (``cupy_kernels._KERNELS``): a
    layer calls one 35 times a pass, each time with the same size.
    """
    size, cache = rows * hidden, cupy_kernels._KERNELS  # the module's (tests replace it)
    sized = cache.get((name, size))
    if sized is None:
        kernel = _kernel(cupy, name, f"{in_params}, int64 H", out_params, body)
        sized = cache[(name, size)] = functools.partial(kernel, size=size)
    return sized


__all__ = [
    "gru_cell_backward",
    "gru_cell_forward",
    "gru_step_backward",
    "gru_step_forward",
    "lstm_cell_backward",
    "lstm_cell_forward",
    "lstm_step_backward",
    "lstm_step_forward",
]

# -- the LSTM cell (rebind.executor.fused_lstm) ------------------------------------------
# One thread per (row, unit): the four gate pre-activations of a unit sit H apart in
# a row of 4H; what backward needs (i, f, g, o, tanh(c)) is kept as a row of 5H.

# The gates' pre-activations (__A__, __B__, __Z__, __D__: input, forget, transform and
# output) and the gradients reaching the output and state (__DH__, __DC__) are filled in
# by each kernel; the layer kernels (cupy_layer_kernels) add the bias and the next
# step's gradients there, and may first work out sums those read (__SUMS__).
_LSTM_FORWARD_TEMPLATE = """
    const long long row = i / H;
    const long long j = i % H;
    const long long gates = row * 4 * H + j;
__SUMS__
    const T a = __A__;
    const T b = __B__;
    const T z = __Z__;
    const T d = __D__;
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

_LSTM_BACKWARD_TEMPLATE = """
    const long long row = i / H;
    const long long j = i % H;
__SUMS__
    const long long kept = row * 5 * H + j;
    const T in_gate = saved[kept];
    const T forget_gate = saved[kept + H];
    const T transform = saved[kept + 2 * H];
    const T out_gate = saved[kept + 3 * H];
    const T squashed = saved[kept + 4 * H];
    const T d_out = __DH__;
    const T d_state = __DC__ + (d_out * out_gate) * (T(1) - squashed * squashed);
    d_c_prev[i] = d_state * forget_gate;
    const long long gates = row * 4 * H + j;
    d_gates[gates] = (d_state * transform) * (in_gate * (T(1) - in_gate));
    d_gates[gates + H] = (d_state * c_prev[i]) * (forget_gate * (T(1) - forget_gate));
    d_gates[gates + 2 * H] = (d_state * in_gate) * (T(1) - transform * transform);
    d_gates[gates + 3 * H] = (d_out * squashed) * (out_gate * (T(1) - out_gate));
"""

# offsets of the four gates in a row of 4H, from a unit's position
GATE_OFFSETS = ("", " + H", " + 2 * H", " + 3 * H")


def lstm_forward_body(preactivation, sums=""):
    """The cell's forward body, ``preactivation(offset)`` giving each gate's sum.

    ``sums`` is code run first, with ``row``, ``j`` and ``gates`` defined.
    """
    body = _LSTM_FORWARD_TEMPLATE.replace("__SUMS__", sums)
    for token, offset in zip(("__A__", "__B__", "__Z__", "__D__"), GATE_OFFSETS, strict=True):
        body = body.replace(token, preactivation(offset))
    return body


def lstm_backward_body(d_out, d_state, sums=""):
    """The cell's backward body with the given output and state gradients.

    ``sums`` is code run first, with ``row`` and ``j`` defined.
    """
    body = _LSTM_BACKWARD_TEMPLATE.replace("__SUMS__", sums)
    return body.replace("__DH__", d_out).replace("__DC__", d_state)


_LSTM_FORWARD_BODY = lstm_forward_body(lambda k: f"i2h[gates{k}] + h2h[gates{k}]")
_LSTM_BACKWARD_BODY = lstm_backward_body("dh[i]", "dc[i]")


def lstm_cell_forward(cupy, i2h, h2h, c_prev):
    """``(c, h, saved)`` of an LSTM cell from its projections ``(N, 4H)`` and ``c_prev``."""
    # i2h may be a strided view (one step of the batched input projections, batch-major):
    # a raw CuPy argument is read at flat C-order positions whatever its strides, so it
    # is not copied (35 copies a batch of the LSTM LM's first layer)
    h2h, c_prev = cupy.ascontiguousarray(h2h), cupy.ascontiguousarray(c_prev)
    rows, hidden = c_prev.shape
    # empty, not empty_like: the same C-contiguous arrays for a fraction of the host time
    # (empty_like works out the layout in Python, 70 cells a step of the LSTM LM)
    c, h = cupy.empty(c_prev.shape, c_prev.dtype), cupy.empty(c_prev.shape, c_prev.dtype)
    saved = cupy.empty((rows, 5 * hidden), dtype=c_prev.dtype)
    _per_unit(
        cupy,
        "rebind_lstm_cell_forward",
        "raw T i2h, raw T h2h, raw T c_prev",
        "raw T c, raw T h, raw T saved",
        _LSTM_FORWARD_BODY,
        hidden,
        rows,
    )(i2h, h2h, c_prev, hidden, c, h, saved)
    return c, h, saved


def lstm_cell_backward(cupy, saved, c_prev, d_state, d_out):
    """``(d_gates (N, 4H), d_c_prev)`` from the gradients of ``c`` and ``h`` (None: zeros)."""
    c_prev = cupy.ascontiguousarray(c_prev)
    rows, hidden = c_prev.shape
    d_state = cupy.zeros_like(c_prev) if d_state is None else cupy.ascontiguousarray(d_state)
    d_out = cupy.zeros_like(c_prev) if d_out is None else cupy.ascontiguousarray(d_out)
    d_gates = cupy.empty((rows, 4 * hidden), dtype=c_prev.dtype)
    d_c_prev = cupy.empty(c_prev.shape, c_prev.dtype)
    _per_unit(
        cupy,
        "rebind_lstm_cell_backward",
        "raw T saved, raw T c_prev, raw T dc, raw T dh",
        "raw T d_gates, raw T d_c_prev",
        _LSTM_BACKWARD_BODY,
        hidden,
        rows,
    )(saved, c_prev, d_state, d_out, hidden, d_gates, d_c_prev)
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
    _per_unit(
        cupy,
        "rebind_rnn_lstm_step_forward",
        "raw T c_prev",
        "raw T g, raw T c, raw T tanh_c, raw T y",
        _RNN_LSTM_FORWARD_BODY,
        hidden,
        rows,
    )(c_prev, hidden, g, c, tanh_c, y)


def lstm_step_backward(cupy, g, tanh_c, c_prev, dy, dh, dc, d):
    """One LSTM step backwards: writes the gate gradients into ``d``; returns the new ``dc``."""
    rows, hidden = tanh_c.shape
    dc_prev = cupy.empty_like(tanh_c)
    _per_unit(
        cupy,
        "rebind_rnn_lstm_step_backward",
        "raw T g, raw T tanh_c, raw T c_prev, raw T dy, raw T dh, raw T dc",
        "raw T d, raw T dc_prev",
        _RNN_LSTM_BACKWARD_BODY,
        hidden,
        rows,
    )(g, tanh_c, c_prev, dy, dh, dc, hidden, d, dc_prev)
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
    _per_unit(
        cupy,
        "rebind_rnn_gru_step_forward",
        "raw T hh, raw T h_prev",
        "raw T g, raw T hidden_n, raw T y",
        _RNN_GRU_FORWARD_BODY,
        hidden,
        rows,
    )(hh, h_prev, hidden, g, hidden_n, y)


def gru_step_backward(cupy, g, hidden_n, h_prev, dy, dh, d, d_hidden):
    """One GRU step backwards into ``d`` and ``d_hidden`` (N, 3H); returns ``dh * z``.

    The caller adds that to ``d_hidden . W_h`` for the previous step's ``dh``.
    """
    rows, hidden = dy.shape
    carry = cupy.empty_like(dy)
    _per_unit(
        cupy,
        "rebind_rnn_gru_step_backward",
        "raw T g, raw T hidden_n, raw T h_prev, raw T dy, raw T dh",
        "raw T d, raw T d_hidden, raw T carry",
        _RNN_GRU_BACKWARD_BODY,
        hidden,
        rows,
    )(g, hidden_n, h_prev, dy, dh, hidden, d, d_hidden, carry)
    return carry


# -- the unrolled GRU cell (rebind.executor.fused_lstm, kind "gru") -------------------------
# MXNet's GRUCell: r and z from i2h + h2h, n = tanh(i2h_n + r * h2h_n),
# h = (1 - z) * n + z * h_prev; backward keeps r, z, n and h2h_n as a row of 4H.

_GRU_CELL_FORWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long gates = row * 3 * H + j;
    const T reset = T(1) / (T(1) + exp(-(i2h[gates] + h2h[gates])));
    const T update = T(1) / (T(1) + exp(-(i2h[gates + H] + h2h[gates + H])));
    const T hidden_n = h2h[gates + 2 * H];
    const T candidate = tanh(i2h[gates + 2 * H] + reset * hidden_n);
    h[i] = (T(1) - update) * candidate + update * h_prev[i];
    const long long kept = row * 4 * H + j;
    saved[kept] = reset;
    saved[kept + H] = update;
    saved[kept + 2 * H] = candidate;
    saved[kept + 3 * H] = hidden_n;
"""

_GRU_CELL_BACKWARD_BODY = """
    const long long row = i / H;
    const long long j = i % H;
    const long long kept = row * 4 * H + j;
    const T reset = saved[kept];
    const T update = saved[kept + H];
    const T candidate = saved[kept + 2 * H];
    const T hidden_n = saved[kept + 3 * H];
    const T d_out = dh[i];
    const T d_update = d_out * h_prev[i] - d_out * candidate;
    const T d_candidate = (d_out * (T(1) - update)) * (T(1) - candidate * candidate);
    const T d_reset = (d_candidate * hidden_n) * (reset * (T(1) - reset));
    const T d_update_in = d_update * (update * (T(1) - update));
    const long long gates = row * 3 * H + j;
    d_i2h[gates] = d_reset;
    d_i2h[gates + H] = d_update_in;
    d_i2h[gates + 2 * H] = d_candidate;
    d_h2h[gates] = d_reset;
    d_h2h[gates + H] = d_update_in;
    d_h2h[gates + 2 * H] = d_candidate * reset;
    d_h_prev[i] = d_out * update;
"""


def gru_cell_forward(cupy, i2h, h2h, h_prev):
    """``(h, saved)`` of MXNet's GRU cell from its projections ``(N, 3H)`` and ``h_prev``."""
    h2h, h_prev = cupy.ascontiguousarray(h2h), cupy.ascontiguousarray(h_prev)  # i2h: as the LSTM's
    rows, hidden = h_prev.shape
    h = cupy.empty(h_prev.shape, h_prev.dtype)
    saved = cupy.empty((rows, 4 * hidden), dtype=h_prev.dtype)
    _per_unit(
        cupy,
        "rebind_gru_cell_forward",
        "raw T i2h, raw T h2h, raw T h_prev",
        "raw T h, raw T saved",
        _GRU_CELL_FORWARD_BODY,
        hidden,
        rows,
    )(i2h, h2h, h_prev, hidden, h, saved)
    return h, saved


def gru_cell_backward(cupy, saved, h_prev, d_out):
    """``(d_i2h, d_h2h, d_h_prev)`` from the gradient of ``h`` (None: zeros)."""
    h_prev = cupy.ascontiguousarray(h_prev)
    rows, hidden = h_prev.shape
    d_out = cupy.zeros_like(h_prev) if d_out is None else cupy.ascontiguousarray(d_out)
    d_i2h = cupy.empty((rows, 3 * hidden), dtype=h_prev.dtype)
    d_h2h = cupy.empty(d_i2h.shape, d_i2h.dtype)
    d_h_prev = cupy.empty(h_prev.shape, h_prev.dtype)
    _per_unit(
        cupy,
        "rebind_gru_cell_backward",
        "raw T saved, raw T h_prev, raw T dh",
        "raw T d_i2h, raw T d_h2h, raw T d_h_prev",
        _GRU_CELL_BACKWARD_BODY,
        hidden,
        rows,
    )(saved, h_prev, d_out, hidden, d_i2h, d_h2h, d_h_prev)
    return d_i2h, d_h2h, d_h_prev
