"""``mx.nd.contrib``: the ``_contrib_*`` operators rebind has, under their short names, on arrays.

Every registered ``_contrib_`` operator is reachable here as MXNet's code
reaches it (``contrib.box_nms``, ``contrib.ctc_loss``); the detection,
resampling and attention families live in ``ops/contrib_*.py``.
"""

import math

import numpy as np

from ..op_namespaces import is_contrib, operator_module_hooks
from .imperative import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_contrib, "_contrib_")


# MXNet's Python-level contrib functions: 1 where the test holds, 0 elsewhere, in data's dtype
def isinf(data):
    """1 where ``data`` is +inf or -inf, else 0 (in ``data``'s dtype)."""
    if _is_integer(data):
        return data != data  # integers are never infinite (and inf has no integer cast)
    return abs(data) == math.inf


def isfinite(data):
    """1 where ``data`` is neither infinite nor NaN, else 0 (in ``data``'s dtype)."""
    if _is_integer(data):
        return data == data
    return (abs(data) != math.inf) * (data == data)


def _is_integer(data):
    return np.issubdtype(data.dtype, np.integer)


def isnan(data):
    """1 where ``data`` is NaN (the one value unequal to itself), else 0 (``data``'s dtype)."""
    return data != data


# -- MXNet's Python wrappers of the fused AdamW and LAMB update operators ------------
def _rescale_grad_array(rescale_grad, ctx):
    """``rescale_grad`` as the (1,) array the operators take, on ``ctx`` (MXNet's helper)."""
    from .creation import full  # creation builds on the operator modules
    from .ndarray import NDArray

    if isinstance(rescale_grad, NDArray):
        return rescale_grad.as_in_context(ctx)
    return full(shape=(1,), val=rescale_grad, ctx=ctx)


def _interleave(*lists):
    """[a0, b0, ..., a1, b1, ...]: the per-tensor order the multi-tensor operators read."""
    return [array for group in zip(*lists, strict=False) for array in group]


def _adamw(op_name, arguments):
    """Run ``op_name`` on a wrapper's ``locals()``, ``rescale_grad`` made an array."""
    params = dict(arguments)
    kwargs = params.pop("kwargs")
    params["rescale_grad"] = _rescale_grad_array(params["rescale_grad"], params["weight"].context)
    return _internal_op(op_name)(**params, **kwargs)


def _internal_op(name):
    from . import _internal

    return getattr(_internal, name)


def adamw_update(
    weight,
    grad,
    mean,
    var,
    rescale_grad,
    lr,
    eta,
    beta1=0.9,
    beta2=0.999,
    epsilon=1e-8,
    wd=0,
    clip_gradient=-1,
    out=None,
    name=None,
    **kwargs,
):
    """``_adamw_update`` with ``rescale_grad`` given as a number or an array (MXNet's wrapper)."""
    return _adamw("_adamw_update", locals())


def mp_adamw_update(
    weight,
    grad,
    mean,
    var,
    weight32,
    rescale_grad,
    lr,
    eta,
    beta1=0.9,
    beta2=0.999,
    epsilon=1e-8,
    wd=0,
    clip_gradient=-1,
    out=None,
    name=None,
    **kwargs,
):
    """``_mp_adamw_update`` (float32 master weights) with a number or array ``rescale_grad``."""
    return _adamw("_mp_adamw_update", locals())


def multi_adamw_update(
    weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None, name=None, size=0, **kwargs
):
    """``_multi_adamw_update`` over lists of tensors (``size`` defaults to ``len(weights)``)."""
    rescale_grad = _rescale_grad_array(rescale_grad, weights[0].context)
    inputs = _interleave(weights, grads, mean, var) + [rescale_grad]
    return _internal_op("_multi_adamw_update")(
        *inputs,
        out=out,
        num_weights=size or len(weights),
        lrs=lrs,
        wds=wds,
        etas=etas,
        name=name,
        **kwargs,
    )


def multi_mp_adamw_update(
    weights,
    grads,
    mean,
    var,
    weights32,
    rescale_grad,
    lrs,
    wds,
    etas,
    out=None,
    name=None,
    size=0,
    **kwargs,
):
    """``_multi_mp_adamw_update`` over lists of tensors with float32 master weights."""
    rescale_grad = _rescale_grad_array(rescale_grad, weights[0].context)
    inputs = _interleave(weights, grads, mean, var, weights32) + [rescale_grad]
    return _internal_op("_multi_mp_adamw_update")(
        *inputs,
        out=out,
        num_weights=size or len(weights),
        lrs=lrs,
        wds=wds,
        etas=etas,
        name=name,
        **kwargs,
    )


def multi_lamb_update(
    weights, grads, mean, var, step_count, lrs, wds, out=None, num_tensors=0, **kwargs
):
    """``_multi_lamb_update``: LAMB steps of several tensors (``step_count`` one per tensor)."""
    return _internal_op("_multi_lamb_update")(
        *_interleave(weights, grads, mean, var),
        out=out,
        num_tensors=num_tensors or len(weights),
        step_count=step_count,
        learning_rates=lrs,
        wds=wds,
        **kwargs,
    )


def multi_mp_lamb_update(
    weights, grads, mean, var, weights32, step_count, lrs, wds, out=None, num_tensors=0, **kwargs
):
    """``_multi_mp_lamb_update``: LAMB steps of several tensors with float32 master weights."""
    return _internal_op("_multi_mp_lamb_update")(
        *_interleave(weights, grads, mean, var, weights32),
        out=out,
        num_tensors=num_tensors or len(weights),
        step_count=step_count,
        learning_rates=lrs,
        wds=wds,
        **kwargs,
    )


# -- MXNet's Python-level sampler -------------------------------------------------------
def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """``num_sampled`` classes in [0, range_max) drawn from the log-uniform (Zipfian) law.

    As MXNet's: the samples (int64) and the expected counts of ``true_classes``
    and of the samples (float64), each probability times ``num_sampled``.
    """
    from ..context import current_context
    from ..sampling import zipfian
    from .random import uniform

    ctx = ctx or current_context()

    def draw(high, count):
        return uniform(0, high, shape=(count,), dtype="float64", ctx=ctx)

    return zipfian(draw, true_classes.as_in_context(ctx), num_sampled, range_max)
