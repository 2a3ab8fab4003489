"""The AdaGrad update operators MXNet has only for row_sparse gradients.

``_sparse_adagrad_update`` (``mx.nd.sparse.adagrad_update``) and
``_contrib_group_adagrad_update`` (``mx.nd.contrib.group_adagrad_update``)
have no dense kernel in MXNet 1.9.1: called with a dense gradient they fail
(storage inference, or "not implemented for CPU"). Their kernels update the
rows the gradient holds (``core/ndarray/imperative_sparse_update.py`` gathers
those rows and runs the forward below on them), the weight in place through
``out=weight``, the history as a mutable input. The arithmetic is MXNet's,
operation by operation:

- AdaGrad: ``g = clip(grad * rescale_grad)``, ``history += g * g``,
  ``weight - g / sqrt(history + epsilon) * lr`` (``wd`` must be 0).
- Group AdaGrad: one history value per row, ``history += mean(g * g)`` over
  the row, ``weight - lr * g / sqrt(history + epsilon)``.
"""

import attrs

from ..optimizer import rules
from .base import OpDef, merge_shape
from .optimizer_ops import bound
from .optimizer_params import params_class as _params

__all__ = ["OPS"]

AdagradParams = _params(
    "AdagradParams",
    [
        ("lr", "float", attrs.NOTHING),
        ("epsilon", "float", 1e-7),
        ("wd", "float", 0.0),
        ("rescale_grad", "float", 1.0),
        ("clip_gradient", "float", -1.0),
    ],
)
GroupAdagradParams = _params(
    "GroupAdagradParams",
    [
        ("lr", "float", attrs.NOTHING),
        ("rescale_grad", "float", 1.0),
        ("clip_gradient", "float", -1.0),
        ("epsilon", "float", 1e-5),
    ],
)


def _adagrad(ctx, p, inputs, aux):
    """One AdaGrad step on the given rows: the new weight; ``history`` changes in place."""
    weight, grad, history = inputs
    xp, kind = ctx.xp, weight.dtype.type
    g = rules.clipped_gradient(grad, p.rescale_grad, bound(p.clip_gradient))
    history += g * g
    ratio = g / xp.sqrt(history + rules.setting(kind, p.epsilon))
    return [weight - ratio * rules.setting(kind, p.lr)], None


def _group_adagrad(ctx, p, inputs, aux):
    """One Group AdaGrad step: one history value per row (shape (rows,) or (rows, 1))."""
    weight, grad, history = inputs
    xp, kind = ctx.xp, weight.dtype.type
    g = rules.clipped_gradient(grad, p.rescale_grad, bound(p.clip_gradient))
    per_row = (g * g).reshape(g.shape[0], -1)
    history += (per_row.sum(axis=1) / kind(per_row.shape[1])).reshape(history.shape)
    column = history.reshape((history.shape[0],) + (1,) * (weight.ndim - 1))
    step = rules.setting(kind, p.lr) * g / xp.sqrt(column + rules.setting(kind, p.epsilon))
    return [weight - step], None


def _group_shape(params, in_shapes, out_shapes, aux_shapes):
    """MXNet's GroupAdagradShape: weight, grad and output alike; history one value per row."""
    shape = merge_shape(out_shapes[0] if out_shapes else None, in_shapes[0], "weight")
    shape = merge_shape(shape, in_shapes[1], "grad")
    history = in_shapes[2]
    if shape is not None and history is not None and history[0] != shape[0]:
        raise ValueError(
            f"_contrib_group_adagrad_update: history must hold one value per weight row: "
            f"expected shape ({shape[0]}, 1), got {tuple(history)}"
        )
    return [shape, shape, history], [shape], aux_shapes


def _same_type(params, in_types, out_types, aux_types):
    dtype = next((t for t in (*in_types, *out_types) if t is not None), None)
    return [dtype] * len(in_types), [dtype], aux_types


OPS = [
    OpDef(
        name="_sparse_adagrad_update",
        params=AdagradParams,
        arguments=("weight", "grad", "history"),
        forward=_adagrad,
        infer_type=_same_type,
        doc="AdaGrad update of the rows a row_sparse gradient holds (no weight decay).",
    ),
    OpDef(
        name="_contrib_group_adagrad_update",
        params=GroupAdagradParams,
        arguments=("weight", "grad", "history"),
        forward=_group_adagrad,
        infer_shape=_group_shape,
        infer_type=_same_type,
        doc="Group AdaGrad update (one rate per row) of the rows a row_sparse gradient holds.",
    ),
]
