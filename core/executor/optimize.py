"""Graph-level optimizations of a compiled plan, applied once at bind time.

Five rewrites for the networks bucketing trains (unrolled recurrent language
models), and five for feed-forward stacks:

**Batching the input projections of all time steps.** A cell unrolled over
``T`` steps applies the same ``FullyConnected`` (same weight and bias
variables, same parameters) to each step's input: ``T`` small matrix products
of ``(batch, in)`` rows. When no step's input depends on another step's
projection (true for the input-to-hidden ``i2h`` projections, never for the
recurrent ``h2h`` ones), the ``T`` products are one product over
``T * batch`` rows:

* forward: one ``matmul`` (plus bias) over all steps, whose result is split
  back into the ``T`` outputs the graph names (views, no copy);
* backward: the output gradients are joined once, the weight gradient is one
  ``matmul`` over all steps (instead of ``T`` products summed), the bias
  gradient one sum, and the data gradient one ``matmul``, split per step.

When the ``T`` inputs are the outputs of one ``SliceChannel(squeeze_axis=1)``
over the time axis of a ``(batch, T, in)`` or ``(T, batch, in)`` array, used
by nothing else, the product reads that array directly and the SliceChannel
step disappears (its data gradient is the product's, unsplit). Otherwise the
inputs are stacked (one copy). Steps are re-ordered only where the
dependencies demand it (a second layer's projections wait for the whole first
layer), never changing the relative order of steps that draw random numbers,
run custom code or update auxiliary states. Results equal the plain graph's
up to float32 rounding (the products sum in another order).

**Recurrent weight gradients summed once.** The projections that cannot be
batched (the recurrent ``h2h`` ones, each step reading the last one's output)
still share their weight and bias: their backward hands the weight's and
bias's gradients over as terms, which are summed once over all steps as one
product (``ops/weight_terms.py``) instead of ``T`` small products each added
into the sum. Results equal the plain graph's up to float32 rounding.

**An LSTM layer's time steps as one step** (GPU). After ``fused_lstm`` has
made each LSTM cell one step, a chain of them whose recurrent projections
share their weight and bias becomes one step that runs every time step with
one product and one kernel forward, and one kernel and one product backward
(``fused_layer.py``). Results equal the fused cells' up to float32 rounding.

**expand_dims into Concat.** A Concat whose inputs are each an expand_dims
that nothing else reads, inserting the axis it joins along (the merged
outputs of an unrolled cell), is one ``stack`` of their inputs: the same
values, one step instead of ``T + 1`` in each pass. Exact.

**FullyConnected into SoftmaxOutput** (the output layer over the vocabulary,
whose arrays are the biggest of the network): when the logits feed only the
SoftmaxOutput (class labels, no ignore label, no scaling or normalization),
the softmax is computed in place over the logits, and backward hands the
FullyConnected the output changed at each row's label (``prob - 1`` there, as
SoftmaxOutput's gradient is) and then restored, instead of two new arrays of
``batch x classes``. The same kernels run on the same values: results equal
the plain graph's exactly.

**Convolution, BatchNorm and relu as one convolution in inference** (CPU,
plans bound without gradients). A Convolution read only by a BatchNorm, and a
relu reading only that, are one step: in inference the BatchNorm is folded
into the weights and bias and the relu is the kernel's post-op, one oneDNN
call (``fused_conv_bn.py``); a training pass runs the replaced steps as they
are. Inference values equal up to float32 rounding; training values exactly.

**Activations in place.** A relu, sigmoid or tanh Activation whose input is a
FullyConnected or Convolution output read by nothing else overwrites that
input (its backward needs only its output; the product's, only its inputs).
Exact.

**Activation gradients in max pooling** (CPU). A relu, sigmoid or tanh read
only by a max pooling over windows apart has its derivative applied by the
pooling's backward, at the pooled outputs (a quarter of the elements for 2x2
windows), and passes its gradient through (``inplace_grads.fold_into_pooling``).
Exact, but for windows holding a NaN.

**Column-major hidden layers** (CPU). A FullyConnected whose output, directly
or through such an in-place activation, is read only as the data of other
products (an MLP's hidden layers) may compute ``(weight . data^T)^T``: the
same products, row for row, which OpenBLAS computes faster for batches of a
few rows (2x at 16 rows, 12% at 128; the kernel keeps the row-major product
above 256 rows, where the two are even), giving a column-major array. The
readers take it as it is and return its data gradient in the same layout
(``(weight^T . grad^T)^T``), so the element-wise backward in between runs on
equal layouts. Outputs,
gradients of arguments and anything a user can see stay row-major. Forward
values are equal; data gradients may differ in the last float32 bit (another
summation order).

**Convolution stacks batch last** (CPU). A Convolution whose output is read
only by activations, pooling, other convolutions, Flatten or FullyConnected
hands over its batch-last working array as a transposed view, and the steps
in between run in that memory order (``batch_last.py``). Exact.

``REBIND_GRAPH_OPT=0`` in the environment turns every rewrite off when a plan
is compiled (for tests and debugging); a list of rewrites each after a minus
(``REBIND_GRAPH_OPT=-dense_activation,-conv_activation``) turns off those
only (``REWRITES`` names them). A monitor installed by
``Executor.set_monitor_callback`` always sees the plain graph. What a plan's
rewrites did is ``plan.optimizations``: ``(rewrite, step name, nodes merged)``.
Each rewrite's finder lives with its step (``fused_*.py``, ``batched.py``,
``batch_last.py``; the feed-forward ones in ``dense_rewrites.py``).
"""

import os

import attrs

from ..ops.shape_join import STACK, StackParams
from . import (
    batch_last,
    dense_rewrites,
    fused_conv,
    fused_conv_bn,
    fused_dense,
    fused_layer,
    fused_lstm,
    inplace_grads,
)
from .batched import (
    batch_group,
    group_name,
    ordered_sequence,
    projection_groups,
    shared_weight_groups,
    stable_order,
    use_counts,
)

__all__ = ["ENV_SWITCH", "REWRITES", "enabled", "optimize", "switched_off"]

ENV_SWITCH = "REBIND_GRAPH_OPT"
# every rewrite, by the name plan.optimizations gives it, in the order they are made
REWRITES = (
    "batched_projection",
    "fused_lstm_cell",
    "fused_gru_cell",
    "fused_lstm_layer",
    "fused_gru_layer",
    "stacked_concat",
    "projected_softmax",
    "dense_activation",
    "conv_activation",
    "conv_batchnorm",
    "inplace_activation",
    "activation_gradient_in_pooling",
    "inplace_activation_gradient",
    "weight_gradient_terms",
    "batch_last_output",
    "column_major_product",
)


def enabled():
    """Whether plans are optimized: unless ``REBIND_GRAPH_OPT`` is ``0`` (or ``false``, ``off``)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "off", "no")


def switched_off():
    """The rewrites ``REBIND_GRAPH_OPT`` turns off by name (``-name,-name``); else none."""
    value = os.environ.get(ENV_SWITCH, "1").strip()
    if not value.startswith("-"):
        return frozenset()
    names = {part.strip().removeprefix("-") for part in value.split(",") if part.strip()}
    unknown = sorted(names - set(REWRITES))
    if unknown:
        raise ValueError(
            f"{ENV_SWITCH}={value!r}: no rewrite is named {', '.join(unknown)}; "
            f"give 0, 1 or rewrites each after a minus, from: {', '.join(REWRITES)}"
        )
    return frozenset(names)


def _none(_plan):
    return []


def optimize(plan):
    """Rewrite ``plan.steps`` in place; returns ``[(rewrite, new step's name, nodes merged)]``."""
    off = switched_off()

    def on(name, finder):  # the finder, or nothing for a rewrite switched off
        return _none if name in off else finder

    done = []
    for group in on("batched_projection", projection_groups)(plan):
        rewritten = batch_group(plan, group)
        if rewritten is not None:
            plan.steps = rewritten
            done.append(("batched_projection", group_name(group), len(group)))
    for match in fused_lstm.find_cells(plan):
        fused = None if f"fused_{match.kind}_cell" in off else fused_lstm.place(plan, match)
        if fused is not None:
            done.append((f"fused_{match.kind}_cell", fused.name, len(match.steps)))
    for layer in fused_layer.find_layers(plan):
        name = f"fused_{layer.kind}_layer"
        arranged = None if name in off else _with_layer(plan, layer)
        if arranged is not None:
            plan.steps, step = arranged
            done.append((name, step.name, len(layer.members)))
    for concat, expands, axis in on("stacked_concat", _stacked_concats)(plan):
        stack = _stack_step(plan, concat, expands, axis)
        members = {id(e) for e in expands}
        plan.steps = [stack if s is concat else s for s in plan.steps if id(s) not in members]
        done.append(("stacked_concat", stack.name, len(expands) + 1))
    for projection, softmax in on("projected_softmax", dense_rewrites.projected_softmaxes)(plan):
        fused = dense_rewrites.fused_softmax_step(plan, projection, softmax)
        plan.steps = [fused if s is softmax else s for s in plan.steps if s is not projection]
        done.append(("projected_softmax", fused.name, 2))
    for module, kind in ((fused_dense, "dense_activation"), (fused_conv, "conv_activation")):
        for producer, act in on(kind, module.find)(plan):
            fused = module.fused_step(plan, producer, act)
            plan.steps = [fused if s is act else s for s in plan.steps if s is not producer]
            done.append((kind, fused.name, 2))
    for conv, bn, act in (
        on("conv_batchnorm", fused_conv_bn.find)(plan) if plan.inference_only else ()
    ):
        fused = fused_conv_bn.replace(plan, conv, bn, act)
        done.append(("conv_batchnorm", fused.name, 2 if act is None else 3))
    for step in on("inplace_activation", dense_rewrites.inplace_activations)(plan):
        step.train_ctx = attrs.evolve(step.train_ctx, inplace=True)
        step.infer_ctx = attrs.evolve(step.infer_ctx, inplace=True)
        done.append(("inplace_activation", step.name, 1))
    for step, pool in on("activation_gradient_in_pooling", inplace_grads.fold_into_pooling)(plan):
        done.append(("activation_gradient_in_pooling", f"{step.name}+{pool.name}", 2))
    for step in on("inplace_activation_gradient", inplace_grads.mark)(plan):
        done.append(("inplace_activation_gradient", step.name, 1))
    for group in on("weight_gradient_terms", shared_weight_groups)(plan):
        for step in group:
            step.train_ctx = attrs.evolve(step.train_ctx, weight_grad_terms=len(group))
        done.append(("weight_gradient_terms", group_name(group), len(group)))
    for step in on("batch_last_output", batch_last.mark)(plan):
        done.append(("batch_last_output", step.name, 1))
    for step in on("column_major_product", dense_rewrites.column_major_products)(plan):
        step.train_ctx = attrs.evolve(step.train_ctx, column_major_out=True)
        step.infer_ctx = attrs.evolve(step.infer_ctx, column_major_out=True)
        done.append(("column_major_product", step.name, 1))
    return done


def _with_layer(plan, layer):
    """``(steps, layer step)``: ``layer``'s steps replaced by one, or None where it cannot be.

    The step goes where its inputs are ready (``stable_order``); the other steps keep
    their order, and the random, custom and aux-updating ones their relative order.
    """
    step = fused_layer.layer_step(plan, layer)
    if not step.outputs:
        return None
    members = {id(s) for s in layer.members}
    first = min(k for k, s in enumerate(plan.steps) if id(s) in members)
    candidate = [
        step if k == first else s
        for k, s in enumerate(plan.steps)
        if id(s) not in members or k == first
    ]
    ordered = stable_order(candidate)
    if ordered is None or ordered_sequence(ordered) != ordered_sequence(candidate):
        return None
    return ordered, step


# -- expand_dims into Concat: stack ---------------------------------------------------------


def _stacked_concats(plan):
    """``(Concat step, its expand_dims steps, axis)`` where the Concat joins a new axis's entries.

    Each input of the Concat is an ``expand_dims`` output that nothing else reads,
    inserting the axis the Concat joins along (an unrolled cell's merged outputs).
    """
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    uses = use_counts(plan.steps)
    found = []
    for step in plan.steps:
        if step.node.op.name != "Concat" or len(step.inputs) < 2 or step.moves or step.aux:
            continue
        out_shape = plan.slot_shapes[step.outputs[0]]
        if out_shape is None:
            continue
        dim = step.params.dim % len(out_shape)
        expands = [producers.get(slot) for slot in step.inputs]
        if all(
            e is not None
            and e.node.op.name == "expand_dims"
            and not e.moves
            and e.context == step.context
            and e.params.axis % len(out_shape) == dim
            and uses.get(e.outputs[0]) == 1
            and e.outputs[0] not in plan.kept_slots
            for e in expands
        ) and len({id(e) for e in expands}) == len(expands):
            found.append((step, expands, dim))
    return found


def _stack_step(plan, concat, expands, axis):
    """One ``stack`` of the expand_dims inputs along ``axis``: the Concat's values."""
    params = StackParams(num_args=len(expands), axis=axis)
    return type(concat)(
        concat.node,
        STACK,
        concat.context,
        [e.inputs[0] for e in expands],
        [],
        list(concat.outputs),
        (plan.slot_shapes[concat.outputs[0]],),
        name=concat.name,
        params=params,
        output_names=concat.output_names,
    )
