"""An LSTM or GRU cell's element-wise part as one plan step (``mx.rnn``'s cells).

Each time step of ``LSTMCell`` is eleven operators after its two projections:
``s = i2h + h2h``, ``SliceChannel(s, 4)``, sigmoid/sigmoid/tanh/sigmoid of the
four parts (i, f, g, o), ``c = f * c_prev + i * g``, ``h = o * tanh(c)``. The
rewrite finds that pattern in a plan and puts one step in its place, taking
``(i2h, h2h, c_prev)`` and giving ``(c, h)``; every value in between has no
reader outside the cell, and is never a head.

``GRUCell`` is thirteen: two ``SliceChannel(., 3)`` of its projections, the
reset and update gates ``sigmoid(i2h_r + h2h_r)``, ``sigmoid(i2h_z + h2h_z)``,
``n = tanh(i2h_n + r * h2h_n)`` and ``h = (1 - z) * n + z * h_prev``; its step
takes ``(i2h, h2h, h_prev)`` and gives ``h``.

On the CPU the step runs the replaced kernels themselves, in their order, with
their parameters, so results are the plain graph's bit for bit (fewer steps,
less work per step in the executor). On the GPU it runs one fused kernel
forward and one backward (``backends/cupy_rnn_kernels.py``): the gates of a batch
in one launch instead of about twenty.
"""

import attrs

from rebind.backends.cupy_kernels import fusable

from ..ops.base import OpDef
from . import fused_gru
from .inplace_grads import readers_of

__all__ = ["GRU_CELL", "LSTM_CELL", "CellParams", "find_cells", "fused_cell_step", "place"]


@attrs.frozen
class CellParams:
    """The replaced steps, in plan order, and where the cell's inputs and outputs live.

    ``kind`` is ``"lstm"`` or ``"gru"``. ``inner`` holds ``(op, train_ctx,
    infer_ctx, params, input slots, output slots)`` per replaced step;
    ``inputs`` the slots of i2h, h2h and c_prev (LSTM) or h_prev (GRU);
    ``outputs`` those of c and h (LSTM) or h (GRU).
    """

    kind: str
    inner: tuple
    inputs: tuple
    outputs: tuple


def _not_for_symbols(p, in_shapes, out_shapes, aux_shapes):
    raise TypeError("the fused cell and layer steps exist only inside compiled plans")


def _cell_forward(ctx, p, inputs, aux):
    if fusable(*inputs):
        from rebind.backends import cupy_rnn_kernels as cupy_kernels

        if p.kind == "gru":
            h, saved = cupy_kernels.gru_cell_forward(ctx.xp, *inputs)
            return [h], ("fused", saved, inputs[2])
        c, h, saved = cupy_kernels.lstm_cell_forward(ctx.xp, *inputs)
        return [c, h], ("fused", saved, inputs[2])
    values = dict(zip(p.inputs, inputs, strict=True))
    states = []
    for op, train_ctx, infer_ctx, params, ins, outs in p.inner:
        run_ctx = train_ctx if ctx.is_train else infer_ctx
        results, state = op.forward(run_ctx, params, [values[s] for s in ins], [])
        values.update(zip(outs, results, strict=False))
        states.append(state if ctx.is_train else None)
    return [values[s] for s in p.outputs], ("steps", states, None)


def _cell_backward(ctx, p, saved, out_grads, need_grad):
    kind, states, previous_state = saved
    if kind == "fused":
        from rebind.backends import cupy_rnn_kernels as cupy_kernels

        if p.kind == "gru":
            d_i2h, d_h2h, d_prev = cupy_kernels.gru_cell_backward(
                ctx.xp, states, previous_state, out_grads[0]
            )
        else:
            d_i2h, d_prev = cupy_kernels.lstm_cell_backward(
                ctx.xp, states, previous_state, *out_grads
            )
            # the gates' sum gives both projections the same gradient: one array, as the
            # CPU's elemwise_add backward gives (its readers only read it)
            d_h2h = d_i2h if need_grad[1] else None
        return [g if n else None for g, n in zip((d_i2h, d_h2h, d_prev), need_grad, strict=True)]
    grads = {s: g for s, g in zip(p.outputs, out_grads, strict=True) if g is not None}
    wanted = dict(zip(p.inputs, need_grad, strict=True))
    for (op, train_ctx, _, params, ins, outs), state in zip(
        reversed(p.inner), reversed(states), strict=True
    ):
        incoming = [grads.pop(s, None) for s in outs]
        if all(g is None for g in incoming):
            continue
        if any(g is None for g in incoming):  # SliceChannel: a part nothing reads
            shape = _part_shape(state, len(outs))
            incoming = [
                ctx.xp.zeros(shape, _dtype_of(incoming)) if g is None else g for g in incoming
            ]
        needed = [wanted.get(s, True) for s in ins]
        in_grads = op.backward(train_ctx, params, state, incoming, needed)
        for slot, grad, need in zip(ins, in_grads, needed, strict=True):
            if need and grad is not None:
                previous = grads.get(slot)
                grads[slot] = grad if previous is None else previous + grad
    return [grads.get(s) if n else None for s, n in zip(p.inputs, need_grad, strict=True)]


def _part_shape(state, parts):
    """The shape of one of ``parts`` SliceChannel parts, from its saved ``(axis, data shape)``."""
    axis, shape = state
    return (*shape[:axis], shape[axis] // parts, *shape[axis + 1 :])


def _dtype_of(grads):
    return next(g.dtype for g in grads if g is not None)


LSTM_CELL = OpDef(
    name="_fused_LSTMCell",
    params=CellParams,
    arguments=lambda p: ("i2h", "h2h", "c_prev"),
    outputs=lambda p: ("state", "out"),
    infer_shape=_not_for_symbols,
    forward=_cell_forward,
    backward=_cell_backward,
    doc="The element-wise part of an LSTM cell (gates, state, output) as one step.",
)

GRU_CELL = OpDef(
    name="_fused_GRUCell",
    params=CellParams,
    arguments=lambda p: ("i2h", "h2h", "h_prev"),
    outputs=lambda p: ("out",),
    infer_shape=_not_for_symbols,
    forward=_cell_forward,
    backward=_cell_backward,
    doc="The element-wise part of a GRU cell (gates, candidate, output) as one step.",
)


# -- finding the pattern ----------------------------------------------------------------

# the gates in SliceChannel's order: input, forget, transform, output
_GATE_ACTS = ("sigmoid", "sigmoid", "tanh", "sigmoid")


class _Match:
    """One cell found in a plan: its steps and its outer slots."""

    def __init__(self, steps, inputs, outputs, kind="lstm"):
        self.steps, self.inputs, self.outputs, self.kind = steps, inputs, outputs, kind


def find_cells(plan):
    """The LSTM cells of ``plan`` that one step can replace (see the module doc)."""
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    readers = {slot: [s for s, _ in found] for slot, found in readers_of(plan).items()}
    found = []
    for step in plan.steps:
        match = _match_at(step, plan, producers, readers)
        if match is None:
            match = fused_gru.match_at(step, plan, producers, readers, _gru_match)
        if match is not None:
            found.append(match)
    return found


def _gru_match(steps, inputs, outputs):
    return _Match(steps, inputs, outputs, kind="gru")


def _match_at(split, plan, producers, readers):
    """The cell whose SliceChannel is ``split``, or None."""
    if split.op.name != "SliceChannel" or split.params.num_outputs != 4:
        return None
    if split.params.squeeze_axis or split.params.axis not in (1, -1):
        return None
    shape = plan.slot_shapes[split.inputs[0]]
    if shape is None or len(shape) != 2:
        return None
    kept = plan.kept_slots

    def only_reader(slot, op_name):
        found = readers.get(slot, [])
        if len(found) != 1 or slot in kept or found[0].op.name != op_name:
            return None
        return found[0]

    add = producers.get(split.inputs[0])
    if add is None or add.op.name != "elemwise_add":
        return None
    if only_reader(add.outputs[0], "SliceChannel") is not split:
        return None
    gates = []
    for slot, act_type in zip(split.outputs, _GATE_ACTS, strict=True):
        act = only_reader(slot, "Activation")
        if act is None or act.params.act_type != act_type:
            return None
        gates.append(act)
    in_gate, forget_gate, transform, out_gate = gates
    forget_mul = only_reader(forget_gate.outputs[0], "elemwise_mul")
    input_mul = only_reader(in_gate.outputs[0], "elemwise_mul")
    if forget_mul is None or input_mul is None or forget_mul.inputs[0] != forget_gate.outputs[0]:
        return None
    if input_mul.inputs != [in_gate.outputs[0], transform.outputs[0]]:
        return None
    if readers.get(transform.outputs[0]) != [input_mul]:
        return None
    state_add = only_reader(forget_mul.outputs[0], "elemwise_add")
    if state_add is None or state_add.inputs != [forget_mul.outputs[0], input_mul.outputs[0]]:
        return None
    if readers.get(input_mul.outputs[0]) != [state_add]:
        return None
    state = state_add.outputs[0]
    tanh = next((r for r in readers.get(state, []) if r.op.name == "Activation"), None)
    if tanh is None or tanh.params.act_type != "tanh":
        return None
    out_mul = only_reader(tanh.outputs[0], "elemwise_mul")
    if out_mul is None or out_mul.inputs != [out_gate.outputs[0], tanh.outputs[0]]:
        return None
    if readers.get(out_gate.outputs[0]) != [out_mul]:
        return None
    steps = [add, split, *gates, forget_mul, input_mul, state_add, tanh, out_mul]
    if any(s.moves or s.context != split.context or s.aux for s in steps):
        return None
    c_prev = forget_mul.inputs[1]
    if c_prev in [s2 for s in steps for s2 in s.outputs]:
        return None
    return _Match(steps, (add.inputs[0], add.inputs[1], c_prev), (state, out_mul.outputs[0]))


def fused_cell_step(plan, match):
    """The step standing for ``match``'s eleven, placed where the last of them was."""
    order = {id(step): k for k, step in enumerate(plan.steps)}
    inner = sorted(match.steps, key=lambda s: order[id(s)])
    params = CellParams(
        kind=match.kind,
        inner=tuple(
            (s.op, s.train_ctx, s.infer_ctx, s.params, tuple(s.inputs), tuple(s.outputs))
            for s in inner
        ),
        inputs=match.inputs,
        outputs=match.outputs,
    )
    last = inner[-1]
    shapes = tuple(plan.slot_shapes[s] for s in match.outputs)
    names = [f"{last.name}_state", f"{last.name}_output"] if match.kind == "lstm" else None
    return type(last)(
        last.node,
        LSTM_CELL if match.kind == "lstm" else GRU_CELL,
        last.context,
        list(match.inputs),
        [],
        list(match.outputs),
        shapes,
        name=f"{inner[0].name}..{last.name}",
        params=params,
        output_names=names or [f"{last.name}_output"],
    )


def place(plan, match):
    """Put the fused step in ``plan.steps`` instead of ``match``'s; the step, or None.

    The step goes where the last of the eleven was, so nothing outside the cell
    may read its state between the first and the last of them (then nothing
    changes and None is returned).
    """
    position = {id(step): k for k, step in enumerate(plan.steps)}
    inner = {id(step) for step in match.steps}
    first = min(position[id(s)] for s in match.steps)
    last = max(position[id(s)] for s in match.steps)
    outputs = set(match.outputs)
    for step in plan.steps[first:last]:
        if id(step) not in inner and outputs.intersection((*step.inputs, *step.aux)):
            return None
    fused = fused_cell_step(plan, match)
    plan.steps = [
        fused if position[id(step)] == last else step
        for step in plan.steps
        if id(step) not in inner or position[id(step)] == last
    ]
    return fused
