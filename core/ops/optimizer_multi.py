"""Fused updates of several weights in one call, and the helpers of loss scaling and LARS.

``multi_sgd_update`` and its relatives take ``num_weights`` groups of inputs
(``weight_i, grad_i[, mom_i][, weight32_i]``) and return ``num_weights`` new
weights; each group runs the rule of the single-weight operator (see
``optimizer_ops.py``), with the rate and decay of its position in ``lrs`` and
``wds``. The ``preloaded_`` variants read ``lrs`` and ``wds`` from two
trailing arrays instead of attributes; ``_multi_adamw_update`` reads its
``rescale_grad`` from a trailing one-element array. States are mutated in
place, as in MXNet. ``multi_sum_sq``, ``multi_lars``, ``(multi_)all_finite``
and ``reset_arrays`` are the helpers MXNet's LARS and AMP code call.
"""

from types import SimpleNamespace

import numpy as np

from ..optimizer import multi_lamb, rules
from .base import OpDef, merge_shape
from .optimizer_ops import FLOAT32, REQUIRED, _adamw, _params, _sgd

__all__ = ["OPS"]

_NUM_WEIGHTS = ("num_weights", "int", 1)
_RESCALE = ("rescale_grad", "float", 1.0)
_CLIP = ("clip_gradient", "float", -1.0)
_RATES = [("lrs", "floats", REQUIRED), ("wds", "floats", REQUIRED)]

MultiSGDParams = _params("MultiSGDParams", [*_RATES, _RESCALE, _CLIP, _NUM_WEIGHTS])
MultiSGDMomParams = _params(
    "MultiSGDMomParams", [*_RATES, ("momentum", "float", 0.0), _RESCALE, _CLIP, _NUM_WEIGHTS]
)
PreloadedSGDParams = _params("PreloadedSGDParams", [_RESCALE, _CLIP, _NUM_WEIGHTS])
PreloadedSGDMomParams = _params(
    "PreloadedSGDMomParams", [("momentum", "float", 0.0), _RESCALE, _CLIP, _NUM_WEIGHTS]
)
MultiAdamWParams = _params(
    "MultiAdamWParams",
    [
        ("lrs", "floats", REQUIRED),
        ("beta1", "float", 0.9),
        ("beta2", "float", 0.999),
        ("epsilon", "float", 1e-8),
        ("wds", "floats", REQUIRED),
        ("etas", "floats", REQUIRED),
        _CLIP,
        _NUM_WEIGHTS,
    ],
)
MultiLAMBParams = _params(
    "MultiLAMBParams",
    [
        ("learning_rates", "floats", REQUIRED),
        ("beta1", "float", 0.9),
        ("beta2", "float", 0.999),
        ("epsilon", "float", 1e-6),
        ("wds", "floats", REQUIRED),
        _RESCALE,
        ("lower_bound", "float", -1.0),
        ("upper_bound", "float", -1.0),
        _CLIP,
        ("bias_correction", "bool", True),
        ("step_count", "shape", REQUIRED),
        ("num_tensors", "int", 1),
    ],
)
LARSParams = _params(
    "LARSParams", [("eta", "float", REQUIRED), ("eps", "float", REQUIRED), _RESCALE]
)
ArraysParams = _params("ArraysParams", [("num_arrays", "int", REQUIRED)])
AllFiniteParams = _params("AllFiniteParams", [("init_output", "bool", True)])
MultiAllFiniteParams = _params(
    "MultiAllFiniteParams", [("num_arrays", "int", 1), ("init_output", "bool", True)]
)


def _count(p):
    return p.num_tensors if hasattr(p, "num_tensors") else p.num_weights


class _Group:
    """The layout of a multi-weight op: names per weight, float32 ones, trailing inputs."""

    def __init__(self, names, master=(), trailing=()):
        self.names, self.master, self.trailing = names, master, trailing

    def arguments(self, p):
        per = [f"{name}_{i}" for i in range(_count(p)) for name in self.names]
        return (*per, *self.trailing)

    def infer_shape(self, p, in_shapes, out_shapes, aux_shapes):
        stride, outs = len(self.names), []
        for i in range(_count(p)):
            shape, names = out_shapes[i], self.arguments(p)
            for j in range(stride):
                shape = merge_shape(shape, in_shapes[i * stride + j], names[i * stride + j])
            in_shapes[i * stride : (i + 1) * stride] = [shape] * stride
            outs.append(shape)
        for k, name in enumerate(self.trailing):
            index = _count(p) * stride + k
            size = 1 if name == "rescale_grad" else _count(p)
            in_shapes[index] = merge_shape((size,), in_shapes[index], name)
        return in_shapes, outs, aux_shapes

    def infer_type(self, p, in_types, out_types, aux_types):
        stride, outs = len(self.names), []
        for i in range(_count(p)):
            group = in_types[i * stride : (i + 1) * stride]
            typed = [t for n, t in zip(self.names, group, strict=True) if n not in self.master]
            dtype = next((t for t in (*typed, out_types[i]) if t is not None), None)
            in_types[i * stride : (i + 1) * stride] = [
                FLOAT32 if n in self.master else dtype for n in self.names
            ]
            outs.append(dtype)
        for k in range(len(self.trailing)):
            index = _count(p) * stride + k
            in_types[index] = in_types[index] or FLOAT32
        return in_types, outs, aux_types


def _multi_op(name, params, group, rule, mp):
    """An OpDef running ``rule(xp, p, i, trailing, given, weight, *others)`` per group.

    ``given`` is the weight input as it came; ``weight`` the array to update
    (a copy of it, or the float32 master copy for the mp_ variants).
    """

    def forward(ctx, p, inputs, aux):
        stride, outs = len(group.names), []
        trailing = inputs[_count(p) * stride :]
        for i in range(_count(p)):
            weight, *others = inputs[i * stride : (i + 1) * stride]
            if mp:
                rule(ctx.xp, p, i, trailing, weight, others[-1], *others[:-1])
                outs.append(others[-1].astype(weight.dtype))
            else:
                updated = weight.copy()
                rule(ctx.xp, p, i, trailing, weight, updated, *others)
                outs.append(updated)
        return outs, None

    return OpDef(
        name=name,
        params=params,
        arguments=group.arguments,
        outputs=lambda p: tuple(f"output{i}" for i in range(_count(p))),
        infer_shape=group.infer_shape,
        infer_type=group.infer_type,
        forward=forward,
    )


def _sgd_rule(xp, p, i, trailing, given, weight, grad, mom=None):
    if trailing:  # preloaded: rates and decays from the two trailing arrays
        lr, wd = float(trailing[0].reshape(-1)[i]), float(trailing[1].reshape(-1)[i])
    else:
        lr, wd = p.lrs[i], p.wds[i]
    view = SimpleNamespace(
        lr=lr,
        wd=wd,
        momentum=getattr(p, "momentum", 0.0),
        rescale_grad=p.rescale_grad,
        clip_gradient=p.clip_gradient,
    )
    _sgd(xp, view, weight, grad, mom)


def _adamw_rule(xp, p, i, trailing, given, weight, grad, mean, var):
    view = SimpleNamespace(
        lr=p.lrs[i],
        wd=p.wds[i],
        eta=p.etas[i],
        beta1=p.beta1,
        beta2=p.beta2,
        epsilon=p.epsilon,
        clip_gradient=p.clip_gradient,
    )
    _adamw(xp, view, weight, grad, mean, var, trailing[0])


def _lamb_rule(xp, p, i, trailing, given, weight, grad, mean, var):
    # MXNet takes the weight norm of the weight input, float16 in the mp_ variant
    lr, wd, t = p.learning_rates[i], p.wds[i], p.step_count[i]
    multi_lamb.lamb_tensor_step(xp, p, weight, given, grad, mean, var, lr, wd, t)


_SGD = _Group(("weight", "grad"))
_SGD_MOM = _Group(("weight", "grad", "mom"))
_MP_SGD = _Group(("weight", "grad", "weight32"), master=("weight32",))
_MP_SGD_MOM = _Group(("weight", "grad", "mom", "weight32"), master=("mom", "weight32"))
_RATE_ARRAYS = ("lrs", "wds")
_ADAM = ("weight", "grad", "mean", "var")
_MP = ("mean", "var", "weight32")


def _preloaded(group):
    return _Group(group.names, group.master, _RATE_ARRAYS)


# -- helpers: sums of squares, LARS, finiteness, resetting --------------------------


def _arrays(p):
    return tuple(f"array_{i}" for i in range(p.num_arrays))


def _sum_sq(ctx, p, inputs, aux):
    xp = ctx.xp
    sums = [xp.sum(xp.square(a.astype(FLOAT32))) for a in inputs]
    return [xp.stack(sums).astype(FLOAT32)], None


def _multi_lars(ctx, p, inputs, aux):
    lrs, weights_sum_sq, grads_sum_sq, wds = inputs
    xp = ctx.xp
    w_norm, g_norm = xp.sqrt(weights_sum_sq), xp.sqrt(grads_sum_sq) * np.float32(p.rescale_grad)
    rate = rules.lars_rate(xp, lrs, w_norm, g_norm, wds, np.float32(p.eta), np.float32(p.eps))
    return [rate.astype(FLOAT32, copy=False)], None


def _all_finite(ctx, p, inputs, aux):
    xp = ctx.xp
    finite = all(bool(xp.all(xp.isfinite(a))) for a in inputs)
    return [xp.full((1,), 1.0 if finite else 0.0, dtype=FLOAT32)], None


def _reset(ctx, p, inputs, aux):
    for array in inputs:
        array[...] = 0
    return [], None


def _fixed_output(shape_of):
    def infer(p, in_shapes, out_shapes, aux_shapes):
        return in_shapes, [merge_shape(shape_of(p), out_shapes[0], "output")], aux_shapes

    return infer


def _float32_output(p, in_types, out_types, aux_types):
    dtype = next((t for t in in_types if t is not None), None)
    return [t or dtype for t in in_types], [FLOAT32] * len(out_types), aux_types


def _all_float32(p, in_types, out_types, aux_types):
    return [FLOAT32] * len(in_types), [FLOAT32], aux_types


def _lars_shape(p, in_shapes, out_shapes, aux_shapes):
    shape = out_shapes[0]
    for name, s in zip(("lrs", "weights_sum_sq", "grads_sum_sq", "wds"), in_shapes, strict=True):
        shape = merge_shape(shape, s, name)
    return [shape] * 4, [shape], aux_shapes


OPS = [
    _multi_op("multi_sgd_update", MultiSGDParams, _SGD, _sgd_rule, mp=False),
    _multi_op("multi_sgd_mom_update", MultiSGDMomParams, _SGD_MOM, _sgd_rule, mp=False),
    _multi_op("multi_mp_sgd_update", MultiSGDParams, _MP_SGD, _sgd_rule, mp=True),
    _multi_op("multi_mp_sgd_mom_update", MultiSGDMomParams, _MP_SGD_MOM, _sgd_rule, mp=True),
    _multi_op("preloaded_multi_sgd_update", PreloadedSGDParams, _preloaded(_SGD), _sgd_rule, False),
    _multi_op(
        "preloaded_multi_sgd_mom_update",
        PreloadedSGDMomParams,
        _preloaded(_SGD_MOM),
        _sgd_rule,
        mp=False,
    ),
    _multi_op(
        "preloaded_multi_mp_sgd_update",
        PreloadedSGDParams,
        _preloaded(_MP_SGD),
        _sgd_rule,
        mp=True,
    ),
    _multi_op(
        "preloaded_multi_mp_sgd_mom_update",
        PreloadedSGDMomParams,
        _preloaded(_MP_SGD_MOM),
        _sgd_rule,
        mp=True,
    ),
    _multi_op(
        "_multi_adamw_update",
        MultiAdamWParams,
        _Group(_ADAM, trailing=("rescale_grad",)),
        _adamw_rule,
        mp=False,
    ),
    _multi_op(
        "_multi_mp_adamw_update",
        MultiAdamWParams,
        _Group((*_ADAM, "weight32"), master=_MP, trailing=("rescale_grad",)),
        _adamw_rule,
        mp=True,
    ),
    _multi_op("_multi_lamb_update", MultiLAMBParams, _Group(_ADAM), _lamb_rule, mp=False),
    _multi_op(
        "_multi_mp_lamb_update",
        MultiLAMBParams,
        _Group((*_ADAM, "weight32"), master=_MP),
        _lamb_rule,
        mp=True,
    ),
    OpDef(
        name="multi_sum_sq",
        params=ArraysParams,
        arguments=_arrays,
        forward=_sum_sq,
        infer_shape=_fixed_output(lambda p: (p.num_arrays,)),
        infer_type=_float32_output,
    ),
    OpDef(
        name="multi_lars",
        params=LARSParams,
        arguments=("lrs", "weights_sum_sq", "grads_sum_sq", "wds"),
        forward=_multi_lars,
        infer_shape=_lars_shape,
        infer_type=_all_float32,
    ),
    OpDef(
        name="all_finite",
        params=AllFiniteParams,
        forward=_all_finite,
        infer_shape=_fixed_output(lambda p: (1,)),
        infer_type=_float32_output,
    ),
    OpDef(
        name="multi_all_finite",
        params=MultiAllFiniteParams,
        arguments=_arrays,
        forward=_all_finite,
        infer_shape=_fixed_output(lambda p: (1,)),
        infer_type=_float32_output,
    ),
    OpDef(
        name="reset_arrays",
        params=ArraysParams,
        arguments=_arrays,
        outputs=(),
        forward=_reset,
        infer_shape=lambda p, i, o, a: (i, o, a),
        infer_type=lambda p, i, o, a: (i, o, a),
    ),
]
