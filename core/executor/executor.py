"""Executor: a symbol bound to arrays, running its plan forward and backward."""

from ..errors import ShapeError
from ..ndarray import creation
from ..ndarray.ndarray import NDArray
from ..ops import weight_terms
from ..profiler import PROFILER
from ..thread_flags import ThreadFlag
from ..threadpool import refresh as refresh_threads
from . import common_expr
from .codegen import add_gradient, incoming_gradients, no_gradient
from .memory import memory_report
from .monitor_names import monitor_input_labels
from .reshaping import plain_plan, reshape_executor
from .transfer import move_data, to_context

__all__ = ["Executor", "single_backward"]

GRAD_REQS = ("write", "add", "null")


class Executor:
    """MXNet's Executor: ``forward``, ``backward``, and the bound arrays by name."""

    def __init__(
        self, symbol, ctx, plan, arg_arrays, grad_arrays, grad_reqs, aux_arrays, group2ctx=None
    ):
        self._symbol, self._ctx, self._plan = symbol, ctx, plan
        self._group2ctx = group2ctx
        self.arg_arrays, self.grad_arrays, self.aux_arrays = arg_arrays, grad_arrays, aux_arrays
        self._grad_reqs = grad_reqs
        names = [n.name for n in plan.arguments]
        self._arg_names, self._aux_names = names, [n.name for n in plan.aux_nodes]
        self.arg_dict = dict(zip(names, arg_arrays, strict=True))
        self.grad_dict = {n: g for n, g in zip(names, grad_arrays, strict=True) if g is not None}
        self.aux_dict = dict(zip(self._aux_names, aux_arrays, strict=True))
        plan.mark_gradients([r != "null" for r in grad_reqs])
        self._eliminate_common_expr = common_expr.enabled()  # read at bind, as MXNet
        self.outputs = self._allocate_outputs()
        self._loss_heads = _loss_heads(plan)
        self._saved = None
        self._monitor = None
        self._optimized_plan = None  # kept aside while a monitor runs the plain plan
        self._memory_group = None  # executors sharing memory with this one (see MemoryGroup)
        self._released = None  # what the outputs read between passes (see _release_state)
        self._unit_heads = {}  # head index -> the ones a loss head's backward receives
        self._grad_targets = None  # made by _store_gradients on first use
        # backward may run the training pass itself: nothing ran yet, or only inference
        self._replayable = True
        self._engine = None  # an ONNX Runtime engine for inference passes (see ort_engine)

    def _allocate_outputs(self):
        """Zero arrays for the outputs, as MXNet has them right after bind (same objects later)."""
        given = {n: a.dtype for n, a in zip(self._arg_names, self.arg_arrays, strict=True)}
        _, types, _ = self._symbol.infer_type(**given)
        plan = self._plan
        return [
            creation.zeros(shape, ctx=plan.slot_context[slot], dtype=dtype)
            for slot, shape, dtype in zip(plan.head_slots, plan.head_shapes, types, strict=True)
        ]

    # -- properties -------------------------------------------------------------------
    @property
    def output_dict(self):
        return dict(zip(self._symbol.list_outputs(), self.outputs, strict=True))

    @property
    def symbol(self):
        return self._symbol

    def get_optimized_symbol(self):
        """The bound graph after MXNet's graph pass: equal nodes merged (see common_expr).

        ``MXNET_ELIMINATE_COMMON_EXPR=0`` at bind leaves it a copy of ``symbol``.
        """
        if self._eliminate_common_expr:
            return common_expr.eliminate_common_expr(self._symbol)
        return self._symbol.__deepcopy__(None)

    # -- forward ------------------------------------------------------------------------
    def forward(self, is_train=False, **kwargs):
        """Run the graph; ``kwargs`` (name -> array) are copied into the arguments first."""
        refresh_threads()  # the thread policy's per-call check (see threadpool.refresh)
        for name, value in kwargs.items():
            self._copy_input(name, value)
        # what the previous forward kept is dropped now, not after this one has
        # allocated its own (and so is that of an executor sharing memory with this one)
        self._release_state()
        if self._memory_group is not None:
            self._memory_group.activate(self)
        plan = self._plan
        # one flag read: only while the profiler records does forward leave the generated code
        profiling = PROFILER.symbolic
        function = heads = None
        if self._monitor is None and not plan.has_moves and not profiling:
            if self._engine is not None and not is_train:
                heads = self._engine.run()
                if heads is None:  # the graph does not run there: the plan from now on
                    self._engine = None
            if heads is None:
                function = plan.forward_function(is_train)
        if heads is not None:
            self._saved = None
        elif function is not None:
            heads, self._saved = function(self.arg_arrays, self.aux_arrays)
        else:
            heads, self._saved = self._forward_steps(is_train, PROFILER if profiling else None)
        for out, value in zip(self.outputs, heads, strict=True):
            out._data = value  # the same NDArray objects, now holding this pass's values
        # backward after an inference pass replays it in training mode (see backward)
        self._replayable = not is_train
        return self.outputs

    def _forward_steps(self, is_train, profiler=None):
        """The forward loop with everything: copies between contexts, monitor, profiler."""
        plan = self._plan
        values = [None] * plan.num_slots
        for slot, array in zip(plan.arg_slots, self.arg_arrays, strict=True):
            values[slot] = array._data
        for slot, array in zip(plan.aux_slots, self.aux_arrays, strict=True):
            values[slot] = array._data
        saved = [None] * len(plan.steps) if is_train else None
        for position, step in enumerate(plan.steps):
            inputs = [values[s] for s in step.inputs]
            for k, source in step.moves:
                inputs[k] = move_data(inputs[k], source, step.context)
            aux = [values[s] for s in step.aux]
            op_ctx = step.train_ctx if is_train else step.infer_ctx
            if profiler is None:
                outputs, state = step.op.forward(op_ctx, step.params, inputs, aux)
            else:
                run = profiler.time_step("", step, step.op.forward)
                outputs, state = run(op_ctx, step.params, inputs, aux)
            for slot, out in zip(step.outputs, outputs, strict=False):
                values[slot] = out
            if is_train:
                # output shapes/dtypes only where backward may have to fill in zeros
                meta = [(o.shape, o.dtype) for o in outputs] if step.keeps_out_meta else None
                saved[position] = (state, meta)
            if self._monitor is not None:
                self._monitor_step(step, outputs, [*inputs, *aux])
            for slot in step.release:
                values[slot] = None
        return [values[slot] for slot in plan.head_slots], saved

    def use_inference_engine(self, param_names):
        """Let an inference engine run this executor's inference passes, if one fits.

        ``param_names``: the arguments that are parameters (the rest are fed
        each pass). Called by the module's executor group after bind; the
        choice is ``REBIND_INFERENCE_ENGINE``'s (see ``ort_engine``).
        """
        from .ort_engine import InferenceEngine

        self._engine = InferenceEngine.select(self, param_names)
        return self._engine is not None

    def _copy_input(self, name, value):
        target = self.arg_dict.get(name)
        if target is None:
            raise ValueError(
                f"forward: {name!r} is not an argument; arguments are {self._arg_names}"
            )
        shape = tuple(value.shape)
        if shape != target.shape:
            raise ShapeError(
                f"forward: argument {name!r} is bound with shape {target.shape}, "
                f"got an array of shape {shape}; use reshape() to change shapes"
            )
        target[:] = value

    # -- backward -------------------------------------------------------------------------
    def backward(self, out_grads=None, is_train=True):
        """Propagate gradients from the outputs to the arguments (``grad_req`` decides how)."""
        if self._saved is None and self._replayable:
            self._replay_in_training_mode()
        if self._saved is None:
            raise RuntimeError(
                "backward() needs a forward pass of this executor first (forward(is_train=True));"
                " fit's training step frees what forward kept, and an executor sharing memory "
                "with it (shared_exec) may have run forward since"
            )
        grads = self._head_grads(out_grads)
        plan = self._plan
        profiling = PROFILER.symbolic
        # Inside single_backward() (fit's training step), what forward kept is dropped
        # step by step as backward passes it, so the gradients being made reuse its
        # memory, as MXNet's planner gives those buffers to the gradients. A second
        # backward then needs a new forward. Elsewhere backward may run again.
        saved = self._saved
        release = _SINGLE.active
        if release:
            self._saved, self._replayable = None, False
        function = None
        if self._monitor is None and not profiling:
            function = plan.backward_function()
        if function is not None:
            self._store_gradients(function(saved, grads, release))
            return
        owned = {}  # slot -> whether its gradient is a sum made here (see add_gradient)
        for position in range(len(plan.steps) - 1, -1, -1):
            step = plan.steps[position]
            if not step.runs_backward:
                continue
            state, out_meta = saved[position]
            if release:
                saved[position] = None
            incoming = [grads.pop(s, None) for s in step.outputs]
            for s in step.outputs:
                owned.pop(s, None)
            always = step.op.is_loss or bool(step.aux)
            incoming = incoming_gradients(incoming, out_meta, step.xp, always)
            if incoming is None:
                continue
            if step.op.backward is None:
                no_gradient(step)
            if profiling:
                run = PROFILER.time_step("_backward_", step, step.op.backward)
                in_grads = run(step.train_ctx, step.params, state, incoming, step.need_grad)
            else:
                in_grads = step.op.backward(
                    step.train_ctx, step.params, state, incoming, step.need_grad
                )
            if self._monitor is not None:
                self._monitor_backward(step, in_grads, out_meta)
            if step.moves:
                in_grads = list(in_grads)
            for k, source in step.moves:
                if in_grads[k] is not None:
                    in_grads[k] = move_data(in_grads[k], step.context, source)
            for slot, grad, needed in zip(step.inputs, in_grads, step.need_grad, strict=True):
                if needed and grad is not None:
                    grads[slot], owned[slot] = add_gradient(
                        grads.get(slot), owned.get(slot, False), grad
                    )
        self._store_gradients([grads.get(slot) for slot in plan.arg_slots])

    def _head_grads(self, out_grads):
        plan, grads = self._plan, {}
        if out_grads is not None:
            if isinstance(out_grads, NDArray):
                out_grads = [out_grads]
            # as MXNet: gradients past the last output are ignored (its own tests pass extras)
            if len(out_grads) < len(plan.head_slots):
                raise ValueError(
                    f"backward: {len(out_grads)} head gradients for {len(plan.head_slots)} "
                    "outputs; pass one per output (None for a loss head)"
                )
        for index, (slot, output) in enumerate(zip(plan.head_slots, self.outputs, strict=True)):
            given = None if out_grads is None else out_grads[index]
            if given is None and self._loss_heads[index]:
                # a built-in loss makes its own gradient: ones without memory of their
                # own (read-only), made once per output
                data = self._unit_heads.get(index)
                if data is None:
                    xp = output._ctx.backend.xp
                    data = xp.broadcast_to(xp.ones((), dtype=output.dtype), output.shape)
                    self._unit_heads[index] = data
            elif given is None:
                data = output._ctx.backend.xp.ones_like(output._data)
            else:
                data = to_context(given, output._ctx).copy()
            grads[slot] = data if slot not in grads else grads[slot] + data
        return grads

    def _replay_in_training_mode(self):
        """Keep what backward needs when no training pass ran, as MXNet users expect.

        MXNet's backward reuses whatever memory holds (the inference pass's
        values, or none at all right after bind, as MXNet's test_repeat calls
        it); rebind's inference pass keeps nothing, so the pass runs in
        training mode on the current arguments.
        The outputs the user read stay those of the inference pass, and the
        replay leaves the auxiliary states as the inference pass did (backward
        then updates BatchNorm's moving statistics, as MXNet's backward does).
        """
        outputs = [out._data for out in self.outputs]
        aux = [array._data.copy() for array in self.aux_arrays]
        self.forward(is_train=True)
        for array, value in zip(self.aux_arrays, aux, strict=True):
            array._data[...] = value
        for out, value in zip(self.outputs, outputs, strict=True):
            out._data = value

    def _release_state(self):
        """Drop what the last forward kept (saved state, output values): memory is shared.

        Called when this executor or another of its memory group runs forward.
        The outputs keep their shapes and dtypes and read as zeros (MXNet's
        read whatever the other executor wrote into the shared memory).
        """
        self._saved = None
        self._replayable = False  # another executor's pass holds the shared memory now
        released = self._released
        if released is None:  # read-only zero views, made once
            released = self._released = [
                output._ctx.backend.xp.broadcast_to(
                    output._ctx.backend.xp.zeros((), dtype=output.dtype), output.shape
                )
                for output in self.outputs
            ]
        for output, zeros in zip(self.outputs, released, strict=True):
            output._data = zeros

    def _store_gradients(self, grads):
        """Put each argument's gradient (``grads``, in argument order) where grad_req says."""
        targets = self._grad_targets
        if targets is None:  # (position, gradient NDArray, adds) of each gradient kept
            pairs = enumerate(zip(self.grad_arrays, self._grad_reqs, strict=True))
            targets = self._grad_targets = [
                (k, array, req == "add")
                for k, (array, req) in pairs
                if req != "null" and array is not None
            ]
        adopted = set()  # ids of the kernels' arrays kept this pass: each is kept once
        for k, array, adds in targets:
            grad, data = weight_terms.value(grads[k]), array._data
            if grad is None:
                if not adds:
                    data[...] = 0
            elif adds:
                data += grad
            elif (
                grad.base is None
                and data.base is None
                and grad.flags.c_contiguous
                and grad is not data
                and grad.shape == data.shape
                and grad.dtype == data.dtype
                and id(grad) not in adopted
            ):
                # a fresh array of the kernel's, owning its memory: kept, no copy (an
                # array that is a view, of a shared buffer or a bigger array, is written
                # into instead, keeping that sharing)
                array._data = grad
                adopted.add(id(grad))
            else:
                data[...] = grad

    # -- monitoring and parameters --------------------------------------------------------
    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, NDArray)`` for every op output in forward.

        With ``monitor_all``, also for every op input before it runs: as
        ``<node>_<input>`` (``fc1_weight``, ``bn_moving_mean``; ``act_input0``
        for operators MXNet registers without input names, see
        ``monitor_names``), preceded by the variable's own name when the input
        is a variable (``data``), as MXNet does. MXNet passes the name as
        bytes and a raw handle; rebind passes a str and an NDArray viewing the
        op's array.
        """
        self._monitor = None if callback is None else (callback, monitor_all)
        self._use_plain_plan(callback is not None)

    def _use_plain_plan(self, plain):
        """Run the plan without graph rewrites while a monitor watches, so it sees every node."""
        if plain and self._optimized_plan is None and self._plan.optimizations:
            self._optimized_plan, self._plan = self._plan, plain_plan(self)
            self._saved = None
        elif not plain and self._optimized_plan is not None:
            self._plan, self._optimized_plan = self._optimized_plan, None
            self._saved = None

    def _monitor_step(self, step, outputs, inputs):
        callback, monitor_all = self._monitor
        if monitor_all:
            node = step.node
            labels = monitor_input_labels(node)
            for (child, _), label, data in zip(node.inputs, labels, inputs, strict=True):
                if child.op is None:
                    callback(child.name, NDArray(data, step.context))
                callback(f"{step.name}_{label}", NDArray(data, step.context))
        for name, data in zip(step.output_names, outputs, strict=False):
            callback(name, NDArray(data, step.context))

    def _monitor_backward(self, step, in_grads, out_meta):
        """Show the monitor each input gradient of ``step``, named as MXNet names them.

        MXNet's backward node of ``fc`` is ``fc_backward``, with outputs
        ``fc_backward_output`` (one input) or ``fc_backward_output0``, ``1``, ...
        A gradient nobody asked for (grad_req null) shows as zeros; MXNet shows
        whatever its buffer holds.
        """
        callback, _ = self._monitor
        suffix = (lambda i: "") if len(step.inputs) == 1 else str
        dtype = next((g.dtype for g in in_grads if g is not None), None)
        if dtype is None:
            dtype = out_meta[0][1] if out_meta else "float32"
        for index, (slot, grad) in enumerate(zip(step.inputs, in_grads, strict=True)):
            if grad is None:
                grad = step.xp.zeros(self._plan.slot_shapes[slot], dtype)
            callback(f"{step.name}_backward_output{suffix(index)}", NDArray(grad, step.context))

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy parameter values in by name; unknown names are an error unless allowed."""
        for source, targets, kind in (
            (arg_params, self.arg_dict, "argument"),
            (aux_params or {}, self.aux_dict, "auxiliary state"),
        ):
            for name, value in source.items():
                if name in targets:
                    value.copyto(targets[name]) if isinstance(value, NDArray) else targets[
                        name
                    ].__setitem__(slice(None), value)
                elif not allow_extra_params:
                    raise ValueError(
                        f"copy_params_from: {name!r} is not an {kind} of the "
                        "symbol; pass allow_extra_params=True to ignore it"
                    )

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes, sharing this one's arrays where it can.

        A monitor callback set on this executor is set on the new one too, as MXNet does.
        """
        reshaped = reshape_executor(self, partial_shaping, allow_up_sizing, kwargs)
        if self._monitor is not None:
            reshaped.set_monitor_callback(*self._monitor)
        return reshaped

    def debug_str(self):
        """A readable listing of the plan: each step, its inputs and outputs."""
        lines = [f"Symbol outputs: {', '.join(self._symbol.list_outputs())}"]
        for step in self._plan.steps:
            lines.append(f"Op:{step.op.name}, Name={step.name}, on {step.context}")
            for slot in step.inputs:
                lines.append(f"\targ slot {slot}")
            for name in step.output_names:
                lines.append(f"\toutput {name}")
        lines.append(f"Total {len(self._plan.steps)} ops, {self._plan.num_slots} entries")
        megabytes = self.memory_report()["graph_total"] / 2**20
        lines.append(f"Total {int(round(megabytes))} MB allocated")  # MXNet's line
        return "\n".join(lines)

    def memory_report(self):
        """Bytes this executor holds, by kind, planned against naive (rebind's extension).

        See ``rebind.executor.memory``: the bound arrays, the intermediate values
        one buffer per graph entry would take, the peak an inference pass keeps
        alive, what a training pass may keep for backward, and the totals.
        """
        return memory_report(self)

    def __repr__(self):
        return f"<Executor {self._symbol!r} @{self._ctx}>"


_SINGLE = ThreadFlag()


def single_backward():
    """Within it, the caller runs one backward per forward: backward frees as it goes.

    ``fit``'s training step runs inside: each step's saved forward values are
    dropped once that step's backward has run, lowering the peak memory of a
    training step by what forward kept. Outside it, as in MXNet, backward may
    run again after one forward. A context manager; it nests, per thread.
    """
    return _SINGLE.within()


def _loss_heads(plan):
    """Per head: whether a built-in loss op (not a Custom op) produces it and ignores its grad."""
    producer = {slot: step for step in plan.steps for slot in step.outputs}
    flags = []
    for slot in plan.head_slots:
        step = producer.get(slot)
        op = None if step is None else step.node.op
        flags.append(op is not None and op.is_loss and op.name != "Custom")
    return flags
