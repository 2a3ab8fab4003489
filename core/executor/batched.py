"""Batched projections: the FullyConnected steps of several time steps as one product.

Unrolled cells apply one projection (weight and bias shared) to every time
step's input. Where those inputs do not depend on each other's outputs, the
steps become one ``_batched_FullyConnected`` step (``fused_ops``): its
inputs stacked, or the SliceChannel they came from read as one array along
its time axis. The plan's order is then worked out again (``stable_order``),
keeping the order of the steps that draw random numbers, run user code or
update aux states (``ordered_sequence``). See ``optimize`` for the others.
"""

import heapq

from .fused_ops import BATCHED_FULLY_CONNECTED, BatchedParams

__all__ = [
    "batch_group",
    "group_name",
    "ordered_sequence",
    "projection_groups",
    "shared_weight_groups",
    "stable_order",
    "use_counts",
]


# ops whose relative order must not change: they draw random numbers or run user code
_ORDERED_OPS = ("Dropout", "LeakyReLU", "Custom", "_CrossDeviceCopy")
_ORDERED_PREFIXES = (
    "_random_",
    "_sample_",
    "random_",
    "sample_",
    "_npi_random",
    "_image_random_",
)


def group_name(group):
    """The batched step's name: its first and last member's."""
    return f"{group[0].name}..{group[-1].name}"


# -- finding the groups --------------------------------------------------------------------


def projection_groups(plan):
    """FullyConnected steps sharing weight, bias and parameters, on 2-D inputs; each >= 2."""
    groups = {}
    for step in _argument_weight_products(plan):
        data, weight, *bias = step.inputs
        shape = plan.slot_shapes[data]
        if shape is None or len(shape) != 2 or not all(shape):
            continue
        key = (weight, tuple(bias), step.params, step.context, shape)
        groups.setdefault(key, []).append(step)
    return [g for g in groups.values() if len(g) > 1 and len({s.inputs[0] for s in g}) == len(g)]


def _argument_weight_products(plan):
    """The FullyConnected steps (not rewritten ones) whose weight and bias are arguments."""
    arguments = set(plan.arg_slots)
    for step in plan.steps:
        if step.op.name != "FullyConnected" or step.moves or step.aux:
            continue
        if all(slot in arguments for slot in step.inputs[1:]):
            yield step


def shared_weight_groups(plan):
    """FullyConnected steps left unbatched that share an argument weight (and bias): each >= 2.

    The recurrent (h2h) projections of an unrolled cell: their weight
    gradients are summed once over all steps (``ops/weight_terms.py``).
    """
    groups = {}
    for step in _argument_weight_products(plan):
        groups.setdefault((*step.inputs[1:], step.context), []).append(step)
    return [group for group in groups.values() if len(group) > 1]


def _independent(steps, group):
    """Whether no member's data input depends on any member's output."""
    members = {id(s) for s in group}
    tainted = {slot for s in group for slot in s.outputs}
    data_slots = {s.inputs[0] for s in group}
    for step in steps:
        if id(step) in members:
            if step.inputs[0] in tainted:
                return False
            continue
        if any(slot in tainted for slot in (*step.inputs, *step.aux)):
            tainted.update(step.outputs)
    return not (data_slots & tainted)


def _split_source(plan, group):
    """The SliceChannel step whose outputs are exactly the members' inputs, or None.

    Returns ``(split step, members in time order, time axis)``.
    """
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    split = producers.get(group[0].inputs[0])
    if split is None or split.node.op.name != "SliceChannel" or split.moves:
        return None
    params, source_shape = split.params, plan.slot_shapes[split.inputs[0]]
    if not params.squeeze_axis or len(split.outputs) != len(group) or source_shape is None:
        return None
    if len(source_shape) != 3:
        return None
    axis = params.axis + 3 if params.axis < 0 else params.axis
    if axis not in (0, 1):
        return None
    by_slot = {s.inputs[0]: s for s in group}
    if set(by_slot) != set(split.outputs):
        return None
    heads = set(plan.head_slots)
    uses = use_counts(plan.steps)
    if any(uses.get(slot) != 1 or slot in heads for slot in split.outputs):
        return None
    return split, [by_slot[slot] for slot in split.outputs], axis


# -- rewriting -------------------------------------------------------------------------------


def batch_group(plan, group):
    """The new step list with ``group`` as one step, or None when it cannot be batched."""
    if not _independent(plan.steps, group):
        return None
    found = _split_source(plan, group)
    if found is not None:
        split, members, axis = found
        removed = {id(split), *(id(s) for s in members)}
        data_slots, anchor = [split.inputs[0]], split
    else:
        members, axis = group, None
        removed = {id(s) for s in members}
        data_slots, anchor = [s.inputs[0] for s in members], members[0]
    batched = _batched_step(plan, members, data_slots, axis)
    steps = []
    for step in plan.steps:
        if step is anchor:
            steps.append(batched)
        if id(step) not in removed:
            steps.append(step)
    ordered = stable_order(steps)
    if ordered is None or ordered_sequence(ordered) != ordered_sequence(plan.steps):
        return None
    return ordered


def _batched_step(plan, members, data_slots, axis):
    first = members[0]
    fc = first.params
    params = BatchedParams(
        num_hidden=fc.num_hidden, no_bias=fc.no_bias, count=len(members), split_axis=axis
    )
    outputs = [s.outputs[0] for s in members]
    out_shapes = tuple(plan.slot_shapes[slot] for slot in outputs)
    make_step = type(first)  # plan.Step (plan.py imports this module, so not imported here)
    return make_step(
        first.node,
        BATCHED_FULLY_CONNECTED,
        first.context,
        [*data_slots, *first.inputs[1:]],
        [],
        outputs,
        out_shapes,
        name=group_name(members),
        params=params,
        output_names=[s.output_names[0] for s in members],
    )


def stable_order(steps):
    """``steps`` in dependency order, keeping the given order wherever it is already valid.

    None if the steps depend on each other in a cycle (then no order exists).
    """
    producer = {slot: index for index, step in enumerate(steps) for slot in step.outputs}
    waiting = [0] * len(steps)
    followers = [[] for _ in steps]
    for index, step in enumerate(steps):
        needed = {producer[s] for s in (*step.inputs, *step.aux) if s in producer}
        waiting[index] = len(needed)
        for before in needed:
            followers[before].append(index)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(steps[index])
        for after in followers[index]:
            waiting[after] -= 1
            if waiting[after] == 0:
                heapq.heappush(ready, after)
    return order if len(order) == len(steps) else None


def ordered_sequence(steps):
    """The steps whose relative order must be kept (random, custom, aux-updating ops)."""
    return [
        id(step)
        for step in steps
        if step.aux
        or step.node.op.name in _ORDERED_OPS
        or step.node.op.name.startswith(_ORDERED_PREFIXES)
    ]


def use_counts(steps):
    uses = {}
    for step in steps:
        for slot in (*step.inputs, *step.aux):
            uses[slot] = uses.get(slot, 0) + 1
    return uses
