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
there). Each thread runs four sums side by side over the ``H`` hidden units,
so for wide layers cuBLAS is faster (``with_product`` says where). On an
H200 (``benchmarks/gpu_layer.py``, batches 32 and 128) they were 1.5-1.8x
faster than the cuBLAS way at 200 and 256 units and slower at 512
(0.82-0.90x) and 1024 (0.45-0.48x). With a batch of 32 rows of 200 units
they are 6,400 threads, too few to hide the memory's latency (43 us a step
forward, 50 us backward there): ``cupy_layer_warp_kernels`` splits each
unit's sums over a warp instead, which ``PRODUCTS_OVER_WARPS`` chooses (the
default, from an H100's figures).

One thread per (row, unit), as the cell kernels; importing this module does
not import CuPy.
"""

import os

from .cupy_product_sums import product_sums
from .cupy_rnn_kernels import (
    _RNN_LSTM_BACKWARD_BODY,
    _RNN_LSTM_FORWARD_BODY,
    GATE_OFFSETS,
    _per_unit,
    lstm_backward_body,
    lstm_forward_body,
)

__all__ = [
    "LAYER_BACKWARD_POINTERS",
    "LAYER_FORWARD_POINTERS",
    "MAX_HIDDEN_OVER_THREADS",
    "MAX_HIDDEN_WITH_PRODUCT",
    "MAX_STEP_PRODUCT_OVER_WARPS",
    "PRODUCTS_OVER_WARPS",
    "RNN_BACKWARD_CELL",
    "RNN_BACKWARD_POINTERS",
    "RNN_FORWARD_CELL",
    "RNN_FORWARD_POINTERS",
    "lstm_layer_backward",
    "lstm_layer_backward_with_product",
    "lstm_layer_forward",
    "lstm_layer_forward_with_product",
    "rnn_lstm_backward_with_product",
    "rnn_lstm_forward_with_product",
    "with_product",
]


def _products_over_warps(variable="REBIND_RNN_PRODUCTS"):
    value = os.environ.get(variable, "").strip().lower()
    if value not in ("", "threads", "warps"):
        raise ValueError(f"{variable}={value!r}: give threads or warps")
    return value != "threads"


# the widest layer whose steps work out their recurrent products themselves
MAX_HIDDEN_WITH_PRODUCT = 512
# with a thread summing each unit's products alone: the widest such layer (H200,
# ``benchmarks/gpu_layer.py``: 1.5-1.8x the cuBLAS way at 200 and 256 units, slower at 512)
MAX_HIDDEN_OVER_THREADS = 256
# whether those steps split each unit's products over a warp's 32 threads
# (``cupy_layer_warp_kernels``, ``cupy_gru_warp_kernels``) rather than sum them in the
# unit's thread alone. On an H100 (``benchmarks/gpu_layer.py --passes 20``, LSTM, 35
# steps) the warps took a layer's pass in 1.3-3.3x less time than the threads at 200,
# 256 and 512 units, batches 32 and 128, and the LSTM LM's rate (``benchmarks/gpu.py``)
# went from 3,768 to 4,718 samples/s. ``REBIND_RNN_PRODUCTS=threads`` (or ``warps``)
# in the environment chooses.
PRODUCTS_OVER_WARPS = _products_over_warps()
# over warps, the largest step product (multiply-adds: gates x rows x H x H) the step
# kernels take: there the warps beat cuBLAS at 33.5M (512 units x 32 rows, 256 x 128:
# 2.65 and 3.1 ms a pass against 6.0) and lost at 134M (512 x 128, 1024 x 32)
MAX_STEP_PRODUCT_OVER_WARPS = 1 << 26


def products_kernel(xp, threads, warps, weight, forward):
    """The step kernel that works out the recurrent products, and the weight it reads.

    ``threads`` (a unit's thread sums its products), or ``warps`` where
    ``PRODUCTS_OVER_WARPS`` says so. A thread reads the weight down its columns,
    W^T's rows forward and W's backward; a warp along its rows, the other way
    round. The weight is given as W (gates * H, H); the one read is C-contiguous.
    """
    kernel, transposed = (warps, not forward) if PRODUCTS_OVER_WARPS else (threads, forward)
    return kernel, xp.ascontiguousarray(weight.T if transposed else weight)


def with_product(hidden, rows, gates):
    """Whether a step of ``rows`` x ``hidden`` units and ``gates`` gates works out its products.

    Up to ``MAX_HIDDEN_WITH_PRODUCT`` units, and then: over warps, up to
    ``MAX_STEP_PRODUCT_OVER_WARPS`` multiply-adds a step; one thread a unit, up
    to ``MAX_HIDDEN_OVER_THREADS`` units. Wider steps take a cuBLAS product.
    """
    if hidden > MAX_HIDDEN_WITH_PRODUCT:
        return False
    if PRODUCTS_OVER_WARPS:
        return gates * rows * hidden * hidden <= MAX_STEP_PRODUCT_OVER_WARPS
    return hidden <= MAX_HIDDEN_OVER_THREADS


_FORWARD_BODY = lstm_forward_body(
    lambda k: f"i2h[gates{k}] + (h2h[gates{k}] + bias[j{k}])"  # as FullyConnected adds it
)
_BACKWARD_BODY = lstm_backward_body("dh_out[i] + dh_next[i]", "(dc_out[i] + dc_next[i])")

_SUMS_OF_GATES = product_sums(4, backward=False, warp=False)
# a layer step's place in the layer's buffers, forward
LAYER_FORWARD_POINTERS = """
    const long long NH = N * H;
    const T* const h_prev = &outputs[t * NH];  // this step's input state and output
    const T* const c_prev = &states[t * NH];
    T* const h = &outputs[(t + 1) * NH];
    T* const c = &states[(t + 1) * NH];
    T* const saved = &kept_all[t * 5 * NH];"""
_GATE_SUMS = LAYER_FORWARD_POINTERS + _SUMS_OF_GATES


def layer_forward_cell(sums=""):
    """A layer step's cell forward, each gate ``i2h + (sum + bias)``; ``sums`` run first."""

    def gate(offset):  # as the FullyConnected adds its bias to the product
        return f"i2h[gates{offset}] + (sum{GATE_OFFSETS.index(offset)} + bias[j{offset}])"

    return lstm_forward_body(gate, sums=sums)


_FORWARD_WITH_PRODUCT_BODY = layer_forward_cell(_GATE_SUMS)

# a layer step's place in the layer's buffers, backward
LAYER_BACKWARD_POINTERS = """
    const long long NH = N * H;
    const T* const saved = &kept_all[t * 5 * NH];
    const T* const c_prev = &states[t * NH];
    const T* const dc_next = &carried[((t + 1) % 2) * NH];  // zeros at the last step
    T* const d_c_prev = &carried[(t % 2) * NH];
    T* const d_gates = &d_gates_all[t * 4 * NH];
    const T* const d_gates_next = &d_gates_all[(M > 0 ? t + 1 : t) * 4 * NH];"""
_SUMS_OF_NEXT = product_sums(4, backward=True, warp=False)


def layer_backward_cell(sums=""):
    """A layer step's cell backward, the gradients from outside and the next step added."""
    return lstm_backward_body("dh_out[i] + from_next", "(dc_out[i] + dc_next[i])", sums=sums)


_BACKWARD_WITH_PRODUCT_BODY = layer_backward_cell(LAYER_BACKWARD_POINTERS + _SUMS_OF_NEXT)


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


def lstm_layer_forward_with_product(cupy, t, i2h, weight_t, bias, states, outputs, kept):
    """Time step ``t`` with its recurrent product, in the layer's buffers.

    ``states`` and ``outputs`` (T + 1, N, H) hold the begin state and output
    at 0; step ``t`` reads them at ``t`` and writes them at ``t + 1``, and
    writes ``kept`` (T, N, 5H) at ``t``. ``i2h`` (N, 4H) is the step's input
    projection (may be strided); ``weight_t`` (H, 4H) the weight transposed
    and ``bias`` (4H), C-contiguous. Whole buffers and a step number, not
    views of them: a view costs CuPy host time too, five a step.
    """
    _, rows, hidden = states.shape
    _per_unit(
        cupy,
        "rebind_lstm_layer_forward_with_product",
        "raw T i2h, raw T weight_t, raw T bias, int64 t, int64 N",
        "raw T states, raw T outputs, raw T kept_all",
        _FORWARD_WITH_PRODUCT_BODY,
        hidden,
        rows,
    )(i2h, weight_t, bias, t, rows, hidden, states, outputs, kept)


def lstm_layer_backward_with_product(
    cupy, t, last, kept, states, dc_out, dh_out, weight, d_gates, carried
):
    """Time step ``t`` backwards, the output's gradient from step ``t + 1`` worked out here.

    Reads the buffers of ``lstm_layer_forward_with_product`` and writes
    ``d_gates`` (T, N, 4H) at ``t``; the state's gradient goes between the
    steps through ``carried`` (2, N, H): step ``t`` reads it at
    ``(t + 1) % 2`` (zeros before the ``last`` step) and writes ``t % 2``.
    ``dc_out`` and ``dh_out`` (N, H) are what reaches the step's state and
    output from outside the layer; ``weight`` (4H, H), C-contiguous.
    """
    _, rows, hidden = states.shape
    terms = 0 if last else hidden  # the sums over the next step's gradients
    _per_unit(
        cupy,
        "rebind_lstm_layer_backward_with_product",
        "raw T kept_all, raw T states, raw T dc_out, raw T dh_out, raw T weight, "
        "int64 t, int64 M, int64 N",
        "raw T d_gates_all, raw T carried",
        _BACKWARD_WITH_PRODUCT_BODY,
        hidden,
        rows,
    )(
        kept,
        states,
        dc_out,
        dh_out,
        weight,
        t,
        terms,
        rows,
        hidden,
        d_gates,
        carried,
    )


# -- the RNN operator's LSTM (rebind.ops.rnn_cells), its recurrent products inside -------
# The operator's own step arithmetic (the sigmoid through tanh, the activated gates
# written over the pre-activations), each pre-activation read as ``g + sum``: the
# addition the step made when the product was added into g first. Step t's state
# comes from step ``prev`` (-1: the begin states h0, c0).


def _replaced(text, old, new):
    """``text`` with ``old`` replaced, which must occur exactly once."""
    if text.count(old) != 1:
        raise ValueError(f"kernel template: {old!r} occurs {text.count(old)} times, not once")
    return text.replace(old, new)


_BASE = "    const long long base = row * 4 * H + j;\n"
RNN_FORWARD_POINTERS = """
    const long long NH = N * H;
    T* const g = &gates_all[t * 4 * NH];
    const T* const h_prev = prev < 0 ? &h0[0] : &ys[prev * NH];
    const T* const c_prev = prev < 0 ? &c0[0] : &cells[prev * NH];
    T* const c = &cells[t * NH];
    T* const tanh_c = &tanh_cells[t * NH];
    T* const y = &ys[t * NH];
"""
# the operator's step with each gate's sum added where it read the gate
RNN_FORWARD_CELL = _RNN_LSTM_FORWARD_BODY
for _old, _new in (
    ("half * g[base])", "half * (g[base] + sum0))"),
    ("half * g[base + H])", "half * (g[base + H] + sum1))"),
    ("tanh(g[base + 2 * H])", "tanh(g[base + 2 * H] + sum2)"),
    ("half * g[base + 3 * H])", "half * (g[base + 3 * H] + sum3))"),
):
    RNN_FORWARD_CELL = _replaced(RNN_FORWARD_CELL, _old, _new)
_RNN_FORWARD_WITH_PRODUCT_BODY = _replaced(
    RNN_FORWARD_CELL, _BASE, _BASE + RNN_FORWARD_POINTERS + _SUMS_OF_GATES
)

RNN_BACKWARD_POINTERS = """
    const long long NH = N * H;
    const T* const g = &gates_all[t * 4 * NH];
    const T* const tanh_c = &tanh_cells[t * NH];
    const T* const c_prev = prev < 0 ? &c0[0] : &cells[prev * NH];
    const T* const dy = &dys[t * NH];
    const T* const dc = from_slot < 0 ? &dc_in[0] : &carried[from_slot * NH];
    T* const dc_prev = &carried[to_slot * NH];
    T* const d = &d_all[t * 4 * NH];
    const T* const d_gates_next = &d_all[(M > 0 ? later : t) * 4 * NH];"""
# the operator's step backward with the gradient from the next step (or the given one)
RNN_BACKWARD_CELL = _replaced(
    _RNN_LSTM_BACKWARD_BODY,
    "const T d_out = dy[i] + dh[i];",
    "const T d_out = dy[i] + (M > 0 ? from_next : dh_in[i]);",
)
_RNN_BACKWARD_WITH_PRODUCT_BODY = _replaced(
    RNN_BACKWARD_CELL, _BASE, _BASE + RNN_BACKWARD_POINTERS + _SUMS_OF_NEXT
)


def rnn_lstm_forward_with_product(cupy, t, prev, weight_t, h0, c0, gates, cells, tanh_cells, ys):
    """Step ``t`` of the RNN operator's LSTM, its recurrent product worked out here.

    ``gates`` (T, N, 4H) holds the input projections with the biases, and gets
    the activated gates; ``cells``, ``tanh_cells`` and ``ys`` (T, N, H) get the
    step's state, its tanh and its output. The state comes from step ``prev``
    (-1: ``h0``, ``c0``, (N, H)). ``weight_t`` (H, 4H) is the recurrent weight
    transposed; every array C-contiguous.
    """
    _, rows, hidden = cells.shape
    _per_unit(
        cupy,
        "rebind_rnn_lstm_forward_with_product",
        "raw T weight_t, raw T h0, raw T c0, int64 t, int64 prev, int64 N",
        "raw T gates_all, raw T cells, raw T tanh_cells, raw T ys",
        _RNN_FORWARD_WITH_PRODUCT_BODY,
        hidden,
        rows,
    )(weight_t, h0, c0, t, prev, rows, hidden, gates, cells, tanh_cells, ys)


def rnn_lstm_backward_with_product(
    cupy, t, prev, later, saved, c0, dys, dh_in, dc_in, weight, d_gates, carried, slots
):
    """Step ``t`` backwards, the output's gradient from step ``later`` worked out here.

    ``saved`` is ``(gates, cells, tanh_cells)`` of the forward; ``d_gates``
    (T, N, 4H) gets the step's gate gradients. ``later`` is the step run just
    before this one backwards (-1 for the first: its gradients are ``dh_in``
    and ``dc_in``, (N, H)); ``weight`` (4H, H). The state's gradient goes
    between the steps through ``carried`` (2, N, H): ``slots`` is
    ``(from, to)``, ``from`` -1 for the first step.
    """
    gates, cells, tanh_cells = saved
    _, rows, hidden = cells.shape
    terms = 0 if later < 0 else hidden
    _per_unit(
        cupy,
        "rebind_rnn_lstm_backward_with_product",
        "raw T gates_all, raw T tanh_cells, raw T cells, raw T c0, raw T dys, raw T dh_in, "
        "raw T dc_in, raw T weight, int64 t, int64 prev, int64 later, int64 M, int64 N, "
        "int64 from_slot, int64 to_slot",
        "raw T d_all, raw T carried",
        _RNN_BACKWARD_WITH_PRODUCT_BODY,
        hidden,
        rows,
    )(
        gates,
        tanh_cells,
        cells,
        c0,
        dys,
        dh_in,
        dc_in,
        weight,
        t,
        prev,
        later,
        terms,
        rows,
        *slots,
        hidden,
        d_gates,
        carried,
    )
