"""Storage rules of the update operators, and which of their kernels runs.

MXNet 1.9.1 (src/operator/optimizer_op-inl.h, contrib/optimizer_op-inl.h)
gives ``sgd_update`` SGDStorageType, ``sgd_mom_update`` and ``adam_update``
StdOptStorageType, ``ftrl_update`` ElemwiseStorageType (row_sparse only),
``_sparse_adagrad_update`` AdagradStorageType and
``_contrib_group_adagrad_update`` GroupAdagradStorageType. Where a rule picks
the sparse kernel (``SPARSE``), the kernel's own test then picks the *lazy*
update (only the gradient's rows change, states included) or the *standard*
one (every row, the missing gradient rows counting as zeros): ``lazy_kernel``.
The other update operators have no rule: dense inputs run dense, sparse ones
fall back. Importing this module adds the rules to ``sparse_stypes.FORWARD``.
"""

from .sparse_stypes import DEFAULT, DENSE, FALLBACK, FORWARD, RSP, SPARSE, StorageTypeError

__all__ = ["UPDATE_RULES", "lazy_kernel", "NO_DENSE_KERNEL"]

# operators MXNet registers without a dense kernel (dense calls fail there)
NO_DENSE_KERNEL = frozenset({"_sparse_adagrad_update", "_contrib_group_adagrad_update"})


def _all_default(ins):
    return all(s == DEFAULT for s in ins)


def _sgd(p, ins, dev):
    """SGDStorageType: a row_sparse gradient on a dense or row_sparse weight has a kernel."""
    weight, grad = ins
    if _all_default(ins):
        return (DEFAULT,), DENSE
    if grad == RSP and weight in (RSP, DEFAULT):
        return (weight,), SPARSE
    return (DEFAULT,), FALLBACK


def _std_opt(op_name):
    """StdOptStorageType: states of the weight's storage, or dense states of a row_sparse weight."""

    def rule(p, ins, dev):
        weight, grad, state, *more = ins
        for index, other in enumerate(more, 3):
            if other != state:
                raise StorageTypeError(
                    f"{op_name}: inconsistent storage types detected in state {index}: "
                    f"{other!r} where state 2 is {state!r} (MXNet requires one storage type "
                    "for all states); make them alike with tostype()"
                )
        if _all_default(ins):
            return (DEFAULT,), DENSE
        if grad == RSP and weight in (RSP, DEFAULT) and state == weight:
            return (weight,), SPARSE
        if grad == RSP and weight == RSP and state == DEFAULT:
            return (RSP,), SPARSE
        return (DEFAULT,), FALLBACK

    return rule


def _ftrl(p, ins, dev):
    """ElemwiseStorageType<rsp only>: all dense runs dense, all row_sparse the sparse kernel."""
    if _all_default(ins):
        return (DEFAULT,), DENSE
    if all(s == RSP for s in ins):
        return (RSP,), SPARSE
    return (DEFAULT,), FALLBACK


def _adagrad(p, ins, dev):
    """AdagradStorageType: row_sparse grad, state like the weight, no weight decay; else fails."""
    weight, grad, state = ins
    if grad == RSP and weight in (RSP, DEFAULT) and state == weight and p.wd == 0:
        return (weight,), SPARSE
    return None


def _group_adagrad(p, ins, dev):
    """GroupAdagradStorageType; MXNet registers no dense kernel for the all-dense case."""
    weight, grad, state = ins
    if _all_default(ins):
        raise StorageTypeError(
            "Operator _contrib_group_adagrad_update is not implemented for dense gradients "
            "(MXNet 1.9.1 has only its row_sparse kernel: 'not implemented for CPU'); pass a "
            "row_sparse gradient, or use mx.optimizer.contrib.GroupAdaGrad"
        )
    if grad == RSP and weight in (RSP, DEFAULT) and state == weight:
        return (weight,), SPARSE
    return None


UPDATE_RULES = {
    "sgd_update": _sgd,
    "sgd_mom_update": _std_opt("sgd_mom_update"),
    "adam_update": _std_opt("adam_update"),
    "ftrl_update": _ftrl,
    "_sparse_adagrad_update": _adagrad,
    "_contrib_group_adagrad_update": _group_adagrad,
}
FORWARD.update(UPDATE_RULES)


def lazy_kernel(op_name, params, in_stypes):
    """Whether the sparse kernel MXNet picks updates only the gradient's rows.

    sgd_update: as ``lazy_update`` says (the standard kernel decays every
    row). sgd_mom_update, adam_update: lazy when asked for and the states
    share the weight's storage, else standard. ftrl_update and the AdaGrads
    are always lazy.
    """
    if op_name == "sgd_update":
        return bool(params.lazy_update)
    if op_name in ("sgd_mom_update", "adam_update"):
        return bool(params.lazy_update) and in_stypes[2] == in_stypes[0]
    return True
