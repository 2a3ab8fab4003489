"""An unrolled LSTM layer's time steps as one plan step on a GPU (``mx.rnn.LSTMCell``).

(``find_layers`` finds unrolled GRU layers too; ``fused_gru_layer`` runs them.)

After ``fused_lstm`` an unrolled layer is, per time step, a recurrent
``FullyConnected`` (``h2h = h_prev . W^T + b``) and a fused cell step; the
weight and bias are the same variables at every step. On a GPU each of those
steps costs the executor's dispatch and a few launches, and backward adds the
gradients reaching each step's output and state as separate arrays: for the
LSTM LM of ``benchmarks/gpu.py`` (two layers of 35 steps) that is most of a
batch's host time, the device being idle meanwhile.

Here a chain of such steps (each cell reading the last one's state and, through
its projection, its output) becomes one step (``optimize`` places it where
its inputs are ready, keeping the order of the other steps). Its inputs are
every step's input projection, the weight, the bias and the begin states;
its outputs the states and outputs that something outside the layer reads.
On a GPU (``fusable``) it runs per time step one kernel forward
(``cupy_layer_kernels``: the recurrent product, the bias added as the
FullyConnected adds it, then the cell's arithmetic) and one kernel backward
(the gradients from outside and from the next step added in it). For layers
wider than ``cupy_layer_kernels.with_product`` allows the recurrent
products are cuBLAS's instead, one a step each way, beside the kernels. With
``cupy_layer_kernels.PRODUCTS_OVER_WARPS`` (the default) each unit's products are split
over a warp of 32 threads (``cupy_layer_warp_kernels``). The
weight's gradient is one product over all steps and the bias's one sum, as
``ops/weight_terms`` makes them. Values agree with the fused cells' to float
rounding (sums in another order).

Elsewhere (float16, or NumPy arrays) the step runs the replaced steps
themselves, in their order, with the gradients summed as the executor sums
them. The rewrite is made for GPU contexts only (``ANY_DEVICE`` lets tests make
it on the CPU), so CPU plans keep their bit-for-bit equality with the plain
graph.
"""

import attrs

from rebind.backends import cupy_gemm as gemm
from rebind.backends import cupy_layer_kernels as kernels
from rebind.backends import cupy_layer_warp_kernels as warps
from rebind.backends.cupy_kernels import fusable

from ..ops.base import OpDef
from ..ops.nn import bias_gradient
from .fused_lstm import _not_for_symbols
from .fused_ops import replaced, run_replaced
from .inplace_grads import readers_of

__all__ = [
    "ANY_DEVICE",
    "LSTM_LAYER",
    "LayerParams",
    "find_layers",
    "layer_step",
    "plus",
    "projection_backward",
]

# make the rewrite for every context, not only GPUs (tests)
ANY_DEVICE = False


@attrs.frozen(eq=False)
class LayerParams:
    """The replaced steps and which of the layer's values are the step's outputs.

    ``steps`` holds, per time step, ``(projection, cell)``, each ``(op, train
    ctx, infer ctx, params)``; ``outputs`` holds ``(time step, the cell's
    output: an LSTM's 0 for the state, 1 for the output; a GRU's 0)`` per
    output of the step.
    """

    count: int
    steps: tuple
    outputs: tuple


def _layer_forward(ctx, p, inputs, aux):
    count = p.count
    steps_in, (weight, bias, h_begin, c_begin) = inputs[:count], inputs[count:]
    xp = ctx.xp
    if not fusable(weight, bias, h_begin, c_begin, *steps_in):
        return _plain_forward(ctx, p, steps_in, weight, bias, h_begin, c_begin)
    rows, hidden = c_begin.shape
    dtype = c_begin.dtype
    # every step's state and output, after the begin states (backward reads them all)
    states = xp.empty((count + 1, rows, hidden), dtype=dtype)
    outputs = xp.empty((count + 1, rows, hidden), dtype=dtype)
    states[0], outputs[0] = c_begin, h_begin
    kept = xp.empty((count, rows, 5 * hidden), dtype=dtype)
    if kernels.with_product(hidden, rows, 4):
        forward, read = kernels.products_kernel(
            xp,
            kernels.lstm_layer_forward_with_product,
            warps.lstm_layer_forward_over_warps,
            weight,
            forward=True,
        )
        for t in range(count):
            forward(xp, t, steps_in[t], read, bias, states, outputs, kept)
    else:
        weight_t = weight.T
        for t in range(count):
            h2h = gemm.matmul(xp, outputs[t], weight_t)
            kernels.lstm_layer_forward(
                xp, steps_in[t], h2h, bias, states[t], states[t + 1], outputs[t + 1], kept[t]
            )
    values = [(states, outputs)[which][t + 1] for t, which in p.outputs]
    return values, (("fused", states, outputs, kept, weight) if ctx.is_train else None)


def _plain_forward(ctx, p, steps_in, weight, bias, h_prev, c_prev):
    """The replaced steps themselves, in their order."""
    saved, values = [], []
    for t, (projection, cell) in enumerate(p.steps):
        (h2h,), projection_state = run_replaced(ctx, projection, [h_prev, weight, bias])
        (c_prev, h_prev), cell_state = run_replaced(ctx, cell, [steps_in[t], h2h, c_prev])
        values.append((c_prev, h_prev))
        saved.append((projection_state, cell_state))
    outputs = [values[t][which] for t, which in p.outputs]
    return outputs, (("steps", saved) if ctx.is_train else None)


def _layer_backward(ctx, p, saved, out_grads, need_grad):
    count = p.count
    reaching = [[None, None] for _ in range(count)]  # per step: (state, output) gradients
    for (t, which), grad in zip(p.outputs, out_grads, strict=True):
        reaching[t][which] = grad
    if saved[0] == "steps":
        return _plain_backward(p, saved[1], reaching, need_grad)
    _, states, outputs, kept, weight = saved
    xp = ctx.xp
    _, rows, hidden = states.shape
    zeros = xp.zeros((rows, hidden), dtype=states.dtype)
    d_gates = xp.empty((count, rows, 4 * hidden), dtype=states.dtype)
    if kernels.with_product(hidden, rows, 4):
        # the state's gradient between steps, in turns (zeros before the last step)
        carried = xp.zeros((2, rows, hidden), dtype=states.dtype)
        backward, read = kernels.products_kernel(
            xp,
            kernels.lstm_layer_backward_with_product,
            warps.lstm_layer_backward_over_warps,
            weight,
            forward=False,
        )
        for t in range(count - 1, -1, -1):
            dc_out, dh_out = (zeros if g is None else g for g in reaching[t])
            backward(xp, t, t == count - 1, kept, states, dc_out, dh_out, read, d_gates, carried)
        dc_next = carried[0]  # step 0 wrote it
    else:
        dc_next = dh_next = zeros
        for t in range(count - 1, -1, -1):
            dc_out, dh_out = (zeros if g is None else g for g in reaching[t])
            d_c_prev = xp.empty((rows, hidden), dtype=states.dtype)
            kernels.lstm_layer_backward(
                xp, kept[t], states[t], dc_out, dc_next, dh_out, dh_next, d_gates[t], d_c_prev
            )
            dc_next = d_c_prev
            if t:
                dh_next = gemm.matmul(xp, d_gates[t], weight)
    dh_next = gemm.matmul(xp, d_gates[0], weight) if need_grad[count + 2] else None
    grads = [d_gates[t] if need_grad[t] else None for t in range(count)]
    flat = d_gates.reshape(count * rows, 4 * hidden)
    inputs = outputs[:count].reshape(count * rows, hidden)
    grads.append(gemm.matmul(xp, flat.T, inputs) if need_grad[count] else None)
    grads.append(bias_gradient(xp, flat) if need_grad[count + 1] else None)
    grads.append(dh_next if need_grad[count + 2] else None)
    grads.append(dc_next if need_grad[count + 3] else None)
    return grads


def _plain_backward(p, saved, reaching, need_grad):
    """The replaced steps' backward, last step first, summing as the executor sums."""
    count = p.count
    grads = [None] * (count + 4)
    dh_next = dc_next = None
    for t in range(count - 1, -1, -1):
        (projection, cell), (projection_state, cell_state) = p.steps[t], saved[t]
        dc = plus(reaching[t][0], dc_next)
        dh = plus(reaching[t][1], dh_next)
        if dc is None and dh is None:
            dh_next = dc_next = None
            continue
        _, cell_train, _, cell_params = cell
        d_in, d_h2h, dc_next = cell[0].backward(
            cell_train, cell_params, cell_state, [dc, dh], [need_grad[t], True, True]
        )
        grads[t] = d_in
        dh_next = projection_backward(projection, projection_state, d_h2h, grads, need_grad, count)
    grads[count + 2], grads[count + 3] = dh_next, dc_next
    return [g if needed else None for g, needed in zip(grads, need_grad, strict=True)]


def projection_backward(projection, state, d_h2h, grads, need_grad, count):
    """A replaced recurrent projection's backward: its input's gradient.

    Its weight's and bias's gradients are added into ``grads`` at ``count`` and
    ``count + 1`` (the layer step's arguments after the ``count`` step inputs).
    """
    op, train_ctx, _, params = projection
    needed = [True, need_grad[count], need_grad[count + 1]]
    d_input, d_weight, d_bias = op.backward(train_ctx, params, state, [d_h2h], needed)
    grads[count] = plus(grads[count], d_weight)
    grads[count + 1] = plus(grads[count + 1], d_bias)
    return d_input


def plus(total, term):
    """``total + term``, either of which may be None (no gradient)."""
    if total is None:
        return term
    return total if term is None else total + term


LSTM_LAYER = OpDef(
    name="_fused_LSTMLayer",
    params=LayerParams,
    arguments=lambda p: (
        *(f"i2h{t}" for t in range(p.count)),
        "h2h_weight",
        "h2h_bias",
        "h_begin",
        "c_begin",
    ),
    outputs=lambda p: tuple(f"{('state', 'out')[which]}{t}" for t, which in p.outputs),
    infer_shape=_not_for_symbols,
    forward=_layer_forward,
    backward=_layer_backward,
    doc="The time steps of an unrolled LSTM layer (projection and cell) as one step.",
)


# -- finding the layers ------------------------------------------------------------------


# a fused cell's op -> (the layer's kind, which of its outputs the next projection reads)
_CELLS = {"_fused_LSTMCell": ("lstm", 1), "_fused_GRUCell": ("gru", 0)}


class _Layer:
    """A chain of ``(projection, cell)`` steps sharing the projection's weight and bias."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.members = [step for pair in pairs for step in pair]
        self.kind = _CELLS[pairs[0][1].op.name][0]


def find_layers(plan):
    """The chains of fused LSTM or GRU cells of ``plan`` that one step can replace."""
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    readers = {slot: [s for s, _ in found] for slot, found in readers_of(plan).items()}
    projection_of = {}
    for cell in plan.steps:
        projection = _recurrent_projection(plan, cell, producers, readers)
        if projection is not None:
            projection_of[id(cell)] = projection
    cells = {id(c): c for c in plan.steps if id(c) in projection_of}
    following = {}
    for cell in cells.values():
        # the next cell reads this one's state (an LSTM's c, a GRU's h), and its projection
        # this one's output (h)
        after = [r for r in readers.get(cell.outputs[0], []) if id(r) in cells]
        after = [r for r in after if r.op.name == cell.op.name]
        if len(after) == 1 and after[0].inputs[2] == cell.outputs[0]:
            successor, out = after[0], _CELLS[cell.op.name][1]
            mine, theirs = projection_of[id(cell)], projection_of[id(successor)]
            if theirs.inputs[0] == cell.outputs[out] and theirs.inputs[1:] == mine.inputs[1:]:
                following[id(cell)] = successor
    preceded = {id(s) for s in following.values()}
    layers = []
    for cell in cells.values():
        if id(cell) in preceded:
            continue
        chain = [cell]
        while id(chain[-1]) in following:
            chain.append(following[id(chain[-1])])
        if len(chain) > 1:
            layers.append(_Layer([(projection_of[id(c)], c) for c in chain]))
    return layers


def _recurrent_projection(plan, cell, producers, readers):
    """The biased FullyConnected whose output only ``cell`` reads as its ``h2h``, or None.

    A GRU cell's projection must read the cell's own ``h_prev``.
    """
    if cell.op.name not in _CELLS or cell.moves or cell.aux:
        return None
    if not (ANY_DEVICE or cell.context.device_type == "gpu"):
        return None
    projection = producers.get(cell.inputs[1])
    if projection is None or projection.op.name != "FullyConnected":
        return None
    if projection.params.no_bias or len(projection.inputs) != 3 or projection.moves:
        return None
    if projection.context != cell.context or projection.aux:
        return None
    h2h = cell.inputs[1]
    if readers.get(h2h) != [cell] or h2h in plan.kept_slots:
        return None
    if cell.op.name == "_fused_GRUCell" and projection.inputs[0] != cell.inputs[2]:
        return None
    return projection


def _inputs(layer):
    first_projection, first_cell = layer.pairs[0]
    steps_in = [cell.inputs[0] for _, cell in layer.pairs]
    weight, bias = first_projection.inputs[1:]
    begin = [first_projection.inputs[0]]  # h (a GRU cell's h_prev); an LSTM's c too
    if layer.kind == "lstm":
        begin.append(first_cell.inputs[2])
    return [*steps_in, weight, bias, *begin]


def layer_step(plan, layer):
    """The step standing for ``layer``'s steps (the caller places it; see ``optimize``).

    Its outputs are the states and outputs that a step outside the layer reads, or
    that outlive the pass (heads).
    """
    members = {id(s) for s in layer.members}
    outside = [s for s in plan.steps if id(s) not in members]
    read_outside = {slot for s in outside for slot in (*s.inputs, *s.aux)}
    wanted = read_outside | plan.kept_slots
    outputs, slots, names = [], [], []
    for t, (_, cell) in enumerate(layer.pairs):
        for which, slot in enumerate(cell.outputs):
            if slot in wanted:
                outputs.append((t, which))
                slots.append(slot)
                names.append(cell.output_names[which])
    params = LayerParams(
        count=len(layer.pairs),
        steps=tuple(tuple(replaced(s) for s in pair) for pair in layer.pairs),
        outputs=tuple(outputs),
    )
    first_cell, last_cell = layer.pairs[0][1], layer.pairs[-1][1]
    if layer.kind == "gru":
        from .fused_gru_layer import GRU_LAYER as op  # noqa: PLC0415 (it imports this module)
    else:
        op = LSTM_LAYER
    step = type(first_cell)(
        last_cell.node,
        op,
        first_cell.context,
        _inputs(layer),
        [],
        slots,
        tuple(plan.slot_shapes[s] for s in slots),
        name=f"{layer.pairs[0][0].name}..{last_cell.name}",
        params=params,
        output_names=names,
    )
    return step
