"""An Executor for graphs with sparse storage: csr / row_sparse arguments, outputs, gradients.

Binding chooses it when an argument or gradient array is sparse, a variable
carries a ``stype``, or storage inference gives some entry sparse storage
(``cast_storage``, ``dot(forward_stype=...)``, ``Embedding(sparse_grad=True)``).
It runs the plain plan step by step through ``imperative_sparse``: each step
gets MXNet's storage types, a sparse kernel where there is one, else the
dense kernel on dense copies (MXNet's fallback, with its warning). Backward
uses the sparse gradient kernels of ``ops.sparse_backward`` (a row_sparse
weight gradient for ``dot(csr, w)`` and ``Embedding``), else the dense
backward; each gradient is stored in its bound array's own storage type.
"""

from ..errors import ShapeError
from ..ndarray.imperative_sparse import (
    densified,
    from_parts,
    run_with_storage,
    to_parts,
    warn_fallback,
)
from ..ndarray.ndarray import NDArray
from ..ndarray.sparse_array import BaseSparseNDArray, make_sparse
from ..ops.sparse_backward import BACKWARD_KERNELS, add_grads
from ..ops.sparse_parts import Parts, empty, from_dense, to_dense
from ..ops.sparse_stypes import FALLBACK
from .executor import Executor
from .transfer import move_data

__all__ = ["SparseExecutor", "store_value"]


class SparseExecutor(Executor):
    """MXNet's Executor over arrays of any storage type (see the module doc)."""

    def __init__(self, symbol, ctx, plan, arg_arrays, grad_arrays, grad_reqs, aux_arrays, storage):
        nodes, self._entry_stypes, modes = storage
        super().__init__(symbol, ctx, plan, arg_arrays, grad_arrays, grad_reqs, aux_arrays)
        _warn_fallbacks(nodes, self._entry_stypes, modes, ctx.device_type)

    def _allocate_outputs(self):
        """Zero arrays for the outputs, in the storage inference gave them."""
        given = {n: a.dtype for n, a in zip(self._arg_names, self.arg_arrays, strict=True)}
        _, types, _ = self._symbol.infer_type(**given)
        outputs = []
        for (node, index), slot, shape, dtype in zip(
            self._symbol._heads, self._plan.head_slots, self._plan.head_shapes, types, strict=True
        ):
            ctx = self._plan.slot_context[slot]
            stype = self._entry_stypes[(id(node), index)]
            outputs.append(_zeros(ctx, stype, shape, dtype))
        return outputs

    def set_monitor_callback(self, callback, monitor_all=False):
        raise NotImplementedError(
            "set_monitor_callback on an executor with sparse storage: rebind's monitor "
            "watches dense executors only; bind dense arrays to monitor the graph"
        )

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes; unchanged arrays are shared.

        A sparse array of a new shape is a new empty one of its storage type (its
        memory cannot be carved as a dense array's is); dense ones follow
        ``Executor.reshape``.
        """
        from .binding import bind
        from .reshaping import _resized

        arg_shapes, _, aux_shapes = self._symbol._infer_shape_strict(**kwargs)
        for name, old, new in zip(self._arg_names, self.arg_arrays, arg_shapes, strict=True):
            if old.shape != new and name not in kwargs and not partial_shaping:
                raise ShapeError(
                    f"reshape: the shape of argument {name!r} would change from {old.shape} "
                    f"to {new}; pass partial_shaping=True if intended"
                )

        def resized(array, shape, name):
            if array is None or array.shape == tuple(shape):
                return array
            if array.stype == "default":
                return _resized(array, shape, allow_up_sizing, name)
            return _zeros(array.context, array.stype, shape, array.dtype)

        names = self._arg_names
        args = [
            resized(a, s, n) for a, s, n in zip(self.arg_arrays, arg_shapes, names, strict=True)
        ]
        grads = [
            resized(g, s, n) for g, s, n in zip(self.grad_arrays, arg_shapes, names, strict=True)
        ]
        aux = [
            resized(a, s, n)
            for a, s, n in zip(self.aux_arrays, aux_shapes, self._aux_names, strict=True)
        ]
        return bind(self._symbol, self._ctx, args, grads, list(self._grad_reqs), aux)

    # -- forward ------------------------------------------------------------------------
    def forward(self, is_train=False, **kwargs):
        """Run the graph; ``kwargs`` (name -> array) are copied into the arguments first."""
        for name, value in kwargs.items():
            self._copy_input(name, value)
        values, saved = self._run_steps(is_train)
        heads = [values[slot] for slot in self._plan.head_slots]
        self.outputs = [
            store_value(out, value, out.context)
            for out, value in zip(self.outputs, heads, strict=True)
        ]
        self._saved = saved
        self._replayable = not is_train
        return self.outputs

    def _run_steps(self, is_train):
        plan = self._plan
        values = [None] * plan.num_slots
        for slot, array in zip(plan.arg_slots, self.arg_arrays, strict=True):
            values[slot] = to_parts(array)
        for slot, array in zip(plan.aux_slots, self.aux_arrays, strict=True):
            values[slot] = to_parts(array)
        saved = [None] * len(plan.steps) if is_train else None
        for position, step in enumerate(plan.steps):
            inputs = [values[s] for s in step.inputs]
            for k, source in step.moves:  # group2ctx: inputs made on another context
                inputs[k] = _moved(inputs[k], source, step.context)
            aux = [values[s] for s in step.aux]
            op_ctx = step.train_ctx if is_train else step.infer_ctx
            outputs, _, state = run_with_storage(
                step.op, op_ctx, step.params, step.node.attrs, inputs, aux, step.context, False
            )
            for slot, out in zip(step.outputs, outputs, strict=False):
                values[slot] = out
            if is_train:
                meta = [(_shape(o), o.dtype) for o in outputs]
                saved[position] = (inputs, aux, state, meta)
        return values, saved

    # -- backward -----------------------------------------------------------------------
    def backward(self, out_grads=None, is_train=True):
        """Propagate gradients to the arguments, each stored in its array's storage."""
        if self._saved is None and self._replayable:
            saved_outputs = list(self.outputs)
            self.forward(is_train=True)
            self.outputs = saved_outputs
        if self._saved is None:
            raise RuntimeError("backward() needs a forward pass of this executor first")
        grads = self._sparse_head_grads(out_grads)
        for position in range(len(self._plan.steps) - 1, -1, -1):
            step = self._plan.steps[position]
            if not step.runs_backward:
                continue
            incoming = [grads.pop(s, None) for s in step.outputs]
            if all(g is None for g in incoming) and not (step.op.is_loss or step.aux):
                continue
            in_grads = list(self._step_backward(step, self._saved[position], incoming))
            for k, source in step.moves:
                if in_grads[k] is not None:
                    in_grads[k] = _moved(in_grads[k], step.context, source)
            xp = step.xp
            for slot, grad, needed in zip(step.inputs, in_grads, step.need_grad, strict=True):
                if needed and grad is not None:
                    grads[slot] = add_grads(xp, grads.get(slot), grad)
        self._store_sparse_gradients([grads.get(slot) for slot in self._plan.arg_slots])

    def _sparse_head_grads(self, out_grads):
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        grads = {}
        for index, (slot, output) in enumerate(
            zip(self._plan.head_slots, self.outputs, strict=True)
        ):
            given = None if out_grads is None else out_grads[index]
            if given is None:
                xp = output.context.backend.xp
                value = xp.ones(output.shape, dtype=output.dtype)
            else:
                value = to_parts(given)
                value = value.copy() if not isinstance(value, Parts) else value
            grads[slot] = value if slot not in grads else add_grads(xp, grads[slot], value)
        return grads

    def _step_backward(self, step, saved, incoming):
        """In-gradients of one step: its sparse kernel, else the dense backward."""
        inputs, aux, state, meta = saved
        xp = step.xp
        kernel = BACKWARD_KERNELS.get(step.op.name)
        if kernel is not None:
            filled = [
                g if g is not None else xp.zeros(s, d)
                for g, (s, d) in zip(incoming, meta, strict=True)
            ]
            found = kernel(step.train_ctx, step.op, step.params, inputs, filled, step.need_grad)
            if found is not None:
                return found
        # the dense backward: dense copies, refused where one would not fit
        dense_in = densified(xp, inputs, step.context, step.op.name)
        dense_aux = densified(xp, aux, step.context, step.op.name)
        if state is None:  # a sparse kernel ran forward: the dense one makes the state
            _, state = step.op.forward(
                step.train_ctx, step.params, dense_in, [a.copy() for a in dense_aux]
            )
        dense_grads = [
            densified(xp, [g], step.context, step.op.name)[0] if g is not None else xp.zeros(s, d)
            for g, (s, d) in zip(incoming, meta, strict=True)
        ]
        return step.op.backward(step.train_ctx, step.params, state, dense_grads, step.need_grad)

    def _store_sparse_gradients(self, grads):
        for array, req, grad in zip(self.grad_arrays, self._grad_reqs, grads, strict=True):
            if req == "null" or array is None:
                continue
            xp = array.context.backend.xp
            if req == "add":
                grad = add_grads(xp, to_parts(array), grad) if grad is not None else None
                if grad is None:
                    continue
            if grad is None:
                grad = (
                    empty(xp, array.stype, array.shape, array.dtype)
                    if array.stype != "default"
                    else xp.zeros(array.shape, array.dtype)
                )
            store_value(array, grad, array.context, keep=True)


def _warn_fallbacks(nodes, stypes, modes, device_type):
    """MXNet's fallback warnings, given when it binds: one per node that falls back."""
    for node in nodes:
        if modes.get(id(node)) != FALLBACK:
            continue
        n_args = len(node.argument_names())
        ins = [stypes[(id(c), i)] for c, i in node.inputs[:n_args]]
        outs = [stypes[(id(node), i)] for i in range(node.num_outputs)]
        warn_fallback(node.op.name, node.attrs, ins, outs, device_type)


def _moved(value, source, target):
    """A kernel value (Parts or dense) made on ``source`` as one on ``target``."""
    if not isinstance(value, Parts):
        return move_data(value, source, target)
    parts = [move_data(a, source, target) for a in (value.values, *value.aux)]
    return Parts(value.stype, parts[0], tuple(parts[1:]), value.shape)


def _shape(value):
    return tuple(value.shape)


def _zeros(ctx, stype, shape, dtype):
    xp = ctx.backend.xp
    if stype == "default":
        return NDArray(xp.zeros(shape, dtype=dtype), ctx)
    value = empty(xp, stype, shape, dtype)
    return make_sparse(stype, value.values, value.aux, value.shape, ctx)


def store_value(target, value, ctx, keep=False):
    """``value`` (Parts or dense) in ``target``'s place: the same object where storage agrees.

    With ``keep`` (bound gradient arrays), the value is converted to the
    target's storage type; otherwise a target of another storage is replaced.
    """
    stype = value.stype if isinstance(value, Parts) else "default"
    if keep and stype != target.stype:
        value = from_dense(ctx.backend.xp, to_dense(ctx.backend.xp, value), target.stype)
        stype = target.stype
    if stype != target.stype:
        return from_parts(value, ctx)
    if isinstance(target, BaseSparseNDArray):
        values = value.values.astype(target.dtype, copy=False)
        target._values, target._aux = values, tuple(value.aux)
        target._version += 1
        return target
    if keep:
        target._data[...] = value
    else:
        target._data = value
    return target
