"""Storage types of gradients: MXNet's backward FInferStorageType rules.

What ``simple_bind`` allocates for each argument's gradient comes from these
(``symbol.infer_storage.grad_stypes`` walks the graph backward). Facts from
MXNet 1.9.1: dot-inl.h, indexing_op.h, square_sum-inl.h, elemwise_binary_op*,
and its executors' gradient arrays recorded in tests/golden/sparse_ops.
"""

from .sparse_stypes import CSR, DEFAULT, RSP, SPARSE_UNARY

__all__ = ["BACKWARD", "infer_backward_storage"]


def _dot_grads(p, ins, ograd):
    lhs, rhs = ins
    no_t = not p.transpose_a and not p.transpose_b
    if lhs == CSR and no_t and ograd in (RSP, DEFAULT):
        return (DEFAULT, RSP)
    return (DEFAULT, DEFAULT)


def _embedding_grads(p, ins, ograd):
    return (DEFAULT, RSP if p.sparse_grad else DEFAULT)


def _square_sum_grads(p, ins, ograd):
    return (RSP if ins[0] == RSP else DEFAULT,)


def _same_as_ograd(p, ins, ograd):
    return (ograd if ograd in (RSP, CSR) else DEFAULT,) * len(ins)


def _unary_grads(p, ins, ograd):
    """A sparse unary op's backward keeps the storage its gradient and input share."""
    return (ograd if ograd == ins[0] and ograd in (RSP, CSR) else DEFAULT,)


BACKWARD = {name: _unary_grads for name in SPARSE_UNARY if name not in ("zeros_like", "BlockGrad")}
BACKWARD.update(
    {
        "dot": _dot_grads,
        "Embedding": _embedding_grads,
        "_contrib_SparseEmbedding": lambda p, ins, ograd: (DEFAULT, RSP),
        "_square_sum": _square_sum_grads,
        "_sparse_retain": lambda p, ins, ograd: (RSP, DEFAULT),
        "elemwise_add": _same_as_ograd,
        "elemwise_sub": _same_as_ograd,
        # the backward is _copy of the head gradient: its storage is the gradient's
        "cast_storage": lambda p, ins, ograd: (ograd or DEFAULT,),
    }
)


def infer_backward_storage(op_name, params, in_stypes, ograd_stype):
    """The storage type of each input's gradient (dense where MXNet's rule gives dense)."""
    rule = BACKWARD.get(op_name)
    if rule is None:
        return (DEFAULT,) * len(in_stypes)
    return rule(params, tuple(in_stypes), ograd_stype)
