"""Fused update operators of one weight: sgd_update, adam_update, lamb_update_phase1, ...

The arithmetic is ``rebind.optimizer.rules``', shared with the optimizers, so
``mx.nd.sgd_mom_update`` and ``mx.optimizer.SGD`` cannot drift apart. As in
MXNet, the states (``mom``, ``mean``, ``var``, ``weight32``, ...) are
mutable inputs, changed in place; the output is the new weight, which users
write back with ``out=weight``. The weight itself is left as it is. The
``mp_`` variants keep a float32 master copy ``weight32`` of a float16 weight
and return it cast to the weight's dtype. Gradient clipping is on for any
``clip_gradient >= 0`` (0 clips every gradient to 0), as in MXNet's kernels.
None of these operators has a gradient.
"""

import math

import attrs

from ..optimizer import rules
from .base import OpDef, elementwise_shape, merge_shape
from .optimizer_params import params_class as _params

__all__ = ["OPS", "bound", "update_op"]

FLOAT32 = "float32"


def bound(value):
    """An MXNet clip/bound parameter as a rules bound: None when negative (off)."""
    return None if value < 0 else value


REQUIRED = attrs.NOTHING
_CLIP = ("clip_gradient", "float", -1.0)
_RESCALE = ("rescale_grad", "float", 1.0)
_WD = ("wd", "float", 0.0)
_LR = ("lr", "float", REQUIRED)
_LAZY = ("lazy_update", "bool", True)

SGDParams = _params("SGDParams", [_LR, _WD, _RESCALE, _CLIP, _LAZY])
SGDMomParams = _params(
    "SGDMomParams", [_LR, ("momentum", "float", 0.0), _WD, _RESCALE, _CLIP, _LAZY]
)
NAGMomParams = _params("NAGMomParams", [_LR, ("momentum", "float", 0.0), _WD, _RESCALE, _CLIP])
SignSGDParams = _params("SignSGDParams", [_LR, _WD, _RESCALE, _CLIP])
SignumParams = _params(
    "SignumParams",
    [_LR, ("momentum", "float", 0.0), _WD, _RESCALE, _CLIP, ("wd_lh", "float", 0.0)],
)
_BETAS = [("beta1", "float", 0.9), ("beta2", "float", 0.999)]
AdamParams = _params(
    "AdamParams", [_LR, *_BETAS, ("epsilon", "float", 1e-8), _WD, _RESCALE, _CLIP, _LAZY]
)
AdamWParams = _params(
    "AdamWParams",
    [_LR, *_BETAS, ("epsilon", "float", 1e-8), _WD, ("eta", "float", REQUIRED), _CLIP],
)
FTMLParams = _params(
    "FTMLParams",
    [
        _LR,
        ("beta1", "float", 0.6),
        ("beta2", "float", 0.999),
        ("epsilon", "float", 1e-8),
        ("t", "int", REQUIRED),
        _WD,
        _RESCALE,
        ("clip_grad", "float", -1.0),
    ],
    doubles=("epsilon",),
)
_GAMMA1 = ("gamma1", "float", 0.95)
_EPS = ("epsilon", "float", 1e-8)
_CLIP_WEIGHTS = ("clip_weights", "float", -1.0)
RMSPropParams = _params("RMSPropParams", [_LR, _GAMMA1, _EPS, _WD, _RESCALE, _CLIP, _CLIP_WEIGHTS])
RMSPropAlexParams = _params(
    "RMSPropAlexParams",
    [_LR, _GAMMA1, ("gamma2", "float", 0.9), _EPS, _WD, _RESCALE, _CLIP, _CLIP_WEIGHTS],
)
FtrlParams = _params(
    "FtrlParams", [_LR, ("lamda1", "float", 0.01), ("beta", "float", 1.0), _WD, _RESCALE, _CLIP]
)
LambPhaseOneParams = _params(
    "LambPhaseOneParams",
    [
        *_BETAS,
        ("epsilon", "float", 1e-6),
        ("t", "int", REQUIRED),
        ("bias_correction", "bool", True),
        ("wd", "float", REQUIRED),
        _RESCALE,
        _CLIP,
    ],
)
LambPhaseTwoParams = _params(
    "LambPhaseTwoParams",
    [_LR, ("lower_bound", "float", -1.0), ("upper_bound", "float", -1.0)],
)


def _mp_type(num_typed):
    """Types of an mp_ op: the first ``num_typed`` inputs share the output's; the rest float32."""

    def infer(params, in_types, out_types, aux_types):
        dtype = next((t for t in (*in_types[:num_typed], *out_types) if t is not None), None)
        head = [dtype] * num_typed
        return head + [FLOAT32] * (len(in_types) - num_typed), [dtype], aux_types

    return infer


def update_op(name, params, arguments, step, mp=False, typed=2, **extra):
    """An update OpDef: ``step(xp, p, weight, *others)`` updates ``weight`` in place.

    The op hands ``step`` a copy of the weight (the input stays as it is) and
    the other inputs themselves (the states it mutates). With ``mp`` the last
    input is the float32 master copy: ``step`` updates it in place and the
    output is it, cast to the weight's dtype.
    """

    def forward(ctx, p, inputs, aux):
        if mp:
            master = inputs[-1]
            step(ctx.xp, p, master, *inputs[1:-1])
            return [master.astype(inputs[0].dtype)], None
        weight = inputs[0].copy()
        step(ctx.xp, p, weight, *inputs[1:])
        return [weight], None

    extra.setdefault("infer_type", _mp_type(typed) if mp else _same_or_float32(typed))
    return OpDef(name=name, params=params, arguments=arguments, forward=forward, **extra)


def _same_or_float32(typed):
    """Types of a plain update: every input shares the weight's dtype."""

    def infer(params, in_types, out_types, aux_types):
        dtype = next((t for t in (*in_types, *out_types) if t is not None), None)
        return [dtype] * len(in_types), [dtype], aux_types

    return infer


def _f32(grad, master):
    """The gradient in the master copy's dtype (mp_ ops compute in float32)."""
    return grad if grad.dtype == master.dtype else grad.astype(master.dtype)


# -- SGD family ---------------------------------------------------------------------


def _sgd(xp, p, weight, grad, mom=None):
    grad = _f32(grad, weight)
    momentum = getattr(p, "momentum", 0.0)
    if p.clip_gradient >= 0:
        grad = rules.clipped_gradient(grad, p.rescale_grad, p.clip_gradient)
        rules.sgd_step(weight, grad, mom, p.lr, p.wd, momentum)
    else:
        rules.sgd_step(weight, grad, mom, p.lr, p.wd, momentum, p.rescale_grad)


def _nag(ctx, p, inputs, aux):
    weight, grad, mom = inputs
    grad = rules.clipped_gradient(grad, p.rescale_grad, bound(p.clip_gradient))
    updated = weight.copy()
    # MXNet's kernel decays the momentum with the weight it reads back after writing
    # its output: the new weight when the output is the weight (out=weight), else the old
    decay_weight = None if ctx.inplace else weight
    rules.nag_step(updated, grad, mom, p.lr, p.wd, p.momentum, decay_weight=decay_weight)
    return [updated], None


def _mp_nag(xp, p, master, grad, mom):
    grad = rules.clipped_gradient(_f32(grad, master), p.rescale_grad, bound(p.clip_gradient))
    # MXNet's mp_ kernel decays the momentum with the updated master weight
    rules.nag_step(master, grad, mom, p.lr, p.wd, p.momentum)


def _signsgd(xp, p, weight, grad):
    rules.signsgd_step(xp, weight, grad, p.lr, p.wd)


def _signum(xp, p, weight, grad, mom):
    grad = rules.clipped_gradient(grad, p.rescale_grad, bound(p.clip_gradient))
    rules.signum_step(xp, weight, grad, mom, p.lr, p.wd, p.momentum, p.wd_lh)


# -- Adam family --------------------------------------------------------------------


def _adam(xp, p, weight, grad, mean, var):
    grad = rules.decayed_gradient(weight, grad, p.rescale_grad, p.wd, bound(p.clip_gradient))
    rules.adam_step(xp, weight, grad, mean, var, p.lr, p.beta1, p.beta2, p.epsilon)


def _adamw(xp, p, weight, grad, mean, var, rescale, in_place=False):
    scale = float(rescale.reshape(-1)[0])
    if not math.isfinite(scale) or scale == 0:
        return  # MXNet skips the update (loss scaling found an overflow)
    scaled = rules.clipped_gradient(_f32(grad, weight), scale, bound(p.clip_gradient))
    if in_place:  # MXNet's _adamw_update rescales and clips the caller's gradient itself
        grad[...] = scaled
    rules.adamw_step(xp, weight, scaled, mean, var, p.lr, p.eta, p.wd, p.beta1, p.beta2, p.epsilon)


def _adamw_in_place(xp, p, weight, grad, mean, var, rescale):
    _adamw(xp, p, weight, grad, mean, var, rescale, in_place=True)


def _mp_adamw(ctx, p, inputs, aux):
    weight, grad, mean, var, master, rescale = inputs
    _adamw(ctx.xp, p, master, grad, mean, var, rescale)
    return [master.astype(weight.dtype)], None


def _ftml(xp, p, weight, grad, d, v, z):
    grad = rules.decayed_gradient(weight, grad, p.rescale_grad, p.wd, bound(p.clip_grad))
    rules.ftml_step(xp, weight, grad, d, v, z, p.lr, p.beta1, p.beta2, p.epsilon, p.t)


def _rmsprop(xp, p, weight, grad, n):
    grad = rules.decayed_gradient(weight, grad, p.rescale_grad, p.wd, bound(p.clip_gradient))
    rules.rmsprop_step(xp, weight, grad, n, p.lr, p.gamma1, p.epsilon, bound(p.clip_weights))


def _rmspropalex(xp, p, weight, grad, n, g, delta):
    grad = rules.decayed_gradient(weight, grad, p.rescale_grad, p.wd, bound(p.clip_gradient))
    rules.rmspropalex_step(
        xp, weight, grad, n, g, delta, p.lr, p.gamma1, p.gamma2, p.epsilon, bound(p.clip_weights)
    )


def _ftrl(xp, p, weight, grad, z, n):
    grad = rules.clipped_gradient(grad, p.rescale_grad, bound(p.clip_gradient))
    rules.ftrl_step(xp, weight, grad, z, n, p.lr, p.lamda1, p.beta, p.wd)


# -- LAMB phases --------------------------------------------------------------------


def _lamb_phase1(ctx, p, inputs, aux):
    weight, grad, mean, var = inputs[:4]
    weight = inputs[4] if len(inputs) == 5 else weight  # mp_: the master copy
    grad = rules.clipped_gradient(_f32(grad, mean), p.rescale_grad, bound(p.clip_gradient))
    step = rules.lamb_direction(
        ctx.xp, weight, grad, mean, var, p.beta1, p.beta2, p.epsilon, p.t, p.wd, p.bias_correction
    )
    return [step.astype(mean.dtype, copy=False)], None


def _lamb_phase2(ctx, p, inputs, aux):
    weight, g, r1, r2 = inputs[:4]
    master = inputs[4] if len(inputs) == 5 else weight
    kind = g.dtype.type
    r1, r2 = float(r1.reshape(-1)[0]), float(r2.reshape(-1)[0])
    ratio = rules.lamb_ratio(r1, r2, bound(p.lower_bound), bound(p.upper_bound), kind)
    # mp_lamb_update_phase2 declares weight32 mutable but MXNet's kernel never
    # writes it: the new master weight is only the output, as there
    updated = master.astype(g.dtype)
    rules.lamb_apply(updated, g, p.lr, ratio)
    return [updated.astype(weight.dtype, copy=False)], None


def _lamb_phase2_shape(params, in_shapes, out_shapes, aux_shapes):
    names = ("weight", "g", "r1", "r2", "weight32")
    like_weight = [i for i in (0, 1, 4) if i < len(in_shapes)]
    shape = out_shapes[0]
    for index in like_weight:
        shape = merge_shape(shape, in_shapes[index], names[index])
    for index in like_weight:
        in_shapes[index] = shape
    for index in (2, 3):
        in_shapes[index] = merge_shape((1,), in_shapes[index], names[index])
    return in_shapes, [shape], aux_shapes


def _phase1_type(mp):
    def infer(params, in_types, out_types, aux_types):
        if mp:
            return ["float16", "float16"] + [FLOAT32] * 3, [FLOAT32], aux_types
        dtype = next((t for t in (*in_types, *out_types) if t is not None), None)
        return [dtype] * 4, [dtype], aux_types

    return infer


def _phase2_type(mp):
    def infer(params, in_types, out_types, aux_types):
        if mp:
            dtype = in_types[0] or out_types[0]
            return [dtype] + [FLOAT32] * 4, [dtype], aux_types
        dtype = next((t for t in (*in_types, *out_types) if t is not None), None)
        return [dtype] * 4, [dtype], aux_types

    return infer


def _adamw_shape(params, in_shapes, out_shapes, aux_shapes):
    shapes, outs, _ = elementwise_shape(params, in_shapes[:-1], out_shapes, aux_shapes)
    return [*shapes, merge_shape((1,), in_shapes[-1], "rescale_grad")], outs, aux_shapes


def _adamw_type(mp):
    def infer(params, in_types, out_types, aux_types):
        dtype = next((t for t in (in_types[0], in_types[1], *out_types) if t), None)
        states = [FLOAT32] * 3 if mp else [dtype] * 2
        return [dtype, dtype, *states, in_types[-1] or FLOAT32], [dtype], aux_types

    return infer


_W, _WG = ("weight", "grad"), ("weight", "grad", "mom")
_PHASE2 = ("weight", "g", "r1", "r2")
_ADAMW = ("weight", "grad", "mean", "var")

OPS = [
    update_op("sgd_update", SGDParams, _W, _sgd, aliases=("_sparse_sgd_update",)),
    update_op("sgd_mom_update", SGDMomParams, _WG, _sgd, aliases=("_sparse_sgd_mom_update",)),
    update_op("mp_sgd_update", SGDParams, (*_W, "weight32"), _sgd, mp=True),
    update_op("mp_sgd_mom_update", SGDMomParams, (*_WG, "weight32"), _sgd, mp=True),
    OpDef(
        name="nag_mom_update",
        params=NAGMomParams,
        arguments=_WG,
        forward=_nag,
        infer_type=_same_or_float32(2),
    ),
    update_op("mp_nag_mom_update", NAGMomParams, (*_WG, "weight32"), _mp_nag, mp=True),
    update_op("signsgd_update", SignSGDParams, _W, _signsgd),
    update_op("signum_update", SignumParams, _WG, _signum),
    update_op("adam_update", AdamParams, _ADAMW, _adam, aliases=("_sparse_adam_update",)),
    update_op("ftml_update", FTMLParams, (*_W, "d", "v", "z"), _ftml),
    update_op("rmsprop_update", RMSPropParams, (*_W, "n"), _rmsprop),
    update_op("rmspropalex_update", RMSPropAlexParams, (*_W, "n", "g", "delta"), _rmspropalex),
    update_op("ftrl_update", FtrlParams, (*_W, "z", "n"), _ftrl, aliases=("_sparse_ftrl_update",)),
    update_op(
        "_adamw_update",
        AdamWParams,
        (*_ADAMW, "rescale_grad"),
        _adamw_in_place,
        infer_shape=_adamw_shape,
        infer_type=_adamw_type(False),
    ),
    OpDef(
        name="_mp_adamw_update",
        params=AdamWParams,
        arguments=(*_ADAMW, "weight32", "rescale_grad"),
        forward=_mp_adamw,
        infer_shape=_adamw_shape,
        infer_type=_adamw_type(True),
    ),
    OpDef(
        name="lamb_update_phase1",
        params=LambPhaseOneParams,
        arguments=_ADAMW,
        forward=_lamb_phase1,
        infer_type=_phase1_type(False),
    ),
    OpDef(
        name="mp_lamb_update_phase1",
        params=LambPhaseOneParams,
        arguments=(*_ADAMW, "weight32"),
        forward=_lamb_phase1,
        infer_type=_phase1_type(True),
    ),
    OpDef(
        name="lamb_update_phase2",
        params=LambPhaseTwoParams,
        arguments=_PHASE2,
        forward=_lamb_phase2,
        infer_shape=_lamb_phase2_shape,
        infer_type=_phase2_type(False),
    ),
    OpDef(
        name="mp_lamb_update_phase2",
        params=LambPhaseTwoParams,
        arguments=(*_PHASE2, "weight32"),
        forward=_lamb_phase2,
        infer_shape=_lamb_phase2_shape,
        infer_type=_phase2_type(True),
    ),
]
