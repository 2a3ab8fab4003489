"""Storage-type inference: which storage an operator's outputs get, and how it runs.

MXNet gives each operator an ``FInferStorageType`` function; from the input
storage types (``default``, ``csr``, ``row_sparse``) and the parameters it
picks the output storage types and a dispatch mode: the dense kernel, a
sparse kernel, or the *fallback* (inputs made dense, the dense kernel run,
MXNet's "Storage type fallback detected" warning). This module holds those
rules as one table, ``FORWARD`` (op name -> rule); the gradients' rules are
``sparse_grad_stypes``'s. A rule returns
``(out_stypes, mode)`` or raises ``StorageTypeError`` where MXNet's
inference fails ("Operator not implemented"). Operators without a rule run
dense on dense inputs and fall back on sparse ones, as MXNet's default does.
The facts are MXNet 1.9.1's (src/operator/tensor/*-inl.h), checked against
tests/golden/sparse_ops/imperative.json.
"""

from ..errors import RebindError
from .contrib_dgl import STORAGE as DGL_STORAGE
from .contrib_dgl_sample import STORAGE as SAMPLER_STORAGE

__all__ = [
    "DEFAULT",
    "CSR",
    "RSP",
    "DENSE",
    "SPARSE",
    "FALLBACK",
    "StorageTypeError",
    "infer_storage",
    "describe",
]

DEFAULT, CSR, RSP = "default", "csr", "row_sparse"
DENSE, SPARSE, FALLBACK = "dense", "sparse", "fallback"  # FCompute, FComputeEx, fallback


class StorageTypeError(RebindError, ValueError):
    """No kernel of an operator takes the given storage types (MXNet's inference fails)."""


def describe(op_name, params, in_stypes, out_stypes, device_type):
    """MXNet's operator_stype_string: the lines its fallback warning and errors show."""
    shown = {k: v for k, v in (params or {}).items()}
    inputs = "".join(f"{s}, " for s in in_stypes)
    outputs = "".join(f"{s}, " for s in out_stypes)
    return (
        f"operator = {op_name}\ninput storage types = [{inputs}]\n"
        f"output storage types = [{outputs}]\nparams = {shown}\n"
        f"context.dev_mask = {device_type}"
    )


def _all(stypes, stype):
    return all(s == stype for s in stypes)


def _fallback(n_out=1):
    return (DEFAULT,) * n_out, FALLBACK


def _same_sparse(rsp=True, csr=True, n_out=1):
    """ElemwiseStorageType: all dense -> dense; all rsp / all csr -> that; else fallback."""

    def rule(p, ins, dev):
        if _all(ins, DEFAULT):
            return (DEFAULT,) * n_out, DENSE
        for allowed, stype in ((rsp, RSP), (csr, CSR)):
            if allowed and _all(ins, stype):
                return (stype,) * n_out, SPARSE
        return _fallback(n_out)

    return rule


def _prefer_dense(p, ins, dev):
    """elemwise_add / elemwise_sub: sparse pairs keep their storage, mixed pairs give dense."""
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if _all(ins, RSP) or _all(ins, CSR):
        return (ins[0],), SPARSE
    if DEFAULT in ins and (CSR in ins or RSP in ins):
        return (DEFAULT,), SPARSE
    return _fallback()


def _prefer_sparse(p, ins, dev):
    """elemwise_mul: a sparse operand (with a dense or same-storage one) keeps its storage."""
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if _all(ins, RSP) or _all(ins, CSR):
        return (ins[0],), SPARSE if dev == "cpu" or ins[0] == CSR else FALLBACK
    if DEFAULT in ins and (CSR in ins or RSP in ins):
        return (CSR if CSR in ins else RSP,), SPARSE
    return _fallback()


def _dense_result(p, ins, dev):
    """elemwise_div: any operands but a csr beside another sparse one give dense."""
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if CSR in ins and DEFAULT not in ins:
        return _fallback()
    return (DEFAULT,), SPARSE


def _broadcast_add(p, ins, dev):
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if sorted(ins) == [CSR, DEFAULT]:
        return (DEFAULT,), SPARSE
    return _fallback()


def _broadcast_mul(p, ins, dev):
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if tuple(ins) == (CSR, DEFAULT):
        return (CSR,), SPARSE
    return _fallback()


def _scalar_keeps(p, ins, dev):
    """_mul_scalar, _div_scalar, the _scatter_*_scalar ops: sparse stays sparse."""
    return (ins[0],), DENSE if ins[0] == DEFAULT else SPARSE


def _scalar_dense_result(p, ins, dev):
    """_plus_scalar, _minus_scalar: sparse only when the scalar is 0 (else dense)."""
    if ins[0] == DEFAULT:
        return (DEFAULT,), DENSE
    return (ins[0] if p.scalar == 0 else DEFAULT,), SPARSE if dev == "cpu" else FALLBACK


def _scatter_div(p, ins, dev):
    """_scatter_elemwise_div: a row_sparse lhs gives row_sparse; anything else falls back."""
    return ((RSP,), SPARSE) if ins[0] == RSP else _fallback()


def _reduce_sum(p, ins, dev):
    """sum / mean: csr along axis 0 or 1 (no keepdims, no exclude) has a sparse kernel."""
    if ins[0] == DEFAULT:
        return (DEFAULT,), DENSE
    axis = tuple(p.axis) if p.axis is not None else ()
    if ins[0] == CSR and len(axis) == 1 and axis[0] in (0, 1) and not p.keepdims:
        if not p.exclude:
            return (DEFAULT,), SPARSE if dev == "cpu" else FALLBACK
    return _fallback()


def _square_sum(p, ins, dev):
    axis = tuple(p.axis) if p.axis is not None else ()
    if ins[0] == RSP and axis and axis[0] == 1 and p.keepdims:
        return (RSP,), SPARSE
    if ins[0] == RSP and axis and (axis[0] == 0 or (axis[0] == 1 and not p.keepdims)):
        return (DEFAULT,), SPARSE
    return None


def _dot(p, ins, dev):
    """MXNet's DotForwardInferStorageType, forward_stype hint included.

    As there, a branch that matches the storage types but not the hint leaves
    its own default as the fallback's output storage (dns x csr.T gives csr).
    """
    lhs, rhs = ins
    hint = target = p.forward_stype
    only_lhs_t = p.transpose_a and not p.transpose_b
    no_t = not p.transpose_a and not p.transpose_b
    rhs_rsp_or_dns = rhs in (RSP, DEFAULT)
    if lhs == DEFAULT and rhs == DEFAULT:
        target = hint or DEFAULT
        if target == DEFAULT:
            return (DEFAULT,), DENSE
    if lhs == CSR and only_lhs_t and rhs_rsp_or_dns:
        target = hint or RSP
        if target in (RSP, DEFAULT):
            return (target,), SPARSE
    if lhs == CSR and rhs_rsp_or_dns and no_t:
        target = hint or DEFAULT
        if target == DEFAULT:
            return (DEFAULT,), SPARSE
    if lhs == DEFAULT and rhs == CSR and not p.transpose_a:
        target = hint or CSR
        if dev == "cpu" and target == CSR and not p.transpose_b:
            return (CSR,), SPARSE
        if target == DEFAULT:
            return (DEFAULT,), SPARSE
    return (target or DEFAULT,), FALLBACK


def _cast_storage(p, ins, dev):
    if ins[0] == DEFAULT or p.stype in (DEFAULT, ins[0]):
        return (p.stype,), SPARSE if ins[0] != p.stype or ins[0] != DEFAULT else DENSE
    return None


def _clip(p, ins, dev):
    if ins[0] == DEFAULT:
        return (DEFAULT,), DENSE
    # a range without 0: MXNet's inference fails (its rule assigns dense, reports failure)
    return ((ins[0],), SPARSE) if p.a_min <= 0 <= p.a_max else None


def _slice(p, ins, dev):
    if ins[0] == DEFAULT:
        return (DEFAULT,), DENSE
    steps = tuple(p.step or ())
    trivial = not steps or (len(steps) == 1 and steps[0] in (None, 1))
    if ins[0] == CSR and trivial:
        return (CSR,), SPARSE
    return _fallback()


def _where(p, ins, dev):
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if tuple(ins) == (CSR, DEFAULT, DEFAULT):
        return (DEFAULT,), SPARSE
    return _fallback()


def _embedding(p, ins, dev):
    data, weight = ins
    if data == DEFAULT and weight == DEFAULT:
        return (DEFAULT,), DENSE
    if data == DEFAULT and weight == RSP:
        return (DEFAULT,), SPARSE
    return None


def _sparse_embedding(p, ins, dev):
    if ins[0] == DEFAULT and ins[1] in (DEFAULT, RSP):
        return (DEFAULT,), SPARSE
    return None


def _retain(p, ins, dev):
    if tuple(ins) == (RSP, DEFAULT):
        return (RSP,), SPARSE
    return None


def _regression(p, ins, dev):
    data, label = ins
    if data == DEFAULT and label == DEFAULT:
        return (DEFAULT,), DENSE
    if data == DEFAULT and label == CSR:
        return (DEFAULT,), SPARSE
    return _fallback()


def _norm(p, ins, dev):
    """norm: the L2 norm of a whole sparse array has a sparse kernel."""
    if ins[0] == DEFAULT:
        return (DEFAULT,), DENSE
    whole = p.axis is None or len(tuple(p.axis)) == 0
    if p.ord == 2 and whole and not p.keepdims:
        return (DEFAULT,), SPARSE
    return _fallback()


def _add_n(p, ins, dev):
    """add_n (ElementWiseSum): all row_sparse stays row_sparse; any other mix falls back."""
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if _all(ins, RSP):
        return (RSP,), SPARSE
    return _fallback()


def _quadratic(p, ins, dev):
    if ins[0] == DEFAULT:
        return (DEFAULT,), DENSE
    if ins[0] == CSR and p.c == 0:
        return (CSR,), SPARSE
    return _fallback()


def _batch_norm(p, ins, dev):
    """BatchNorm falls back on sparse inputs, except that MXNet refuses fix_gamma there."""
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if p.fix_gamma:
        raise StorageTypeError(
            "BatchNorm: fix_gamma=True is not supported for sparse ndarrays (as in MXNet "
            "1.9.1, tracked at #11647); pass dense arrays or fix_gamma=False"
        )
    return _fallback()


def _logic_scalar(compare):
    """Comparisons with a scalar: sparse stays sparse where ``0 <op> scalar`` is false."""

    def rule(p, ins, dev):
        if ins[0] == DEFAULT:
            return (DEFAULT,), DENSE
        if not compare(0.0, p.scalar):
            return (ins[0],), SPARSE
        return _fallback()

    return rule


def _take(p, ins, dev):
    data, index = ins
    if _all(ins, DEFAULT):
        return (DEFAULT,), DENSE
    if data == CSR and index == DEFAULT and p.axis == 0 and p.mode in ("wrap", "clip"):
        return (CSR,), SPARSE
    return _fallback()


def _getnnz(p, ins, dev):
    return ((DEFAULT,), SPARSE) if ins[0] == CSR else None


_COMPARISONS = {
    "_equal_scalar": lambda a, b: a == b,
    "_not_equal_scalar": lambda a, b: a != b,
    "_greater_scalar": lambda a, b: a > b,
    "_greater_equal_scalar": lambda a, b: a >= b,
    "_lesser_scalar": lambda a, b: a < b,
    "_lesser_equal_scalar": lambda a, b: a <= b,
}

# unary functions with csr and row_sparse kernels (f(0) == 0), MXNet's
# MXNET_OPERATOR_REGISTER_UNARY_WITH_RSP_CSR list plus the identity-like ops
SPARSE_UNARY = (
    "relu negative abs sign round rint ceil floor trunc fix square sqrt cbrt sin tan "
    "arcsin arctan degrees radians sinh tanh arcsinh arctanh expm1 log1p zeros_like "
    "BlockGrad make_loss _copy _contrib_round_ste _contrib_sign_ste"
).split()

FORWARD = {name: _same_sparse() for name in SPARSE_UNARY}
FORWARD.update(
    {
        "elemwise_add": _prefer_dense,
        "elemwise_sub": _prefer_dense,
        "elemwise_mul": _prefer_sparse,
        "elemwise_div": _dense_result,
        "_maximum": _same_sparse(),
        "_minimum": _same_sparse(),
        "_hypot": _same_sparse(),
        "_grad_add": _same_sparse(),
        "add_n": _add_n,
        "broadcast_add": _broadcast_add,
        "broadcast_sub": _broadcast_add,
        "broadcast_mul": _broadcast_mul,
        "broadcast_div": _broadcast_mul,
        "_mul_scalar": _scalar_keeps,
        "_div_scalar": _scalar_keeps,
        "_scatter_plus_scalar": _scalar_keeps,
        "_scatter_minus_scalar": _scalar_keeps,
        "_plus_scalar": _scalar_dense_result,
        "_minus_scalar": _scalar_dense_result,
        "_scatter_elemwise_div": _scatter_div,
        "sum": _reduce_sum,
        "mean": _reduce_sum,
        "_square_sum": _square_sum,
        "dot": _dot,
        "cast_storage": _cast_storage,
        "clip": _clip,
        "slice": _slice,
        "where": _where,
        "Embedding": _embedding,
        "_contrib_SparseEmbedding": _sparse_embedding,
        "_sparse_retain": _retain,
        "LinearRegressionOutput": _regression,
        "LogisticRegressionOutput": _regression,
        "MAERegressionOutput": _regression,
        "norm": _norm,
        "_contrib_quadratic": _quadratic,
        "BatchNorm": _batch_norm,
        "take": _take,
        "_contrib_getnnz": _getnnz,
        "_contrib_edge_id": _getnnz,  # csr in, dense out; nothing else (as MXNet)
    }
)
FORWARD.update({**DGL_STORAGE, **SAMPLER_STORAGE})  # DGL graph ops: csr in (contrib_dgl*)


FORWARD.update({name: _logic_scalar(compare) for name, compare in _COMPARISONS.items()})


def infer_storage(op_name, params, in_stypes, n_out=1, device_type="cpu"):
    """``(out_stypes, mode)`` of ``op_name`` on inputs of ``in_stypes``.

    ``mode`` is ``"dense"`` (all dense, the ordinary kernel), ``"sparse"``
    (a sparse kernel) or ``"fallback"`` (dense copies, with MXNet's warning).
    Raises StorageTypeError where MXNet has no kernel for the combination.
    """
    in_stypes = tuple(in_stypes)
    rule = FORWARD.get(op_name)
    if rule is None:
        if _all(in_stypes, DEFAULT):
            return (DEFAULT,) * n_out, DENSE
        return _fallback(n_out)
    found = rule(params, in_stypes, device_type)
    if found is None:
        shown = describe(op_name, None, in_stypes, ("unknown",) * n_out, device_type)
        raise StorageTypeError(
            f"Operator not implemented: {shown}\n(MXNet has no kernel of {op_name} for these "
            "storage types either; cast the inputs with tostype() first)"
        )
    return found
