"""Finding ``mx.rnn.GRUCell``'s thirteen element-wise steps in a plan (see ``fused_lstm``).

A GRU time step after its two projections (with the names MXNet's cell gives
its operands, in its order)::

    i_r, i_z, i_n = SliceChannel(i2h, 3)      h_r, h_z, h_n = SliceChannel(h2h, 3)
    z = sigmoid(i_z + h_z)      rz = 1 - z (_rminus_scalar)
    r = sigmoid(i_r + h_r)      n = tanh(i_n + r * h_n)
    h = rz * n + z * h_prev

Every value in between must be read only inside the step and never be a head.
"""

__all__ = ["match_at"]


def match_at(candidate, plan, producers, readers, make_match):
    """The GRU step whose candidate ``tanh`` is ``candidate``, or None.

    ``make_match(steps, inputs, outputs)`` builds the result.
    """
    if candidate.op.name != "Activation" or candidate.params.act_type != "tanh":
        return None

    def made_by(slot, op_name):
        step = producers.get(slot)
        return step if step is not None and step.op.name == op_name else None

    add_n = made_by(candidate.inputs[0], "elemwise_add")
    if add_n is None:
        return None
    mul_rh = made_by(add_n.inputs[1], "elemwise_mul")
    split_i = _split3(producers, add_n.inputs[0], 2)
    if mul_rh is None or split_i is None:
        return None
    reset = made_by(mul_rh.inputs[0], "Activation")
    split_h = _split3(producers, mul_rh.inputs[1], 2)
    if reset is None or reset.params.act_type != "sigmoid" or split_h is None:
        return None
    # rows of (N, 3H) projections, as the fused GPU kernel takes them (a convolutional
    # GRU's (N, 3H, H, W) keeps its plain steps, as the LSTM's matcher does)
    if any(_ndim(plan, split.inputs[0]) != 2 for split in (split_i, split_h)):
        return None
    add_r = made_by(reset.inputs[0], "elemwise_add")
    if add_r is None or add_r.inputs != [split_i.outputs[0], split_h.outputs[0]]:
        return None
    found = _tail(candidate, producers, readers, split_i, split_h)
    if found is None:
        return None
    add_z, update, minus, mul_a, mul_b, out = found
    steps = [split_i, split_h, add_z, update, minus, add_r, reset, mul_rh, add_n, candidate]
    steps += [mul_a, mul_b, out]
    if not _closed(steps, out, plan, readers):
        return None
    h_prev = mul_b.inputs[1]
    return make_match(steps, (split_i.inputs[0], split_h.inputs[0], h_prev), (out.outputs[0],))


def _ndim(plan, slot):
    shape = plan.slot_shapes[slot]
    return None if shape is None else len(shape)


def _split3(producers, slot, index):
    """The 3-way SliceChannel along axis 1 whose output ``index`` is ``slot``, or None."""
    step = producers.get(slot)
    if step is None or step.op.name != "SliceChannel":
        return None
    p = step.params
    if p.num_outputs != 3 or p.squeeze_axis or p.axis not in (1, -1):
        return None
    return step if step.outputs[index] == slot else None


def _only(readers, slot, op_name):
    found = readers.get(slot, [])
    if len(found) != 1 or found[0].op.name != op_name:
        return None
    return found[0]


def _tail(candidate, producers, readers, split_i, split_h):
    """``(add_z, z, 1 - z, (1 - z) * n, z * h_prev, h)`` after ``candidate``, or None."""
    mul_a = _only(readers, candidate.outputs[0], "elemwise_mul")
    if mul_a is None or mul_a.inputs[1] != candidate.outputs[0]:
        return None
    out = _only(readers, mul_a.outputs[0], "elemwise_add")
    if out is None or out.inputs[0] != mul_a.outputs[0]:
        return None
    mul_b, minus = producers.get(out.inputs[1]), producers.get(mul_a.inputs[0])
    if mul_b is None or mul_b.op.name != "elemwise_mul":
        return None
    if minus is None or minus.op.name != "_rminus_scalar" or minus.params.scalar != 1.0:
        return None
    update = producers.get(mul_b.inputs[0])
    if update is None or minus.inputs[0] != update.outputs[0]:
        return None
    if update.op.name != "Activation" or update.params.act_type != "sigmoid":
        return None
    add_z = producers.get(update.inputs[0])
    if add_z is None or add_z.op.name != "elemwise_add":
        return None
    if add_z.inputs != [split_i.outputs[1], split_h.outputs[1]]:
        return None
    return add_z, update, minus, mul_a, mul_b, out


def _closed(steps, out, plan, readers):
    """Whether every value made inside (but ``out``) is read inside only and is no head."""
    inside = {id(s) for s in steps}
    for step in steps:
        if step.moves or step.aux or step.context != out.context:
            return False
        if step is out:
            continue
        for slot in step.outputs:
            if slot in plan.kept_slots:
                return False
            if any(id(r) not in inside for r in readers.get(slot, [])):
                return False
    return True
