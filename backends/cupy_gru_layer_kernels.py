"""CuPy kernels of a whole unrolled GRU layer's time steps (``rebind.executor.fused_gru_layer``).

The GRU counterpart of ``cupy_layer_kernels``' ``lstm_layer_*_with_product``:
per time step one kernel forward and one backward, each (row, unit) thread
working out its unit's recurrent product sums, with MXNet's ``GRUCell``
arithmetic of the fused cell kernels (``cupy_rnn_kernels.gru_cell_*``, the
same template):

- forward: the three gates' sums of ``h_prev . W^T`` and the recurrent bias,
  added as the FullyConnected adds them (``sum + bias``), stand where the
  cell kernel reads ``h2h``; the step's output goes into the layer's output
  buffer and what backward needs (r, z, n, h2h_n) into its kept buffer;
- backward: the gradient reaching the step's output is what comes from
  outside the layer, plus the next step's direct term (``dh * z``, carried
  between the steps) and its product term (the next step's ``d_h2h . W``,
  worked out here); the cell's backward then writes ``d_i2h`` and
  ``d_h2h`` of the step (the weight's gradient is one product over all
  steps afterwards) and its direct term for the step before.

The RNN operator's GRU (``mx.sym.RNN``, FusedRNNCell) has the same: each
time step one kernel each way with its recurrent product inside, in the
operator's own step arithmetic (``cupy_rnn_kernels``' GRU step: the sigmoid
through tanh, the activated gates written over the input projections), each
``hh`` read as ``sum + b_h``, the value the step's product and bias addition
gave before.

Where ``cupy_layer_kernels.with_product`` says so (the caller's
check; wider layers run the fused cells' steps, or the operator's steps with
a cuBLAS product). Importing this module does not import CuPy.
"""

from .cupy_layer_kernels import _replaced
from .cupy_product_sums import product_sums
from .cupy_rnn_kernels import (
    _GRU_CELL_BACKWARD_BODY,
    _GRU_CELL_FORWARD_BODY,
    _RNN_GRU_BACKWARD_BODY,
    _RNN_GRU_FORWARD_BODY,
    _per_unit,
)

__all__ = [
    "gru_layer_backward_with_product",
    "gru_layer_forward_with_product",
    "rnn_gru_backward_with_product",
    "rnn_gru_forward_with_product",
]

_FORWARD_GATES = "    const long long gates = row * 3 * H + j;\n"
# a layer step's place in the layer's buffers, forward
FORWARD_POINTERS = """
    const long long NH = N * H;
    const T* const h_prev = &outputs[t * NH];  // this step's input state
    T* const h = &outputs[(t + 1) * NH];
    T* const saved = &kept_all[t * 4 * NH];"""
_SUMS_OF_GATES = product_sums(3, backward=False, warp=False)
# the cell's arithmetic with each gate's sum and bias where it read h2h
FORWARD_CELL = _GRU_CELL_FORWARD_BODY
for _old, _new in (
    ("h2h[gates]", "(sum0 + bias[j])"),
    ("h2h[gates + H]", "(sum1 + bias[j + H])"),
    ("h2h[gates + 2 * H]", "(sum2 + bias[j + 2 * H])"),
):
    FORWARD_CELL = _replaced(FORWARD_CELL, _old, _new)
_FORWARD_BODY = _replaced(
    FORWARD_CELL, _FORWARD_GATES, _FORWARD_GATES + FORWARD_POINTERS + _SUMS_OF_GATES
)

_BACKWARD_KEPT = "    const long long kept = row * 4 * H + j;\n"
# a layer step's place in the layer's buffers, backward
BACKWARD_POINTERS = """
    const long long NH = N * H;
    const T* const saved = &kept_all[t * 4 * NH];
    const T* const h_prev = &outputs[t * NH];
    const T* const carried_next = &carried[((t + 1) % 2) * NH];  // zeros at the last step
    T* const d_h_prev = &carried[(t % 2) * NH];
    T* const d_i2h = &d_i2h_all[t * 3 * NH];
    T* const d_h2h = &d_h2h_all[t * 3 * NH];
    const T* const d_h2h_next = &d_h2h_all[(M > 0 ? t + 1 : t) * 3 * NH];"""
_SUMS_OF_NEXT = product_sums(3, backward=True, warp=False, next_gradients="d_h2h_next")
# the cell's backward with the gradients from outside and from the next step
BACKWARD_CELL = _replaced(
    _GRU_CELL_BACKWARD_BODY,
    "const T d_out = dh[i];",
    "const T d_out = dh_out[i] + (carried_next[i] + from_next);",
)
_BACKWARD_BODY = _replaced(
    BACKWARD_CELL, _BACKWARD_KEPT, _BACKWARD_KEPT + BACKWARD_POINTERS + _SUMS_OF_NEXT
)


def gru_layer_forward_with_product(cupy, t, i2h, weight_t, bias, outputs, kept):
    """Time step ``t`` with its recurrent product, in the layer's buffers.

    ``outputs`` (T + 1, N, H) holds the begin state at 0; step ``t`` reads it
    at ``t`` and writes ``t + 1``, and writes ``kept`` (T, N, 4H) at ``t``.
    ``i2h`` (N, 3H) is the step's input projection (may be strided);
    ``weight_t`` (H, 3H) the recurrent weight transposed and ``bias`` (3H),
    C-contiguous.
    """
    _, rows, hidden = outputs.shape
    _per_unit(
        cupy,
        "rebind_gru_layer_forward_with_product",
        "raw T i2h, raw T weight_t, raw T bias, int64 t, int64 N",
        "raw T outputs, raw T kept_all",
        _FORWARD_BODY,
        hidden,
        rows,
    )(i2h, weight_t, bias, t, rows, hidden, outputs, kept)


def gru_layer_backward_with_product(
    cupy, t, last, kept, outputs, dh_out, weight, d_i2h, d_h2h, carried
):
    """Time step ``t`` backwards, the product term from step ``t + 1`` worked out here.

    Reads the buffers of ``gru_layer_forward_with_product``; writes ``d_i2h``
    and ``d_h2h`` (T, N, 3H) at ``t``. The direct term for the step before
    goes through ``carried`` (2, N, H): step ``t`` reads it at ``(t + 1) % 2``
    (zeros before the ``last`` step) and writes ``t % 2``. ``dh_out`` (N, H)
    is what reaches the step's output from outside the layer; ``weight``
    (3H, H), C-contiguous.
    """
    _, rows, hidden = outputs.shape
    terms = 0 if last else hidden  # the sums over the next step's gradients
    _per_unit(
        cupy,
        "rebind_gru_layer_backward_with_product",
        "raw T kept_all, raw T outputs, raw T dh_out, raw T weight, int64 t, int64 M, int64 N",
        "raw T d_i2h_all, raw T d_h2h_all, raw T carried",
        _BACKWARD_BODY,
        hidden,
        rows,
    )(kept, outputs, dh_out, weight, t, terms, rows, hidden, d_i2h, d_h2h, carried)


# -- the RNN operator's GRU (rebind.ops.rnn_cells): step t's state comes from step
# ``prev`` (-1: the begin state h0)
_RNN_BASE = "    const long long base = row * 3 * H + j;\n"
RNN_FORWARD_POINTERS = """
    const long long NH = N * H;
    T* const g = &gates_all[t * 3 * NH];
    const T* const h_prev = prev < 0 ? &h0[0] : &ys[prev * NH];
    T* const hidden_n = &hidden_ns[t * NH];
    T* const y = &ys[t * NH];"""
# the operator's step with each gate's sum and bias where it read hh
_HN = "    const T hn = sum2 + bh[j + 2 * H];\n"
RNN_FORWARD_CELL = _replaced(_RNN_GRU_FORWARD_BODY, _RNN_BASE, _RNN_BASE + _HN)
for _old, _new in (
    ("(g[base] + hh[base])", "(g[base] + (sum0 + bh[j]))"),
    ("(g[base + H] + hh[base + H])", "(g[base + H] + (sum1 + bh[j + H]))"),
    ("reset * hh[base + 2 * H]", "reset * hn"),
    ("hidden_n[i] = hh[base + 2 * H];", "hidden_n[i] = hn;"),
):
    RNN_FORWARD_CELL = _replaced(RNN_FORWARD_CELL, _old, _new)
_RNN_FORWARD_BODY = _replaced(
    RNN_FORWARD_CELL, _RNN_BASE + _HN, _RNN_BASE + RNN_FORWARD_POINTERS + _SUMS_OF_GATES + _HN
)

RNN_BACKWARD_POINTERS = """
    const long long NH = N * H;
    const T* const g = &gates_all[t * 3 * NH];
    const T* const hidden_n = &hidden_ns[t * NH];
    const T* const h_prev = prev < 0 ? &h0[0] : &ys[prev * NH];
    const T* const dy = &dys[t * NH];
    const T* const carried_next = from_slot < 0 ? &dh_in[0] : &carried[from_slot * NH];
    T* const carry = &carried[to_slot * NH];
    T* const d = &d_all[t * 3 * NH];
    T* const d_hidden = &d_hidden_all[t * 3 * NH];
    const T* const d_h2h_next = &d_hidden_all[(M > 0 ? later : t) * 3 * NH];"""
# the next step's gradient reaching this step's output: its direct term (carried) and
# its projection's (its d_hidden . W_h, summed here; ``dh_in`` alone at the first step)
RNN_BACKWARD_CELL = _replaced(
    _RNN_GRU_BACKWARD_BODY,
    "const T d_out = dy[i] + dh[i];",
    "const T d_out = dy[i] + (carried_next[i] + from_next);",
)
_RNN_BACKWARD_BODY = _replaced(
    RNN_BACKWARD_CELL, _RNN_BASE, _RNN_BASE + RNN_BACKWARD_POINTERS + _SUMS_OF_NEXT
)


def rnn_gru_forward_with_product(cupy, t, prev, weight_t, bias, h0, gates, hidden_ns, ys):
    """Step ``t`` of the RNN operator's GRU, its recurrent product worked out here.

    ``gates`` (T, N, 3H) holds the input projections with their biases, and
    gets the activated gates; ``hidden_ns`` and ``ys`` (T, N, H) get the
    step's ``h2h_n`` and output. The state comes from step ``prev`` (-1:
    ``h0``, (N, H)). ``weight_t`` (H, 3H) is the recurrent weight transposed,
    ``bias`` (3H) the recurrent bias; every array C-contiguous.
    """
    _, rows, hidden = ys.shape
    _per_unit(
        cupy,
        "rebind_rnn_gru_forward_with_product",
        "raw T weight_t, raw T bh, raw T h0, int64 t, int64 prev, int64 N",
        "raw T gates_all, raw T hidden_ns, raw T ys",
        _RNN_FORWARD_BODY,
        hidden,
        rows,
    )(weight_t, bias, h0, t, prev, rows, hidden, gates, hidden_ns, ys)


def rnn_gru_backward_with_product(
    cupy, t, prev, later, saved, h0, ys, dys, dh_in, weight, d_gates, d_hidden, carried, slots
):
    """Step ``t`` backwards, the gradient from step ``later`` worked out here.

    ``saved`` is ``(gates, hidden_ns)`` of the forward, ``ys`` its outputs;
    ``d_gates`` and ``d_hidden`` (T, N, 3H) get the step's gradients of the
    input and of the recurrent projection. ``later`` is the step run just
    before this one backwards (-1 for the first: its gradient is ``dh_in``,
    (N, H)); ``weight`` (3H, H). The direct term goes between the steps
    through ``carried`` (2, N, H): ``slots`` is ``(from, to)``, ``from`` -1
    for the first step.
    """
    gates, hidden_ns = saved
    _, rows, hidden = ys.shape
    terms = 0 if later < 0 else hidden
    _per_unit(
        cupy,
        "rebind_rnn_gru_backward_with_product",
        "raw T gates_all, raw T hidden_ns, raw T h0, raw T ys, raw T dys, raw T dh_in, "
        "raw T weight, int64 t, int64 prev, int64 later, int64 M, int64 N, "
        "int64 from_slot, int64 to_slot",
        "raw T d_all, raw T d_hidden_all, raw T carried",
        _RNN_BACKWARD_BODY,
        hidden,
        rows,
    )(
        gates, hidden_ns, h0, ys, dys, dh_in, weight, t, prev, later, terms, rows, *slots,
        hidden, d_gates, d_hidden, carried,
    )  # fmt: skip
