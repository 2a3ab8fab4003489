"""The fused LSTM layer's step kernels with each unit's recurrent product split over a warp.

``cupy_layer_kernels``' ``*_with_product`` kernels give each (row, unit) one
thread, which sums its unit's products over the ``H`` hidden units alone:
the LSTM LM's batch of 32 rows of 200 units is 6,400 threads, too few to
hide the memory's latency, and on an H200 such a step took 43 us forward
and 50 us backward, most of the LM's time on the device.

Here each (row, unit) is a warp of 32 threads. Lane ``l`` sums the terms
``l, l + 32, ...``, reading the weight along its rows so that a warp's
lanes read consecutive elements (forward the weight (4H, H), backward its
transpose (H, 4H): the thread kernels read the other one); the four gates'
partial sums are then added across the warp by exchanges
(``__shfl_xor_sync``, a butterfly of five steps), and lane 0 runs the cell's
arithmetic exactly as the thread kernels do (the same templates). So the
values differ from the thread kernels' only in the order of each product's
additions.

A kernel's position ``i`` is its unit's number times 32 plus the lane: CuPy
launches blocks of a multiple of 32 threads, so each unit's 32 positions are
one warp, and every warp is whole (the size is a multiple of 32).
``cupy_layer_kernels.PRODUCTS_OVER_WARPS`` chooses these kernels (the default:
on an H100 ``benchmarks/gpu_layer.py`` timed them 1.3-3.3x faster than the
thread kernels); the host tests run them with each warp's lanes as host threads
(``HostCupy``), and a ``gpu`` test against the fused cells on a GPU. The RNN
operator's LSTM steps (``mx.sym.RNN``, up to the same width) have theirs too,
under the same switch.
Importing this module does not import CuPy.
"""

from .cupy_layer_kernels import (
    LAYER_BACKWARD_POINTERS,
    LAYER_FORWARD_POINTERS,
    RNN_BACKWARD_CELL,
    RNN_BACKWARD_POINTERS,
    RNN_FORWARD_CELL,
    RNN_FORWARD_POINTERS,
    layer_backward_cell,
    layer_forward_cell,
)
from .cupy_product_sums import product_sums
from .cupy_rnn_kernels import _per_unit

__all__ = [
    "lstm_layer_backward_over_warps",
    "lstm_layer_forward_over_warps",
    "rnn_lstm_backward_over_warps",
    "rnn_lstm_forward_over_warps",
]

LANES = 32

_UNIT = """
    const long long unit = i >> 5;  // this warp's (row, unit), and this thread's lane
    const int lane = (int)(i & 31);
    const long long unit_row = unit / H;
    const long long unit_j = unit % H;
"""


def _on_lane_zero(cell):
    """The cell's arithmetic for the warp's unit, run by its first lane."""
    return f"    if (lane == 0) {{\n        const long long i = unit;\n{cell}    }}\n"


_GATE_PARTS = product_sums(4, backward=False, warp=True)
_FORWARD_BODY = _UNIT + LAYER_FORWARD_POINTERS + _GATE_PARTS + _on_lane_zero(layer_forward_cell())

_NEXT_PARTS = product_sums(4, backward=True, warp=True)
_BACKWARD_BODY = (
    _UNIT + LAYER_BACKWARD_POINTERS + _NEXT_PARTS + _on_lane_zero(layer_backward_cell())
)


def _per_warp(cupy, name, in_params, out_params, body, hidden, rows):
    """A kernel of one warp per unit of a batch (``_per_unit``'s, 32 positions a unit)."""
    return _per_unit(cupy, name, in_params, out_params, body, hidden, rows * LANES)


def lstm_layer_forward_over_warps(cupy, t, i2h, weight, bias, states, outputs, kept):
    """``cupy_layer_kernels.lstm_layer_forward_with_product``, reading ``weight`` (4H, H).

    The buffers and the step number as there; ``weight`` C-contiguous.
    """
    _, rows, hidden = states.shape
    _per_warp(
        cupy,
        "rebind_lstm_layer_forward_over_warps",
        "raw T i2h, raw T weight, raw T bias, int64 t, int64 N",
        "raw T states, raw T outputs, raw T kept_all",
        _FORWARD_BODY,
        hidden,
        rows,
    )(i2h, weight, bias, t, rows, hidden, states, outputs, kept)


def lstm_layer_backward_over_warps(
    cupy, t, last, kept, states, dc_out, dh_out, weight_t, d_gates, carried
):
    """``cupy_layer_kernels.lstm_layer_backward_with_product``, reading ``weight_t`` (H, 4H).

    The buffers, the step number and ``last`` as there; ``weight_t`` is the
    weight transposed, C-contiguous.
    """
    _, rows, hidden = states.shape
    terms = 0 if last else hidden
    _per_warp(
        cupy,
        "rebind_lstm_layer_backward_over_warps",
        "raw T kept_all, raw T states, raw T dc_out, raw T dh_out, raw T weight_t, "
        "int64 t, int64 M, int64 N",
        "raw T d_gates_all, raw T carried",
        _BACKWARD_BODY,
        hidden,
        rows,
    )(kept, states, dc_out, dh_out, weight_t, t, terms, rows, hidden, d_gates, carried)


# -- the RNN operator's LSTM (rebind.ops.rnn_cells): its own step arithmetic (see
# cupy_layer_kernels), each pre-activation read as ``g + sum``, the sums over warps
_RNN_FORWARD_BODY = _UNIT + RNN_FORWARD_POINTERS + _GATE_PARTS + _on_lane_zero(RNN_FORWARD_CELL)
_RNN_BACKWARD_BODY = _UNIT + RNN_BACKWARD_POINTERS + _NEXT_PARTS + _on_lane_zero(RNN_BACKWARD_CELL)


def rnn_lstm_forward_over_warps(cupy, t, prev, weight, h0, c0, gates, cells, tanh_cells, ys):
    """``cupy_layer_kernels.rnn_lstm_forward_with_product``, reading ``weight`` (4H, H).

    The arrays and step numbers as there; ``weight`` is the recurrent weight,
    C-contiguous.
    """
    _, rows, hidden = cells.shape
    _per_warp(
        cupy,
        "rebind_rnn_lstm_forward_over_warps",
        "raw T weight, raw T h0, raw T c0, int64 t, int64 prev, int64 N",
        "raw T gates_all, raw T cells, raw T tanh_cells, raw T ys",
        _RNN_FORWARD_BODY,
        hidden,
        rows,
    )(weight, h0, c0, t, prev, rows, hidden, gates, cells, tanh_cells, ys)


def rnn_lstm_backward_over_warps(
    cupy, t, prev, later, saved, c0, dys, dh_in, dc_in, weight_t, d_gates, carried, slots
):
    """``cupy_layer_kernels.rnn_lstm_backward_with_product``, reading ``weight_t`` (H, 4H).

    The arrays, step numbers and slots as there; ``weight_t`` is the recurrent
    weight transposed, C-contiguous.
    """
    gates, cells, tanh_cells = saved
    _, rows, hidden = cells.shape
    terms = 0 if later < 0 else hidden
    _per_warp(
        cupy,
        "rebind_rnn_lstm_backward_over_warps",
        "raw T gates_all, raw T tanh_cells, raw T cells, raw T c0, raw T dys, raw T dh_in, "
        "raw T dc_in, raw T weight_t, int64 t, int64 prev, int64 later, int64 M, int64 N, "
        "int64 from_slot, int64 to_slot",
        "raw T d_all, raw T carried",
        _RNN_BACKWARD_BODY,
        hidden,
        rows,
    )(
        gates, tanh_cells, cells, c0, dys, dh_in, dc_in, weight_t, t, prev, later, terms,
        rows, *slots, hidden, d_gates, carried,
    )  # fmt: skip
