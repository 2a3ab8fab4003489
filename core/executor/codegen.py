"""A plan's forward and backward passes as generated straight-line Python functions.

The executor's loops index lists, look up dicts and test flags for every step
of every pass; for a small network that is a good part of a step's time. Each
function generated here does the same work with the plan's decisions taken
once: one kernel call per step on local variables, values dropped after their
last reader, and, in backward, a gradient's running sum kept in a local. The
source is made from the plan's own integers only (slot numbers, step
positions), never from user input; kernels, contexts and parameters reach the
code through its namespace.
"""

import functools

from ..ops import weight_terms

__all__ = [
    "add_gradient",
    "generate_backward",
    "generate_forward",
    "incoming_gradients",
    "no_gradient",
]


def generate_forward(plan, is_train):
    """``forward(args, aux) -> (head values, saved)``, as ``Plan.forward_function`` says."""
    lines = ["def forward(args, aux):"]
    lines += [f"    s{slot} = args[{i}]._data" for i, slot in enumerate(plan.arg_slots)]
    lines += [f"    s{slot} = aux[{i}]._data" for i, slot in enumerate(plan.aux_slots)]
    if is_train:
        lines.append("    saved = []")
    namespace = {}
    for k, step in enumerate(plan.steps):
        namespace[f"f{k}"] = step.op.forward
        namespace[f"c{k}"] = step.train_ctx if is_train else step.infer_ctx
        namespace[f"p{k}"] = step.params
        inputs = ", ".join(f"s{slot}" for slot in step.inputs)
        aux = ", ".join(f"s{slot}" for slot in step.aux)
        lines.append(f"    r, state = f{k}(c{k}, p{k}, [{inputs}], [{aux}])")
        if len(step.outputs) == 1:
            lines.append(f"    s{step.outputs[0]} = r[0]")
        else:  # a kernel may give fewer values than the node names (as the loop allows)
            lines += [
                f"    s{slot} = r[{j}] if len(r) > {j} else None"
                for j, slot in enumerate(step.outputs)
            ]
        if is_train:
            # output shapes/dtypes only where backward may have to fill in zeros
            meta = "[(o.shape, o.dtype) for o in r]" if step.keeps_out_meta else "None"
            lines.append(f"    saved.append((state, {meta}))")
        lines += [f"    s{slot} = None" for slot in step.release]
    heads = ", ".join(f"s{slot}" for slot in plan.head_slots)
    lines.append(f"    return [{heads}], {'saved' if is_train else 'None'}")
    mode = "training" if is_train else "inference"
    return _compile(lines, namespace, "forward", f"<rebind plan: {mode} forward>")


def generate_backward(plan):
    """``backward(saved, heads, release) -> gradients``: the executor's backward loop, unrolled.

    ``saved`` is what the training forward returned, ``heads`` maps head slots
    to their gradients, and with ``release`` each step's saved entry is dropped
    once its backward has run. Returns the gradient of each argument (None
    where none arrived), in the order of ``plan.arg_slots``. The arithmetic is
    the loop's: the same kernels in the same order, a gradient reaching a slot
    twice summed into a new array, and later terms added into that sum in
    place.
    """
    contributions = _contributions(plan)
    namespace = {"_add": add_gradient, "_incoming": incoming_gradients, "_no_gradient": no_gradient}
    lines = ["def backward(saved, heads, release):"]
    used = sorted(contributions)
    lines += [f"    g{slot} = None" for slot in used if slot not in plan.head_slots]
    lines += [f"    g{slot} = heads.get({slot})" for slot in sorted(set(plan.head_slots))]
    lines += [f"    m{slot} = False" for slot in used if contributions[slot] > 1]
    for k in range(len(plan.steps) - 1, -1, -1):
        step = plan.steps[k]
        if step.runs_backward:
            namespace[f"b{k}"], namespace[f"c{k}"] = step.op.backward, step.train_ctx
            namespace[f"p{k}"], namespace[f"n{k}"] = step.params, list(step.need_grad)
            namespace[f"x{k}"], namespace[f"t{k}"] = step.xp, step
            lines += _backward_step(k, step, contributions)
    grads = ", ".join(f"g{slot}" if slot in contributions else "None" for slot in plan.arg_slots)
    lines.append(f"    return [{grads}]")
    return _compile(lines, namespace, "backward", "<rebind plan: backward>")


def _contributions(plan):
    """slot -> how many gradient terms may reach it (a head's own gradient counts as one)."""
    counts = {}
    for slot in plan.head_slots:
        counts[slot] = 1
    for step in plan.steps:
        if not step.runs_backward:
            continue
        for slot, needed in zip(step.inputs, step.need_grad, strict=True):
            if needed:
                counts[slot] = counts.get(slot, 0) + 1
    return counts


def _backward_step(k, step, contributions):
    lines = [f"    # {k}: {step.op.name}", f"    st, meta = saved[{k}]", "    if release:"]
    lines.append(f"        saved[{k}] = None")
    received = [f"g{slot}" if slot in contributions else "None" for slot in step.outputs]
    lines.append(f"    i = [{', '.join(received)}]")
    lines += [f"    g{slot} = None" for slot in step.outputs if slot in contributions]
    # the step runs once a gradient reaches one of its outputs; a loss head or a
    # step with aux states (BatchNorm's moving statistics) runs even without one
    always = step.op.is_loss or bool(step.aux)
    if len(step.outputs) == 1 and not always:
        lines.append("    if i[0] is not None:")
    else:
        lines.append(f"    i = _incoming(i, meta, x{k}, {always})")
        lines.append("    if i is not None:")
    if step.op.backward is None:
        lines.append(f"        _no_gradient(t{k})")
        return lines
    lines.append(f"        r = b{k}(c{k}, p{k}, st, i, n{k})")
    for j, (slot, needed) in enumerate(zip(step.inputs, step.need_grad, strict=True)):
        if not needed:
            continue
        if contributions[slot] == 1:
            lines.append(f"        g{slot} = r[{j}]")
        else:
            lines.append(f"        g{slot}, m{slot} = _add(g{slot}, m{slot}, r[{j}])")
    return lines


def no_gradient(step):
    """Raise the error for a step without a backward kernel that a gradient reaches."""
    raise RuntimeError(
        f"backward: {step.op.name} node {step.name!r} has no gradient (MXNet: "
        "non-differentiable), yet a gradient reaches it; put stop_gradient after "
        "it or bind its inputs with grad_req='null'"
    )


def incoming_gradients(grads, meta, xp, always):
    """The gradients a step receives, zeros where none arrived; None: the step is skipped."""
    missing = [g is None for g in grads]
    if not any(missing):
        return grads
    if not always and all(missing):
        return None
    return [
        xp.zeros(shape, dtype) if g is None else g
        for g, (shape, dtype) in zip(grads, meta, strict=True)
    ]


def add_gradient(total, owned, grad):
    """``(total, owned)`` after adding ``grad`` to a slot's gradient ``total`` (None: none yet).

    ``owned`` says whether ``total`` is a sum made here (so later terms go into
    it in place); a kernel's gradient may be a view of another array, so the
    first sum is a new array.
    """
    if grad is None:
        return total, owned
    if total is None:
        return grad, False
    joined = weight_terms.join(total, grad)  # a shared weight's terms (ops/weight_terms.py)
    if joined is not None:
        return joined, True
    if owned and total.shape == grad.shape and total.dtype == grad.dtype:
        total += grad
        return total, True
    return total + grad, True


def _compile(lines, namespace, name, filename):
    code = _code("\n".join(lines), filename)
    exec(code, namespace)  # noqa: S102 (source made from slot numbers and positions only)
    return namespace[name]


@functools.lru_cache(maxsize=256)
def _code(source, filename):
    """Compiled ``source``; binding one symbol again (or its twin) reuses the code object."""
    return compile(source, filename, "exec")
