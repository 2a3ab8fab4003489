"""Imperative calls with sparse arrays: storage inference, sparse kernel or fallback.

``invoke`` (imperative.py) hands a call here when an input is a CSRNDArray or
RowSparseNDArray, or when the op may produce sparse storage from dense inputs
(``cast_storage``, ``dot(forward_stype=...)``). The storage rules are
``ops.sparse_stypes``'s, the kernels ``ops.sparse_kernels``'s; where MXNet
falls back (no sparse kernel), inputs are made dense (refused when the dense
form would not fit) and MXNet's warning is shown, once per distinct message,
through Python's ``warnings`` (``MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0`` turns
it off, as in MXNet).
"""

import os
import warnings

from ..ops.sparse_kernels import KERNELS
from ..ops.sparse_parts import Parts, from_dense, to_dense
from ..ops.sparse_stypes import DEFAULT, DENSE, FALLBACK, describe, infer_storage
from .ndarray import NDArray
from .sparse_array import BaseSparseNDArray, make_sparse
from .sparse_convert import check_dense_fits

__all__ = [
    "StorageFallbackWarning",
    "needs_storage_dispatch",
    "run_with_storage",
    "to_parts",
    "from_parts",
    "warn_fallback",
]

# operators that may make sparse storage out of dense inputs
_MAKES_SPARSE = frozenset({"cast_storage", "dot"})
# operators whose storage rule matters on dense inputs too: MXNet falls back with its
# warning (_scatter_elemwise_div) or has no dense kernel at all (_square_sum, getnnz)
_ALWAYS = frozenset({"_scatter_elemwise_div", "_square_sum", "_contrib_getnnz"})


class StorageFallbackWarning(UserWarning):
    """An operator ran on dense copies of sparse inputs (MXNet's storage fallback)."""


def needs_storage_dispatch(op, raw, values):
    """Whether a call must go through storage inference rather than the dense path."""
    if any(isinstance(v, BaseSparseNDArray) for v in values):
        return True
    if op.name in _ALWAYS:
        return True
    if op.name not in _MAKES_SPARSE:
        return False
    wanted = raw.get("stype") if op.name == "cast_storage" else raw.get("forward_stype")
    return wanted not in (None, "None", DEFAULT)


def to_parts(array):
    """What a kernel takes for ``array``: Parts for sparse arrays, the backend array else."""
    if isinstance(array, BaseSparseNDArray):
        return Parts(array.stype, array._values, tuple(array._aux), tuple(array.shape))
    return array._data


def from_parts(value, ctx):
    """An NDArray (sparse where ``value`` is Parts) on ``ctx`` around a kernel's result."""
    if isinstance(value, Parts):
        return make_sparse(value.stype, value.values, value.aux, value.shape, ctx)
    return NDArray(value, ctx)


def warn_fallback(op_name, params, in_stypes, out_stypes, device_type):
    """MXNet's storage fallback message, once per distinct text (warnings' default)."""
    if os.environ.get("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1") in ("0", "false", "False"):
        return
    message = (
        "\nStorage type fallback detected:\n"
        + describe(op_name, params, in_stypes, out_stypes, device_type)
        + "\nThe operator with default storage type will be dispatched for execution. You're "
        "seeing this warning message because the operator above is unable to process the "
        "given ndarrays with specified storage types, context and parameter. Temporary dense "
        "ndarrays are generated in order to execute the operator. This does not affect the "
        "correctness of the programme. You can set environment variable "
        "MXNET_STORAGE_FALLBACK_LOG_VERBOSE to 0 to suppress this warning."
    )
    warnings.warn(message, StorageFallbackWarning, stacklevel=4)


def densified(xp, values, ctx, op_name):
    """Dense backend arrays of kernel inputs, refusing any whose dense form cannot fit."""
    dense = []
    for value in values:
        if isinstance(value, Parts):
            check_dense_fits(value.shape, value.dtype, ctx, f"{op_name}: a {value.stype} input")
        dense.append(to_dense(xp, value))
    return dense


def run_with_storage(op, op_ctx, params, raw, values, aux, ctx, warn=True):
    """``(outputs, out_stypes, state)`` of one call on kernel inputs.

    ``values`` and ``aux`` are kernel inputs (``to_parts``); ``raw`` the string
    parameters, shown in the fallback warning as MXNet shows them. ``state`` is
    the dense kernel's saved state where the call ran densely (what its
    backward needs), None where a sparse kernel ran. ``warn=False``: the caller
    gave the fallback warning already (an executor warns when it binds, as MXNet).
    """
    xp = op_ctx.xp
    in_stypes = [v.stype if isinstance(v, Parts) else DEFAULT for v in values]
    n_out = len(op.outputs(params))
    out_stypes, mode = infer_storage(op.name, params, in_stypes, n_out, ctx.device_type)
    outputs = state = None
    if mode == FALLBACK:
        if warn:
            warn_fallback(op.name, raw, in_stypes, out_stypes, ctx.device_type)
    elif op.name in KERNELS and mode != DENSE:
        outputs = KERNELS[op.name](op_ctx, op, params, list(values), out_stypes)
    if outputs is None:  # dense computation, then the inferred storage
        dense_in = densified(xp, values, ctx, op.name)
        dense_aux = densified(xp, aux, ctx, op.name)
        outputs, state = op.forward(op_ctx, params, dense_in, dense_aux)
        for target, value in zip(aux, dense_aux, strict=True):
            if not isinstance(target, Parts) and target is not value:
                target[...] = value
        outputs = [from_dense(xp, o, s) for o, s in zip(outputs, out_stypes, strict=False)]
    return list(outputs), out_stypes, state
