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

One thread per (row, unit), as the cell kernels; importing this module does
not import CuPy.
"""

from .cupy_rnn_kernels import _per_unit, lstm_backward_body, lstm_forward_body

__all__ = ["lstm_layer_backward", "lstm_layer_forward"]

_FORWARD_BODY = lstm_forward_body(
    lambda k: f"i2h[gates{k}] + (h2h[gates{k}] + bias[j{k}])"  # as FullyConnected adds it
)
_BACKWARD_BODY = lstm_backward_body("dh_out[i] + dh_next[i]", "(dc_out[i] + dc_next[i])")


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
