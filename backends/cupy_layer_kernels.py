"""CuPy kernels of a whole unrolled LSTM layer's time steps (``rebind.executor.fused_layer``).

The fused cell kernels (``cupy_rnn_kernels.lstm_cell_*``) take a step's two
projections with their biases already added, and give the cell's state and
output; the executor adds the gradients that reach a step's output from the
next step and from outside. A layer step runs all time steps itself, so these
kernels also take what the executor did around them:

- forward: the recurrent projection without its bias, and the bias, added as
  the FullyConnected adds it, ``i2h + (h2h + bias)`` per gate, then the
  cell's arithmetic (the ``Activation`` kernels': ``1 / (1 + exp(-x))``,
  ``tanh``), writing the state, the output and what backward needs into the
  layer's buffers;
- backward: the output's and the state's gradients from outside the layer and
  from the next step, added in the kernel (``dh_out + dh_next``), then the
  cell's backward.

The ``*_with_product`` kernels also work out the recurrent product in the
step's thread, each (row, unit) thread summing over the hidden units (the
four gates' sums forward, the gradient reaching the output from the next step
backward): one launch a time step instead of a cuBLAS product and a kernel.
A step's host time is mostly launches (cuBLAS's own call takes 16-25 us
there), and for a small layer (the LSTM LM's 32 x 200) the product is a few
microseconds of device time either way (an estimate). Each thread runs four
sums side by side over the ``H`` hidden units, so for wide layers cuBLAS is faster:
``fused_layer`` takes these kernels up to ``MAX_HIDDEN_WITH_PRODUCT`` units
(a guess from the arithmetic, not yet timed on a GPU; ``benchmarks/gpu_layer.py``
times both).

One thread per (row, unit), as the cell kernels; importing this module does
not import CuPy.
"""

from .cupy_rnn_kernels import GATE_OFFSETS, _per_unit, lstm_backward_body, lstm_forward_body

__all__ = [
    "MAX_HIDDEN_WITH_PRODUCT",
    "lstm_layer_backward",
    "lstm_layer_backward_with_product",
    "lstm_layer_forward",
    "lstm_layer_forward_with_product",
]

# the widest layer whose steps work out their recurrent products themselves
MAX_HIDDEN_WITH_PRODUCT = 256

_FORWARD_BODY = lstm_forward_body(
    lambda k: f"i2h[gates{k}] + (h2h[gates{k}] + bias[j{k}])"  # as FullyConnected adds it
)
_BACKWARD_BODY = lstm_backward_body("dh_out[i] + dh_next[i]", "(dc_out[i] + dc_next[i])")

# h_prev . W^T for the unit's four gates: W^T (H, 4H) C-contiguous, so the threads of
# consecutive units read consecutive weights
_GATE_SUMS = """
    T sum0 = T(0);
    T sum1 = T(0);
    T sum2 = T(0);
    T sum3 = T(0);
    for (long long k = 0; k < H; ++k) {
        const T x = h_prev[row * H + k];
        const long long w = k * 4 * H + j;
        sum0 += x * weight_t[w];
        sum1 += x * weight_t[w + H];
        sum2 += x * weight_t[w + 2 * H];
        sum3 += x * weight_t[w + 3 * H];
    }
"""
_FORWARD_WITH_PRODUCT_BODY = lstm_forward_body(
    lambda k: f"i2h[gates{k}] + (sum{GATE_OFFSETS.index(k)} + bias[j{k}])", sums=_GATE_SUMS
)

# the next step's gate gradients (N, 4H) . W (4H, H) at this unit: the gradient its
# output gets through the next step's recurrent projection; four running sums, one a
# gate, so that a thread's additions do not all wait on one another (M: H terms each,
# or 0 at the last step)
_NEXT_SUM = """
    T next0 = T(0);
    T next1 = T(0);
    T next2 = T(0);
    T next3 = T(0);
    for (long long k = 0; k < M; ++k) {
        const long long g = row * 4 * H + k;
        const long long w = k * H + j;
        next0 += d_gates_next[g] * weight[w];
        next1 += d_gates_next[g + H] * weight[w + H * H];
        next2 += d_gates_next[g + 2 * H] * weight[w + 2 * H * H];
        next3 += d_gates_next[g + 3 * H] * weight[w + 3 * H * H];
    }
    const T from_next = (next0 + next1) + (next2 + next3);
"""
_BACKWARD_WITH_PRODUCT_BODY = lstm_backward_body(
    "dh_out[i] + from_next", "(dc_out[i] + dc_next[i])", sums=_NEXT_SUM
)


def lstm_layer_forward(cupy, i2h, h2h, bias, c_prev, c, h, saved):
    """One time step: writes ``c``, ``h`` (N, H) and ``saved`` (N, 5H).

    ``i2h`` (N, 4H) may be strided (a raw argument is read at flat C-order
    positions); ``h2h`` (N, 4H), ``bias`` (4H), ``c_prev`` and the outputs are
    C-contiguous.
    """
    rows, hidden = c.shape
    _per_unit(
        cupy,
        "rebind_lstm_layer_forward",
        "raw T i2h, raw T h2h, raw T bias, raw T c_prev",
        "raw T c, raw T h, raw T saved",
        _FORWARD_BODY,
        hidden,
        rows,
    )(i2h, h2h, bias, c_prev, hidden, c, h, saved)


def lstm_layer_backward(cupy, saved, c_prev, dc_out, dc_next, dh_out, dh_next, d_gates, d_c_prev):
    """One time step backwards: writes ``d_gates`` (N, 4H) and ``d_c_prev`` (N, H).

    The four incoming gradients are (N, H) arrays (zeros where none arrived).
    """
    rows, hidden = c_prev.shape
    _per_unit(
        cupy,
        "rebind_lstm_layer_backward",
        "raw T saved, raw T c_prev, raw T dc_out, raw T dc_next, raw T dh_out, raw T dh_next",
        "raw T d_gates, raw T d_c_prev",
        _BACKWARD_BODY,
        hidden,
        rows,
    )(saved, c_prev, dc_out, dc_next, dh_out, dh_next, hidden, d_gates, d_c_prev)


def lstm_layer_forward_with_product(cupy, i2h, h_prev, weight_t, bias, c_prev, c, h, saved):
    """One time step with its recurrent product: writes ``c``, ``h`` and ``saved``.

    As ``lstm_layer_forward``, the product ``h_prev . W^T`` worked out here:
    ``h_prev`` (N, H) and ``weight_t`` (H, 4H), the weight transposed, are
    C-contiguous.
    """
    rows, hidden = c.shape
    _per_unit(
        cupy,
        "rebind_lstm_layer_forward_with_product",
        "raw T i2h, raw T h_prev, raw T weight_t, raw T bias, raw T c_prev",
        "raw T c, raw T h, raw T saved",
        _FORWARD_WITH_PRODUCT_BODY,
        hidden,
        rows,
    )(i2h, h_prev, weight_t, bias, c_prev, hidden, c, h, saved)


def lstm_layer_backward_with_product(
    cupy, saved, c_prev, dc_out, dc_next, dh_out, d_gates_next, weight, d_gates, d_c_prev
):
    """One time step backwards, the output's gradient from the next step worked out here.

    As ``lstm_layer_backward``, with ``d_gates_next . weight`` for ``dh_next``:
    the next step's gate gradients (N, 4H) and the recurrent weight (4H, H),
    C-contiguous; ``d_gates_next`` None at the last step (no next step).
    """
    rows, hidden = c_prev.shape
    terms = 0 if d_gates_next is None else hidden
    _per_unit(
        cupy,
        "rebind_lstm_layer_backward_with_product",
        "raw T saved, raw T c_prev, raw T dc_out, raw T dc_next, raw T dh_out, "
        "raw T d_gates_next, raw T weight, int64 M",
        "raw T d_gates, raw T d_c_prev",
        _BACKWARD_WITH_PRODUCT_BODY,
        hidden,
        rows,
    )(
        saved,
        c_prev,
        dc_out,
        dc_next,
        dh_out,
        dc_out if d_gates_next is None else d_gates_next,  # not read without terms
        weight,
        terms,
        hidden,
        d_gates,
        d_c_prev,
    )
