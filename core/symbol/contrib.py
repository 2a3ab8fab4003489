"""``mx.sym.contrib``: the ``_contrib_*`` operators rebind has, under their short names, on symbols.

MXNet's contrib operators are outside rebind's operator set except where a
public operator is also registered under a ``_contrib_`` name (CTCLoss);
those are reachable here as MXNet's code reaches them (``contrib.ctc_loss``).
"""

from ..op_namespaces import is_contrib, operator_module_hooks
from .compose import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_contrib, "_contrib_")


# -- MXNet's Python wrappers of the fused AdamW update operators ---------------------
def _rescale_grad_symbol(rescale_grad):
    """``rescale_grad`` as a symbol: a number becomes a (1,) ``full`` node, as in MXNet."""
    from . import full
    from .symbol import Symbol

    return rescale_grad if isinstance(rescale_grad, Symbol) else full(shape=(1,), val=rescale_grad)


def _adamw(op_name, arguments):
    """Compose ``op_name`` from a wrapper's ``locals()``, ``rescale_grad`` made a symbol."""
    from . import _internal

    params = dict(arguments)
    kwargs = params.pop("kwargs")
    params["rescale_grad"] = _rescale_grad_symbol(params["rescale_grad"])
    return getattr(_internal, op_name)(**params, **kwargs)


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
    """``_adamw_update`` with ``rescale_grad`` given as a number or a symbol (MXNet's wrapper)."""
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
    """``_mp_adamw_update`` (float32 master weights) with a number or symbol ``rescale_grad``."""
    return _adamw("_mp_adamw_update", locals())


# -- MXNet's Python-level sampler -------------------------------------------------------
def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbols of ``num_sampled`` log-uniform (Zipfian) classes in [0, range_max).

    As ``mx.nd.contrib.rand_zipfian``: the samples (int64) and the expected
    counts of ``true_classes`` and of the samples (float64).
    """
    from ..sampling import zipfian
    from .random import uniform
    from .symbol import Symbol

    if not isinstance(true_classes, Symbol):
        raise TypeError(f"rand_zipfian: true_classes must be a Symbol, got {type(true_classes)}")

    def draw(high, count):
        return uniform(0, high, shape=(count,), dtype="float64")

    return zipfian(draw, true_classes, num_sampled, range_max)
