"""The ``Optimizer`` base class, with ``create`` and ``register``.

What every optimizer shares, as MXNet 1.9.1 defines it: the constructor
arguments, per-parameter learning-rate and weight-decay multipliers (from
``set_lr_mult``/``set_wd_mult``, ``__lr_mult__``/``__wd_mult__`` attributes,
and no weight decay on names ending in neither ``_weight`` nor ``_gamma``),
per-index update counts, and the float16 master-copy wrapper. The helpers for
implementations (``_clip``, ``_state_zeros``, ...) work on backend arrays, so
update math is written once for NumPy and CuPy.
"""

import warnings

import numpy as np

from .. import registry
from ..ndarray import NDArray, zeros
from . import rules
from .sparse_updates import new_state, sparse_aware

__all__ = ["Optimizer", "create", "register"]

FAMILY = "optimizers"


class Optimizer:
    """Base class of optimizers.

    Args:
        rescale_grad: multiplies every gradient before use (often ``1/batch_size``).
        param_idx2name: ``{index: parameter name}``, for multipliers given by name.
        wd: weight decay (L2 regularisation) coefficient.
        clip_gradient: clip gradients into ``[-clip_gradient, clip_gradient]``
            (None, or a value that is not positive, turns clipping off).
        learning_rate: the learning rate; None means 0.01, or the scheduler's
            rate when ``lr_scheduler`` is given.
        lr_scheduler: an ``mx.lr_scheduler.LRScheduler``; its ``base_lr`` is
            overwritten by ``learning_rate`` when both are given.
        sym: a Symbol whose arguments' ``__lr_mult__``/``__wd_mult__``
            attributes set default multipliers.
        begin_num_update: the update count to start from (resuming training).
        multi_precision: keep a float32 master copy of float16 weights and
            update that copy.
        param_dict: ``{index: parameter}`` whose ``lr_mult``/``wd_mult``
            attributes take precedence over everything else.
    """

    # where create_state_multi_precision puts the float32 master copy of a
    # float16 weight: MXNet's SGD-like optimizers put it last, the rest first
    _master_copy_first = True
    # whether MXNet's update of this optimizer is a fused operator, whose scalar
    # settings are C floats (SGD, Adam, ...), or NDArray arithmetic in doubles
    _float32_settings = False

    def __init_subclass__(cls, **kwargs):
        # every update() learns MXNet's row_sparse paths (lazy, standard, fallback):
        # dense calls pass straight through (sparse_updates.sparse_aware)
        super().__init_subclass__(**kwargs)
        update = cls.__dict__.get("update")
        if update is not None and not getattr(update, "sparse_aware", False):
            cls.update = sparse_aware(update)

    def __init__(
        self,
        rescale_grad=1.0,
        param_idx2name=None,
        wd=0.0,
        clip_gradient=None,
        learning_rate=None,
        lr_scheduler=None,
        sym=None,
        begin_num_update=0,
        multi_precision=False,
        param_dict=None,
    ):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None:
            _overwrite_scheduler_lr(lr_scheduler, learning_rate)
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        # > 0: update() takes lists of up to this many weights, and the updater
        # groups weights so (MXNet's fused updates; only LARS needs it here)
        self.aggregate_num = 0
        self.idx2name = self._checked_idx2name(param_idx2name)
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    def _checked_idx2name(self, param_idx2name):
        if param_idx2name is None:
            return {}
        if not isinstance(param_idx2name, dict):
            raise TypeError(
                f"{type(self).__name__}: param_idx2name should be a dict of parameter "
                f"indexes to names, got {type(param_idx2name).__name__}"
            )
        return param_idx2name.copy()

    # -- registry -------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Class decorator: make ``klass`` creatable by its lower-cased class name."""
        if not isinstance(klass, type):
            raise TypeError(f"Optimizer.register decorates classes, got {klass!r}")
        name = klass.__name__.lower()
        registry.add_runtime(FAMILY, name, klass, owner=klass.__module__)
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """Instantiate the optimizer registered as ``name`` (case-insensitive)."""
        return create(name, **kwargs)

    # -- learning rate ----------------------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate: the scheduler's at ``num_update``, or ``lr``."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Set the learning rate; refused (UserWarning raised, as MXNet) with a scheduler."""
        if self.lr_scheduler is not None:
            raise UserWarning(
                "LRScheduler of the optimizer has already been defined. Note that "
                "set_learning_rate can mutate the value of the learning rate of the "
                "optimizer only when the LRScheduler of the optimizer is undefined."
            )
        self.lr = lr

    def set_lr_scale(self, args_lrscale):
        """Removed in MXNet: use ``set_lr_mult``."""
        raise DeprecationWarning("set_lr_scale is deprecated: use set_lr_mult")

    def set_lr_mult(self, args_lr_mult):
        """Set learning-rate multipliers by parameter name or index.

        Multipliers start from the symbol's ``__lr_mult__`` attributes (when
        ``sym`` was given); ``args_lr_mult`` entries override them.
        """
        self.lr_mult = self._symbol_mults("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Set weight-decay multipliers by parameter name or index.

        Every name in ``param_idx2name`` that ends in neither ``_weight`` nor
        ``_gamma`` (biases, BatchNorm betas, ...) gets 0; then the symbol's
        ``__wd_mult__`` attributes; then ``args_wd_mult``.
        """
        self.wd_mult = {
            name: 0.0 for name in self.idx2name.values() if not self._decays_by_default(name)
        }
        self.wd_mult.update(self._symbol_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    @staticmethod
    def _decays_by_default(name):
        """Whether parameter ``name`` keeps weight decay without an explicit multiplier."""
        return name.endswith("_weight") or name.endswith("_gamma")

    def _symbol_mults(self, key):
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {
            name: float(attrs[name][key])
            for name in arg_names
            if name in attrs and key in attrs[name]
        }

    # -- update counts ------------------------------------------------------------
    def _set_current_context(self, device_id):
        """Count updates separately per device (each device updates its own copy)."""
        counts = self._all_index_update_counts.setdefault(device_id, {})
        self._index_update_count = counts

    def _update_count(self, index):
        """Count one more update of ``index`` (or of each index of a list)."""
        indices = index if isinstance(index, (list, tuple)) else [index]
        counts, begin, highest = self._index_update_count, self.begin_num_update, self.num_update
        for idx in indices:
            count = counts[idx] = counts.get(idx, begin) + 1
            if count > highest:
                highest = count
        self.num_update = highest

    def _get_lrs(self, indices):
        """Learning rates of ``indices``: the current rate times each one's multiplier."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * m for m in self._multipliers(indices, self.lr_mult, "lr_mult")]

    def _get_lr(self, index):
        """Learning rate of one index."""
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """Weight decays of ``indices``: ``wd`` times each one's multiplier."""
        wd = self.wd
        return [wd * m for m in self._multipliers(indices, self.wd_mult, "wd_mult")]

    def _get_wd(self, index):
        """Weight decay of one index."""
        return self._get_wds([index])[0]

    def _multipliers(self, indices, mults, attribute):
        """``_multiplier`` of each index (one look-up path when no param_dict is set)."""
        if self.param_dict:
            return [self._multiplier(index, mults, attribute) for index in indices]
        names = self.idx2name
        return [
            mults[i] if i in mults else mults.get(names[i], 1.0) if i in names else 1.0
            for i in indices
        ]

    def _multiplier(self, index, mults, attribute):
        if index in self.param_dict:
            return getattr(self.param_dict[index], attribute)
        if index in mults:
            return mults[index]
        if index in self.idx2name:
            return mults.get(self.idx2name[index], 1.0)
        return 1.0

    # -- states and updates -----------------------------------------------------------
    def create_state(self, index, weight):
        """The auxiliary state (momentum, moments, ...) of one weight; None if it has none."""
        return None

    def create_state_multi_precision(self, index, weight):
        """Like ``create_state``, plus a float32 master copy of a float16 weight.

        The master copy is made when ``multi_precision`` is on; without it a
        float16 weight gets a warning, as accumulating in float16 is lossy.
        """
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            inner = self.create_state(index, master)
            return (master, inner) if self._master_copy_first else (inner, master)
        if weight.dtype == np.float16:
            warnings.warn(
                f"{type(self).__name__}: accumulating with float16 can lead to poor accuracy "
                "or slow convergence; consider multi_precision=True",
                stacklevel=2,
            )
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update ``weight`` in place from ``grad`` and ``state``; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} does not define update()")

    def update_many(self, indices, weights, grads, states):
        """``update_multi_precision`` of several weights at once (rebind's extension).

        The updater calls this once per step with every weight of a module; an
        optimizer may override it to do its per-call work (update counts,
        learning rates) once, with the same results as the loop below.
        """
        for index, weight, grad, state in zip(indices, weights, grads, states, strict=True):
            self.update_multi_precision(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        """``update``, through the float32 master copy for float16 weights when enabled."""
        if not (self.multi_precision and weight.dtype == np.float16):
            self.update(index, weight, grad, state)
            return
        master, inner = state if self._master_copy_first else (state[1], state[0])
        self.update(index, master, grad.astype(np.float32), inner)
        if getattr(weight, "stype", "default") != "default":  # (a sparse _data is a copy)
            weight._store(master)
            return
        weight._data[...] = master._data.astype(weight._data.dtype)

    # -- helpers for implementations ------------------------------------------------------
    def _clip(self, values):
        """Clip a backend array into ``[-clip_gradient, clip_gradient]`` when clipping is on.

        The bound is a float32 in MXNet both ways: a fused operator's
        ``clip_gradient`` and the ``clip`` operator's ``a_min``/``a_max``.
        """
        bound = self.clip_gradient
        if bound is None or not bound > 0:
            return values
        bound = rules.setting(values.dtype.type, bound)
        return values.clip(-bound, bound)

    def _rescaled(self, grad):
        """``rescale_grad * grad`` as a new backend array."""
        return grad._data * self._setting(grad._data, self.rescale_grad)

    def _setting(self, array, value):
        """``value`` as a scalar of ``array``'s dtype, as MXNet's update would combine them.

        Where MXNet's update is a fused operator (``_float32_settings``), the
        value is first rounded to float32, the type of the operator's fields;
        NDArray arithmetic (Adamax, Nadam, ...) takes it as a double.
        """
        kind = array.dtype.type
        return rules.setting(kind, value) if self._float32_settings else kind(value)

    def _typed(self, weight, *values):
        """``values`` as scalars of the weight's dtype (see ``_setting``).

        MXNet's fused kernels cast their parameters to the weight's type and
        combine them there (``1 - beta2`` is a float32 subtraction for float32
        weights); doing the same keeps results equal to the last bits.
        """
        return tuple(self._setting(weight._data, value) for value in values)

    @staticmethod
    def _state_zeros(weight, shape=None, dtype="weight", stype="default"):
        """A zero NDArray on the weight's context (float32 when ``dtype`` is None).

        ``stype='row_sparse'`` makes a row_sparse state holding no row, as
        MXNet's ``zeros(..., stype=weight.stype)`` does for sparse weights.
        """
        dtype = weight.dtype if dtype == "weight" else dtype
        if stype != "default":
            return new_state(weight, stype, shape, "float32" if dtype is None else dtype)
        return zeros(weight.shape if shape is None else shape, weight.context, dtype=dtype)

    @staticmethod
    def _check_arrays(owner, weight, grad):
        for what, value in (("weight", weight), ("grad", grad)):
            if not isinstance(value, NDArray):
                raise TypeError(f"{owner}.update: {what} must be an NDArray, got {value!r}")

    def __repr__(self):
        return f"<{type(self).__name__} lr={self.lr} wd={self.wd}>"


def _overwrite_scheduler_lr(scheduler, learning_rate):
    if scheduler.base_lr != learning_rate:
        warnings.warn(
            f"learning rate from lr_scheduler ({scheduler.base_lr}) has been overwritten "
            f"by learning_rate in optimizer ({learning_rate})",
            UserWarning,
            stacklevel=3,
        )
        scheduler.base_lr = learning_rate


register = Optimizer.register


def create(name, **kwargs):
    """Create the optimizer registered as ``name`` with ``kwargs``; an Optimizer passes through.

    Names are case-insensitive (``'SGD'`` is ``'sgd'``). An unknown name raises
    ``UnknownNameError`` (a ValueError) listing the known ones.
    """
    if isinstance(name, Optimizer):
        if kwargs:
            raise TypeError(
                f"create: got an optimizer instance ({type(name).__name__}) and keyword "
                f"arguments {sorted(kwargs)}; pass one or the other"
            )
        return name
    if not isinstance(name, str):
        raise TypeError(f"create: optimizer name must be a string, got {name!r}")
    return registry.lookup(FAMILY, name)(**kwargs)
