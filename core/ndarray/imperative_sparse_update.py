"""Update operators called on sparse arrays: ``mx.nd.sgd_update(w, rsp_grad, out=w)``.

MXNet's update operators have sparse kernels for row_sparse gradients
(rules: ``ops.sparse_update_stypes``). They write the weight in place, so
MXNet requires ``out=weight`` there ("kWriteInplace is expected"); the
weight keeps its identity and its storage (a row_sparse weight, which must
hold every row, stays row_sparse). The *lazy* kernel runs the operator's
dense rule on the gathered rows the gradient holds and writes them back
(weight and states; every other row keeps its value); the *standard* one
runs it on every row with the missing gradient rows as zeros. Elsewhere the
call falls back: dense copies, the dense kernel, MXNet's warning, and the
states (mutable inputs) written back into their own storage.
"""

from ..base import MXNetError
from ..ops.base import OpContext
from ..ops.sparse_stypes import FALLBACK, SPARSE, infer_storage
from ..ops.sparse_update_stypes import NO_DENSE_KERNEL, lazy_kernel
from .imperative_sparse import warn_fallback
from .ndarray import NDArray
from .sparse_array import BaseSparseNDArray
from .sparse_rows import full_rows, touched, update_rows

__all__ = ["UPDATE_OPS", "handles", "run_update"]

# update operators whose inputs after the gradient are states they change in place
UPDATE_OPS = frozenset(
    """sgd_update sgd_mom_update mp_sgd_update mp_sgd_mom_update nag_mom_update
    mp_nag_mom_update signsgd_update signum_update adam_update ftml_update rmsprop_update
    rmspropalex_update ftrl_update _sparse_adagrad_update _contrib_group_adagrad_update""".split()
)
# MXNet's names of the kernels, as its row checks name them
_OWNERS = {
    "sgd_update": "SGDUpdate",
    "sgd_mom_update": "SGDMomUpdate",
    "adam_update": "AdamUpdate",
    "ftrl_update": "FtrlUpdate",
    "_sparse_adagrad_update": "AdagradUpdate",
    "_contrib_group_adagrad_update": "GroupAdagradUpdate",
}
# lazy kernels that return before checking the output when the gradient holds no row
_EARLY_RETURN = frozenset(
    {"sgd_mom_update", "adam_update", "ftrl_update", "_sparse_adagrad_update"}
)


def handles(op, values):
    """Whether a call of ``op`` on ``values`` goes through ``run_update``."""
    if op.name not in UPDATE_OPS:
        return False
    return op.name in NO_DENSE_KERNEL or any(isinstance(v, BaseSparseNDArray) for v in values)


def run_update(op, params, raw, inputs, out, ctx):
    """One call of update operator ``op``; returns what ``mx.nd.<op>`` returns."""
    in_stypes = [a.stype for a in inputs]
    out_stypes, mode = infer_storage(op.name, params, in_stypes, 1, ctx.device_type)
    if mode == SPARSE:
        return _sparse_kernel(op, params, inputs, out, ctx, lazy_kernel(op.name, params, in_stypes))
    if mode == FALLBACK:
        warn_fallback(op.name, raw, in_stypes, out_stypes, ctx.device_type)
    return _dense_kernel(op, params, inputs, out, ctx)


def _target(out):
    return out[0] if isinstance(out, (list, tuple)) and len(out) == 1 else out


def _sparse_kernel(op, params, inputs, out, ctx, lazy):
    """MXNet's FComputeEx: the lazy or standard row_sparse kernel, the weight written in place."""
    weight, grad, *states = inputs
    owner = _OWNERS[op.name]
    if op.name == "adam_update" and not lazy and weight.stype == "row_sparse":
        owner = "AdamStdUpdate"
    w_full = full_rows(weight, owner, "weights")
    # the standard Adam kernel never fills row_sparse states (MXNet then fails a size check)
    fill = not (op.name == "adam_update" and not lazy)
    s_full = [full_rows(s, owner, "states", zero_fill=fill) for s in states]
    rows = grad._aux[0]
    if _target(out) is not weight:
        if lazy and op.name in _EARLY_RETURN and rows.shape[0] == 0:
            return weight.copy()  # (MXNet returns an array it never wrote)
        raise MXNetError(
            f"{op.name}: with a row_sparse gradient the update is written in place: expected "
            f"out=weight (MXNet: kWriteInplace is expected), got out={_shown(out)}; call "
            f"mx.nd.{op.name}(weight, grad, ..., out=weight)"
        )
    op_ctx = OpContext(False, ctx.backend, ctx.device_id, (tuple(weight.shape),), inplace=True)

    def step(w, *state_rows, g):
        (new,), _ = op.forward(op_ctx, params, [w, g, *state_rows], [])
        return new

    with ctx.backend.device(ctx.device_id):
        if lazy:
            if rows.shape[0]:
                update_rows(rows, [w_full, *s_full], lambda w, *s: step(w, *s, g=grad._values))
        else:
            w_full[...] = step(w_full, *s_full, g=grad._data)
    for array in inputs[:1] + states:
        touched(array)
    return out


def _shown(out):
    if out is None:
        return "None (a new array)"
    return f"another array of shape {getattr(_target(out), 'shape', '?')}"


def _dense_kernel(op, params, inputs, out, ctx):
    """The dense kernel on dense copies; sparse states get their new values back."""
    dense_in = [a._data for a in inputs]  # a sparse array's _data is a new dense array
    target = _target(out)
    inplace = target is inputs[0] and not isinstance(target, BaseSparseNDArray)
    shapes = (tuple(inputs[0].shape),)
    op_ctx = OpContext(False, ctx.backend, ctx.device_id, shapes, inplace=inplace)
    with ctx.backend.device(ctx.device_id):
        outputs, _ = op.forward(op_ctx, params, dense_in, [])
    for state, value in zip(inputs[2:], dense_in[2:], strict=True):
        if isinstance(state, BaseSparseNDArray):
            state._store(NDArray(value, ctx))
    result = NDArray(outputs[0], ctx)
    if out is None:
        return result.copy() if _shares(ctx, outputs[0], dense_in) else result
    for target in out if isinstance(out, (list, tuple)) else [out]:
        result.copyto(target)
    return out


def _shares(ctx, output, inputs):
    xp = ctx.backend.xp
    return any(xp.may_share_memory(output, i) for i in inputs)
