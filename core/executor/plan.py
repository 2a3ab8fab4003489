"""Compiling a graph once into a flat execution plan.

Every output entry of the graph gets an integer slot; each operator becomes a
``Step`` holding its parsed parameters, its kernel (a backend override when
the backend has one), and the slots it reads and writes. Running the plan is
a loop over steps with list indexing: no graph walking, no attribute parsing,
no name look-ups per call. The plan also records, per slot, the last step
that reads it, so intermediate arrays are released as soon as nothing needs
them, and which inputs lead to a gradient, so backward skips what is not
needed.
"""

from ..errors import RebindError
from ..ops.base import OpContext
from ..symbol.graph import topological_order
from ..symbol.infer import arguments_and_aux, infer_graph_shapes
from .codegen import generate_backward, generate_forward

__all__ = ["GENERATED_STEPS_MAX", "Plan", "Step", "compile_plan"]

GENERATED_STEPS_MAX = 4096


class Step:
    """One operator application: kernel, parameters, and slots."""

    __slots__ = (
        "name",
        "node",
        "op",
        "params",
        "inputs",
        "aux",
        "outputs",
        "train_ctx",
        "infer_ctx",
        "need_grad",
        "runs_backward",
        "release",
        "output_names",
        "context",
        "moves",
        "xp",
        "keeps_out_meta",
    )

    def __init__(
        self,
        node,
        op,
        context,
        inputs,
        aux,
        outputs,
        out_shapes,
        *,
        name=None,
        params=None,
        output_names=None,
    ):
        """A step applying ``op`` to ``node``'s inputs.

        ``name``, ``params`` and ``output_names`` default to the node's; a step
        that stands for several nodes gives its own (see ``optimize.py``).
        """
        backend = context.backend
        self.name, self.node = node.name if name is None else name, node
        self.params = node.params if params is None else params
        self.op = backend.kernels.get(op.name, op)
        self.context = context
        self.inputs, self.aux, self.outputs = inputs, aux, outputs
        self.xp = backend.xp
        # a step with several outputs, aux states or its own head gradient may run
        # backward while some output received no gradient: it needs their metadata
        self.keeps_out_meta = len(outputs) > 1 or bool(aux) or op.is_loss
        self.train_ctx = OpContext(True, backend, context.device_id, out_shapes)
        self.infer_ctx = OpContext(False, backend, context.device_id, out_shapes)
        self.need_grad, self.runs_backward, self.release = [], False, ()
        self.moves = ()  # (input position, producer's context) for inputs on other contexts
        self.output_names = output_names or [node.output_name(i) for i in range(len(outputs))]


class Plan:
    """The compiled graph: steps, and where arguments, aux states and heads live.

    With ``optimize``, exact graph rewrites (``optimize.py``) are applied;
    ``optimizations`` lists what they did. ``inference_only``: no argument is
    bound with a gradient (the rewrites made for inference alone apply).
    """

    def __init__(self, symbol, contexts, shapes, optimize=False, inference_only=False):
        nodes = topological_order(symbol._heads)
        self.inference_only = inference_only
        self._shapes = shapes
        self.arguments, self.aux_nodes = arguments_and_aux(nodes)
        slot_of, self.num_slots = {}, 0
        self.slot_context, self.slot_shapes = {}, []
        for node in nodes:
            for index in range(node.num_outputs):
                slot_of[(id(node), index)] = self.num_slots
                self.slot_context[self.num_slots] = contexts(node)
                self.slot_shapes.append(shapes.get((id(node), index)))
                self.num_slots += 1
        self.arg_slots = [slot_of[(id(n), 0)] for n in self.arguments]
        self.aux_slots = [slot_of[(id(n), 0)] for n in self.aux_nodes]
        self.head_slots = [slot_of[(id(n), i)] for n, i in symbol._heads]
        self.head_shapes = [shapes.get((id(n), i)) for n, i in symbol._heads]
        # slots whose values outlive a pass: a user or the next pass reads them
        self.kept_slots = frozenset((*self.head_slots, *self.arg_slots, *self.aux_slots))
        self.steps = [self._step(node, slot_of, contexts) for node in nodes if node.op is not None]
        self.optimizations = graph_optimize.optimize(self) if optimize else []
        self._plan_releases()
        # whether some step reads an input computed on another context (group2ctx)
        self.has_moves = any(step.moves for step in self.steps)
        self._forwards, self._backward = {}, None

    def forward_function(self, is_train):
        """The forward pass as one generated Python function (made once per mode).

        ``function(args, aux)`` takes the executor's argument and aux NDArrays
        and returns ``(head values, saved)``: the backend arrays of the heads and,
        in training, ``(state, output metadata)`` per step for backward (None in
        inference). The code is straight-line: one kernel call per step on local
        variables, intermediate values dropped after their last reader. It is
        generated from the plan's own integers and names, never from user
        input. The steps must be final: the function is built on first use.
        Plans of more than ``GENERATED_STEPS_MAX`` steps get None (compiling
        takes about 50 us a step): the executor runs its loop instead.
        """
        if is_train not in self._forwards:
            generate = len(self.steps) <= GENERATED_STEPS_MAX
            self._forwards[is_train] = generate_forward(self, is_train) if generate else None
        return self._forwards[is_train]

    def backward_function(self):
        """The backward pass as one generated function (``codegen.generate_backward``).

        Made on first use after ``mark_gradients``, which decides what it
        computes; None for plans of more than ``GENERATED_STEPS_MAX`` steps or
        with inputs on other contexts (the executor's loop moves those).
        """
        if self._backward is None:
            generate = len(self.steps) <= GENERATED_STEPS_MAX and not self.has_moves
            self._backward = generate_backward(self) if generate else False
        return self._backward or None

    def _step(self, node, slot_of, contexts):
        n_args = len(node.argument_names())
        slots = [slot_of[(id(child), index)] for child, index in node.inputs]
        outputs = [slot_of[(id(node), i)] for i in range(node.num_outputs)]
        out_shapes = tuple(self._shapes.get((id(node), i)) for i in range(node.num_outputs))
        step = Step(
            node, node.op, contexts(node), slots[:n_args], slots[n_args:], outputs, out_shapes
        )
        step.moves = tuple(
            (k, self.slot_context[s])
            for k, s in enumerate(step.inputs)
            if self.slot_context[s] != step.context
        )
        return step

    def _plan_releases(self):
        last_use = {}
        for position, step in enumerate(self.steps):
            for slot in (*step.inputs, *step.aux):
                last_use[slot] = position
        keep = self.kept_slots
        releases = [[] for _ in self.steps]
        for slot, position in last_use.items():
            if slot not in keep:
                releases[position].append(slot)
        for step, slots in zip(self.steps, releases, strict=True):
            step.release = tuple(slots)

    def mark_gradients(self, arg_needs_grad):
        """Decide, per step input, whether a gradient must flow into it.

        An input needs one when it depends on an argument that asks for a
        gradient and a gradient can reach it from the heads: not through
        BlockGrad (stop_gradient), whose input's gradient is zero, as in
        MXNet's zero propagation. Steps nothing reaches do not run backward.
        """
        self._backward = None  # made again for these decisions
        requires = [False] * self.num_slots
        for slot, needed in zip(self.arg_slots, arg_needs_grad, strict=True):
            requires[slot] = needed
        for step in self.steps:
            depends = any(requires[s] for s in step.inputs)
            for slot in step.outputs:
                requires[slot] = depends and step.op.name not in GRADIENT_BLOCKERS
        reached = [False] * self.num_slots
        for slot in self.head_slots:
            reached[slot] = True
        for step in reversed(self.steps):
            passes = step.op.name not in GRADIENT_BLOCKERS
            passes = passes and any(reached[s] for s in step.outputs)
            step.need_grad = [requires[s] and passes for s in step.inputs]
            # aux states are updated in backward (BatchNorm), so such steps always run
            step.runs_backward = any(step.need_grad) or bool(step.aux)
            for slot, needed in zip(step.inputs, step.need_grad, strict=True):
                reached[slot] = reached[slot] or needed
        _check_differentiable(self.steps)


def _check_differentiable(steps):
    """Refuse, at bind as MXNet does, a gradient that must pass an op without one."""
    for step in steps:
        if step.op.backward is None and any(step.need_grad):
            raise RebindError(
                f"bind: {step.op.name} node {step.name!r} is non-differentiable (it has no "
                "gradient, as in MXNet), yet an argument bound with a gradient depends on "
                "it; put stop_gradient after it or bind those arguments with grad_req='null'"
            )


# operators whose input gets a zero gradient whatever reaches their output
GRADIENT_BLOCKERS = frozenset({"BlockGrad"})


def compile_plan(symbol, contexts, arg_shapes, optimize=None, grad_reqs=None):
    """A Plan for ``symbol``, given the shape of every argument (name -> shape).

    ``contexts(node)`` gives the Context each node runs on. ``optimize``
    (default: unless ``REBIND_GRAPH_OPT=0``) applies the exact graph rewrites
    of ``optimize.py``; ``grad_reqs`` (one per argument), all ``'null'``, also
    those made for inference alone.
    """
    _, shapes = infer_graph_shapes(symbol._heads, arg_shapes)
    if optimize is None:
        optimize = graph_optimize.enabled()
    inference_only = grad_reqs is not None and all(req == "null" for req in grad_reqs)
    return Plan(symbol, contexts, shapes, optimize, inference_only)


from . import optimize as graph_optimize  # noqa: E402 (optimize builds plan Steps)
