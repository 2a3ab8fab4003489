"""What an executor needs after binding: placement, reshaping, a plain plan, shared memory.

``binding`` builds executors; ``executor`` runs them. Both use this module, which
uses neither, so the three stay free of import circles: a reshaped executor is
built as ``type(executor)(...)``.
"""

import math
import weakref

from ..context import Context
from ..errors import ShapeError
from ..ndarray import creation
from ..ndarray.ndarray import NDArray
from .plan import compile_plan


def placement(ctx, group2ctx, arrays=None):
    """The executor's default context and a function giving each node's context.

    An operator runs on its ``ctx_group``'s context (``group2ctx``), else on
    ``ctx``. A variable lives where the array bound to it lives (``arrays``,
    name -> NDArray), as in MXNet: an argument on another device than its
    consumer is copied over in forward, and its gradient copied back.
    """
    ctx = Context(ctx)
    groups = {k: Context(v) for k, v in (group2ctx or {}).items()}
    placed = {name: array.context for name, array in (arrays or {}).items() if array is not None}

    def context_of(node):
        if node.op is None and node.name in placed:
            return placed[node.name]
        return groups.get(node.attrs.get("__ctx_group__"), ctx)

    return ctx, context_of


def bound_arrays(executor):
    """``executor``'s argument and aux arrays by name (where its variables live)."""
    arrays = dict(zip(executor._arg_names, executor.arg_arrays, strict=True))
    arrays.update(zip(executor._aux_names, executor.aux_arrays, strict=True))
    return arrays


class MemoryGroup:
    """Executors that borrow each other's memory (``simple_bind(shared_exec=...)``).

    As in MXNet, such executors are meant to run one at a time (the buckets of
    a BucketingModule): when one runs forward, the one that ran before drops
    the intermediate results it kept for backward and its output values, so
    training over many buckets holds the intermediates of one bucket only.
    """

    def __init__(self):
        self._active = None

    def activate(self, executor):
        """``executor`` runs forward now; the previous one releases its state."""
        previous = self._active() if self._active is not None else None
        if previous is not None and previous is not executor:
            previous._release_state()
        self._active = weakref.ref(executor)

    @staticmethod
    def join(executor, lender):
        """Put ``executor`` in ``lender``'s group (creating it)."""
        if lender._memory_group is None:
            lender._memory_group = MemoryGroup()
            lender._memory_group._active = weakref.ref(lender)  # it may hold a forward's state
        executor._memory_group = lender._memory_group


def reshape_executor(executor, partial_shaping, allow_up_sizing, shapes):
    """See ``Executor.reshape``: arrays whose shape is unchanged are shared."""
    symbol = executor.symbol
    arg_shapes, _, aux_shapes = symbol._infer_shape_strict(**shapes)
    plan = executor._plan
    args, grads = [], []
    for index, node in enumerate(plan.arguments):
        old, new = executor.arg_arrays[index], arg_shapes[index]
        if old.shape != new and node.name not in shapes and not partial_shaping:
            raise ShapeError(
                f"reshape: the shape of argument {node.name!r} would change from "
                f"{old.shape} to {new}; pass partial_shaping=True if intended"
            )
        args.append(_resized(old, new, allow_up_sizing, node.name))
        grad = executor.grad_arrays[index]
        grads.append(None if grad is None else _resized(grad, new, allow_up_sizing, node.name))
    aux = [
        _resized(a, s, allow_up_sizing, n.name)
        for a, s, n in zip(executor.aux_arrays, aux_shapes, plan.aux_nodes, strict=True)
    ]
    names = [n.name for n in (*plan.arguments, *plan.aux_nodes)]
    _, contexts = placement(
        executor._ctx, executor._group2ctx, dict(zip(names, (*args, *aux), strict=True))
    )
    plan = compile_plan(
        symbol,
        contexts,
        {n.name: a.shape for n, a in zip(plan.arguments, args, strict=True)},
        grad_reqs=executor._grad_reqs,
    )
    reshaped = type(executor)(
        symbol,
        executor._ctx,
        plan,
        args,
        grads,
        list(executor._grad_reqs),
        aux,
        executor._group2ctx,
    )
    MemoryGroup.join(reshaped, executor)  # they share arrays: one runs at a time
    return reshaped


def plain_plan(executor):
    """``executor``'s graph compiled again without graph rewrites (for monitors)."""
    _, contexts = placement(executor._ctx, executor._group2ctx, bound_arrays(executor))
    shapes = {n: a.shape for n, a in zip(executor._arg_names, executor.arg_arrays, strict=True)}
    plan = compile_plan(executor.symbol, contexts, shapes, optimize=False)
    plan.mark_gradients([r != "null" for r in executor._grad_reqs])
    return plan


def _resized(array, shape, allow_up_sizing, name):
    if math.prod(shape) > array.size:
        if not allow_up_sizing:
            raise ShapeError(
                f"reshape: {name!r} would grow from {array.shape} to {shape}; pass "
                "allow_up_sizing=True to allocate new memory"
            )
        return creation.zeros(shape, ctx=array.context, dtype=array.dtype)
    return carve(array, shape)


def carve(array, shape):
    """``array`` itself if it has ``shape``, else an array of ``shape`` over its first elements.

    A smaller array is carved from a bigger one's memory, as MXNet does.
    """
    shape = tuple(shape)
    if array.shape == shape:
        return array
    return NDArray(array._data.reshape(-1)[: math.prod(shape)].reshape(shape), array.context)
