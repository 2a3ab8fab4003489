"""The GRU step kernels with each unit's recurrent product split over a warp.

``cupy_gru_layer_kernels``' GRU counterparts of ``cupy_layer_warp_kernels``:
each (row, unit) is a warp of 32 threads; lane ``l`` sums the terms ``l, l +
32, ...`` of the unit's three gates, reading the weight along its rows
(forward the weight (3H, H), backward its transpose (H, 3H)); a butterfly of
exchanges adds the lanes' sums, and lane 0 runs the step's arithmetic from
the same templates as the thread kernels. For the fused GRU layer and the
RNN operator's GRU, under ``cupy_layer_kernels.PRODUCTS_OVER_WARPS`` (on
unless ``REBIND_RNN_PRODUCTS=threads``, as the LSTM's). Importing this module does not import
CuPy.
"""

from .cupy_gru_layer_kernels import (
    BACKWARD_CELL,
    BACKWARD_POINTERS,
    FORWARD_CELL,
    FORWARD_POINTERS,
    RNN_BACKWARD_CELL,
    RNN_BACKWARD_POINTERS,
    RNN_FORWARD_CELL,
    RNN_FORWARD_POINTERS,
)
from .cupy_layer_warp_kernels import _UNIT, _on_lane_zero, _per_warp
from .cupy_product_sums import product_sums

__all__ = [
    "gru_layer_backward_over_warps",
    "gru_layer_forward_over_warps",
    "rnn_gru_backward_over_warps",
    "rnn_gru_forward_over_warps",
]

_GATE_PARTS = product_sums(3, backward=False, warp=True)
_NEXT_PARTS = product_sums(3, backward=True, warp=True, next_gradients="d_h2h_next")

_FORWARD_BODY = _UNIT + FORWARD_POINTERS + _GATE_PARTS + _on_lane_zero(FORWARD_CELL)
_BACKWARD_BODY = _UNIT + BACKWARD_POINTERS + _NEXT_PARTS + _on_lane_zero(BACKWARD_CELL)
_RNN_FORWARD_BODY = _UNIT + RNN_FORWARD_POINTERS + _GATE_PARTS + _on_lane_zero(RNN_FORWARD_CELL)
_RNN_BACKWARD_BODY = _UNIT + RNN_BACKWARD_POINTERS + _NEXT_PARTS + _on_lane_zero(RNN_BACKWARD_CELL)


def gru_layer_forward_over_warps(cupy, t, i2h, weight, bias, outputs, kept):
    """``cupy_gru_layer_kernels.gru_layer_forward_with_product``, reading ``weight`` (3H, H)."""
    _, rows, hidden = outputs.shape
    _per_warp(
        cupy,
        "rebind_gru_layer_forward_over_warps",
        "raw T i2h, raw T weight, raw T bias, int64 t, int64 N",
        "raw T outputs, raw T kept_all",
        _FORWARD_BODY,
        hidden,
        rows,
    )(i2h, weight, bias, t, rows, hidden, outputs, kept)


def gru_layer_backward_over_warps(
    cupy, t, last, kept, outputs, dh_out, weight_t, d_i2h, d_h2h, carried
):
    """``cupy_gru_layer_kernels.gru_layer_backward_with_product``, reading ``weight_t``."""
    _, rows, hidden = outputs.shape
    terms = 0 if last else hidden
    _per_warp(
        cupy,
        "rebind_gru_layer_backward_over_warps",
        "raw T kept_all, raw T outputs, raw T dh_out, raw T weight_t, int64 t, int64 M, int64 N",
        "raw T d_i2h_all, raw T d_h2h_all, raw T carried",
        _BACKWARD_BODY,
        hidden,
        rows,
    )(kept, outputs, dh_out, weight_t, t, terms, rows, hidden, d_i2h, d_h2h, carried)


def rnn_gru_forward_over_warps(cupy, t, prev, weight, bias, h0, gates, hidden_ns, ys):
    """``cupy_gru_layer_kernels.rnn_gru_forward_with_product``, reading ``weight`` (3H, H)."""
    _, rows, hidden = ys.shape
    _per_warp(
        cupy,
        "rebind_rnn_gru_forward_over_warps",
        "raw T weight, raw T bh, raw T h0, int64 t, int64 prev, int64 N",
        "raw T gates_all, raw T hidden_ns, raw T ys",
        _RNN_FORWARD_BODY,
        hidden,
        rows,
    )(weight, bias, h0, t, prev, rows, hidden, gates, hidden_ns, ys)


def rnn_gru_backward_over_warps(
    cupy, t, prev, later, saved, h0, ys, dys, dh_in, weight_t, d_gates, d_hidden, carried, slots
):
    """``cupy_gru_layer_kernels.rnn_gru_backward_with_product``, reading ``weight_t``."""
    gates, hidden_ns = saved
    _, rows, hidden = ys.shape
    terms = 0 if later < 0 else hidden
    _per_warp(
        cupy,
        "rebind_rnn_gru_backward_over_warps",
        "raw T gates_all, raw T hidden_ns, raw T h0, raw T ys, raw T dys, raw T dh_in, "
        "raw T weight_t, int64 t, int64 prev, int64 later, int64 M, int64 N, "
        "int64 from_slot, int64 to_slot",
        "raw T d_all, raw T d_hidden_all, raw T carried",
        _RNN_BACKWARD_BODY,
        hidden,
        rows,
    )(
        gates, hidden_ns, h0, ys, dys, dh_in, weight_t, t, prev, later, terms, rows, *slots,
        hidden, d_gates, d_hidden, carried,
    )  # fmt: skip
