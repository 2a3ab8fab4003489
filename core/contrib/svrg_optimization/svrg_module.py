"""``SVRGModule``: a Module trained with stochastic variance-reduced gradients (SVRG).

SVRG (Johnson & Zhang, 2013) keeps a snapshot ``w~`` of the weights and the
full gradient ``mu`` over all the training data at that snapshot; each batch
then steps along ``g_i(w) - g_i(w~) + mu`` instead of ``g_i(w)``. Here the
snapshot lives in a second Module, ``_mod_aux``, bound like this one;
``update_full_grads`` copies the weights into it and averages its gradients
over the data into ``_param_dict`` (one dict per context); every training
``forward``/``backward`` runs on both modules, and ``update`` rewrites this
module's gradients by the rule above before the optimizer (wrapped in
``_SVRGOptimizer``) applies them. ``fit`` refreshes the snapshot every
``update_freq`` epochs.

Gradients follow Module's convention: each is the sum over a batch, and the
optimizer rescales by ``1 / batch_size``. ``mu`` is therefore the mean over the
batches of the batch sums, the last batch counted as ``1 - pad / batch_size``
of one (its padded examples are in its sum, as in MXNet).

Where rebind differs from MXNet 1.9.1 (each a fix; the single-worker
arithmetic of one refresh is MXNet's):

- ``update_full_grads`` starts every refresh from zero; MXNet added the
  previous full gradient into the next one.
- ``init_optimizer`` with a kvstore leaves the weights alone; MXNet pulled the
  zero-initialized ``<name>_full`` keys into the weights on the devices.
- A training ``forward`` with ``is_train=None`` runs the snapshot too (MXNet
  ran it only for ``is_train=True``, and the next ``backward`` then failed).
- Training steps before any snapshot exists raise ``LifecycleError`` naming
  ``update_full_grads``; ``fit`` also refreshes at its first epoch when no full
  gradient exists (``begin_epoch`` not a multiple of ``update_freq``).
- With several workers, the full gradient summed in the kvstore is divided by
  the number of workers as well as of contexts, so every worker adds the mean;
  MXNet divided by the contexts only.
- The optimizer is made with ``sym`` (so ``__lr_mult__``/``__wd_mult__``
  attributes count, as in Module); parameters without gradients (fixed) are
  skipped instead of failing.
"""

import logging

from ... import ndarray as nd
from ...errors import LifecycleError
from ...model import load_checkpoint
from ...module import Module
from ...optimizer import Optimizer, create
from .fitting import SVRGFitMixin
from .svrg_optimizer import FULL_SUFFIX, _SVRGOptimizer

__all__ = ["SVRGModule"]


class SVRGModule(SVRGFitMixin, Module):
    """A Module whose updates use SVRG; Module's arguments plus ``update_freq``.

    Args:
        symbol, data_names, label_names, logger, context: as for ``Module``
            (``context`` defaults to ``cpu()``).
        work_load_list, fixed_param_names, state_names: as for ``Module``.
        group2ctxs, compression_params: as for ``Module``.
        update_freq: a positive int: ``fit`` recomputes the full gradient every
            ``update_freq`` epochs. Not an int: TypeError; not positive: ValueError.
    """

    def __init__(
        self,
        symbol,
        data_names=("data",),
        label_names=("softmax_label",),
        logger=logging,
        context=None,
        work_load_list=None,
        fixed_param_names=None,
        state_names=None,
        group2ctxs=None,
        compression_params=None,
        update_freq=None,
    ):
        super().__init__(
            symbol,
            data_names=data_names,
            label_names=label_names,
            logger=logger,
            context=context,
            work_load_list=work_load_list,
            fixed_param_names=fixed_param_names,
            state_names=state_names,
            group2ctxs=group2ctxs,
            compression_params=compression_params,
        )
        self.update_freq = _checked_update_freq(update_freq)
        self._mod_aux = Module(
            symbol,
            data_names,
            label_names,
            logger,
            self._context,
            self._work_load_list,
            fixed_param_names,
            state_names,
            group2ctxs,
            compression_params,
        )
        self._param_dict = None
        self._full_grads_ready = False
        self._ctx_len = len(self._context)

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A module from a checkpoint, as ``Module.load``.

        As in MXNet the result is a plain ``Module`` unless ``update_freq`` is
        among ``kwargs``; then (rebind) it is an ``SVRGModule``.
        """
        if "update_freq" not in kwargs:
            return Module.load(prefix, epoch, load_optimizer_states, **kwargs)
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        module = SVRGModule(symbol, **kwargs)
        module._lifecycle.check("load_params_unbound", "load")
        module._arg_params, module._aux_params = arg_params, aux_params
        module._lifecycle.advance("load_params_unbound")
        if load_optimizer_states:
            module._preload_opt_states = f"{prefix}-{int(epoch):04d}.states"
        return module

    # -- binding ------------------------------------------------------------------------
    def bind(
        self,
        data_shapes,
        label_shapes=None,
        for_training=True,
        inputs_need_grad=False,
        force_rebind=False,
        shared_module=None,
        grad_req="write",
    ):
        """Bind this module and, for training, the snapshot module to the same shapes."""
        repeat = self.binded and not force_rebind
        super().bind(
            data_shapes,
            label_shapes,
            for_training,
            inputs_need_grad,
            force_rebind,
            shared_module,
            grad_req,
        )
        if repeat or not for_training:
            return
        # a snapshot is shared only with another SVRGModule's snapshot, never with live weights
        lender = getattr(shared_module, "_mod_aux", None)
        if lender is not None and not (lender.binded and lender.params_initialized):
            lender = None
        self._mod_aux.bind(
            data_shapes,
            label_shapes,
            for_training,
            inputs_need_grad,
            force_rebind=True,
            shared_module=lender,
            grad_req=grad_req,
        )

    def reshape(self, data_shapes, label_shapes=None):
        """Re-shape both modules for new input shapes."""
        super().reshape(data_shapes, label_shapes=label_shapes)
        if self._mod_aux.binded:
            self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare both modules for ``data_batch``."""
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        if self._mod_aux.binded:
            self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    # -- the optimizer ------------------------------------------------------------------------
    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Install ``_SVRGOptimizer`` around ``optimizer``; zero the full gradients.

        ``optimizer`` and ``optimizer_params`` mean what they mean for Module.
        When a kvstore is used, a ``<name>_full`` key per parameter is added to
        it, through which ``update_full_grads`` sums the full gradient over the
        contexts (and workers).
        """
        self._lifecycle.require("init_optimizer", "init_optimizer")
        if self.optimizer_initialized and not force_init:
            super().init_optimizer(kvstore, optimizer, optimizer_params, force_init)  # warns
            return
        self._param_dict = self._zero_full_grads()
        self._full_grads_ready = False
        super().init_optimizer(kvstore, optimizer, optimizer_params, force_init)
        if self._kvstore is not None:
            for name in self._exec_group.param_names:
                value = self._arg_params[name]
                self._kvstore.init(name + FULL_SUFFIX, nd.zeros(value.shape, dtype=value.dtype))

    def _make_optimizer(self, optimizer, optimizer_params, rescale_grad, idx2name):
        """``_SVRGOptimizer`` around ``optimizer``; the ``_full`` keys numbered after the rest."""
        idx2name = dict(idx2name)
        for name in self._exec_group.param_names:
            idx2name[max(idx2name, default=-1) + 1] = name + FULL_SUFFIX
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", rescale_grad)
        params["param_idx2name"] = idx2name
        if isinstance(optimizer, str):
            params.setdefault("sym", self.symbol)
        elif isinstance(optimizer, Optimizer):
            # Module's checks for an instance: warn on its rescale_grad, give it the names
            optimizer = super()._make_optimizer(optimizer, (), rescale_grad, idx2name)
        else:
            raise TypeError(
                f"SVRGModule.init_optimizer: optimizer must be a name or an "
                f"mx.optimizer.Optimizer, got {optimizer!r}"
            )
        return create(_SVRGOptimizer.__name__, default_optimizer=optimizer, **params)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer states, as Module does; ``dump_optimizer`` is not supported.

        rebind's state format saves one registered optimizer by its attributes
        and cannot hold the optimizer that ``_SVRGOptimizer`` wraps.
        """
        if dump_optimizer:
            raise NotImplementedError(
                "SVRGModule.save_optimizer_states: dump_optimizer=True is not supported, as "
                "rebind's state format cannot hold the optimizer _SVRGOptimizer wraps; save "
                "with dump_optimizer=False and pass the optimizer to init_optimizer again"
            )
        super().save_optimizer_states(fname)

    # -- computation -------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Forward on this module and, when training, on the snapshot too."""
        self._lifecycle.require("forward", "forward")
        training = self.for_training if is_train is None else is_train
        with_snapshot = bool(training) and self._trains_snapshot()
        if with_snapshot:
            self._require_snapshot("forward")
        super().forward(data_batch, is_train)
        if with_snapshot:
            self._mod_aux.forward(data_batch, is_train=True)

    def backward(self, out_grads=None):
        """Backward on this module and on the snapshot."""
        self._lifecycle.require("backward", "backward")
        with_snapshot = self._trains_snapshot()
        if with_snapshot:
            self._require_snapshot("backward")
        super().backward(out_grads)
        if with_snapshot:
            self._mod_aux.backward(out_grads)

    def update(self):
        """Replace the gradients by ``g(w) - g(w~) + mu``, then apply the optimizer."""
        self._lifecycle.require("update", "update")
        if self._trains_snapshot():
            self._update_svrg_gradients()
        super().update()

    def _trains_snapshot(self):
        """Whether this binding trains, with the snapshot module bound beside it."""
        return self.for_training and self._mod_aux.binded

    def _require_snapshot(self, method):
        if not self._mod_aux.params_initialized:
            raise LifecycleError(
                f"SVRGModule.{method}(): there is no snapshot of the weights yet, so no "
                "variance-reduced gradient; call update_full_grads(train_data) first "
                "(fit does it every update_freq epochs)"
            )

    # -- full gradients ----------------------------------------------------------------------
    def _zero_full_grads(self):
        arg_params, _ = self.get_params()
        return [
            {name: nd.zeros(v.shape, ctx, dtype=v.dtype) for name, v in arg_params.items()}
            for ctx in self._context
        ]

    def update_full_grads(self, train_data):
        """Snapshot the weights and average the gradient over all of ``train_data`` there.

        ``train_data`` is reset first and read to its end. The result, one
        array per parameter and context, is in ``_param_dict``; with a kvstore
        it is summed over contexts (and workers) through the ``_full`` keys.
        """
        if self._param_dict is None:
            raise LifecycleError(
                "SVRGModule.update_full_grads() needs the optimizer installed (it holds the "
                "full gradients); call bind(), init_params() and init_optimizer() first"
            )
        if not self._trains_snapshot():
            raise LifecycleError(
                "SVRGModule.update_full_grads(): the module is bound for inference; "
                "call bind(..., for_training=True, force_rebind=True) first"
            )
        arg_params, aux_params = self.get_params()
        self._mod_aux.set_params(arg_params=arg_params, aux_params=aux_params)
        sums = self._zero_full_grads()
        nbatch, pad = self._sum_snapshot_grads(train_data, sums)
        true_num_batch = nbatch - pad / train_data.batch_size
        self._param_dict = sums
        for name in self._exec_group.param_names:
            grad_list = []
            for per_ctx in sums:
                per_ctx[name] /= true_num_batch
                grad_list.append(per_ctx[name])
            if self._kvstore is not None:
                self._accumulate_kvstore(name, grad_list)
        self._full_grads_ready = True

    def _sum_snapshot_grads(self, train_data, sums):
        """Add the snapshot's gradient of every batch into ``sums``; ``(batches, last pad)``."""
        train_data.reset()
        names = self._exec_group.param_names
        nbatch = pad = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            for index, name in enumerate(names):
                grads = self._mod_aux._exec_group.grad_arrays[index]
                for ctx, grad in enumerate(grads):
                    if grad is not None:
                        sums[ctx][name] += grad
            nbatch += 1
            pad = batch.pad or 0
        if nbatch == 0:
            raise ValueError(
                "SVRGModule.update_full_grads: train_data yielded no batch after reset(); "
                "it must hold at least one batch"
            )
        return nbatch, pad

    def _accumulate_kvstore(self, key, value):
        """Sum the full gradients ``value`` (one per context) of ``key`` in the kvstore."""
        self._kvstore.push(key + FULL_SUFFIX, value)
        self._kvstore._barrier()
        self._kvstore.pull(key + FULL_SUFFIX, value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key, value):
        """Give every context the mean of the summed full gradients ``value``."""
        parts = self._ctx_len * self._kvstore.num_workers
        for ctx in range(self._ctx_len):
            self._param_dict[ctx][key] = value[ctx] / parts

    # -- the SVRG step -----------------------------------------------------------------------
    @staticmethod
    def _svrg_grads_update_rule(
        g_curr_batch_curr_weight, g_curr_batch_special_weight, g_special_weight_all_batch
    ):
        """``g_curr_batch_curr_weight - g_curr_batch_special_weight + g_special_weight_all_batch``.

        Computed in place in the first array, which is returned.
        """
        g_curr_batch_curr_weight -= g_curr_batch_special_weight
        g_curr_batch_curr_weight += g_special_weight_all_batch
        return g_curr_batch_curr_weight

    def _update_svrg_gradients(self):
        """Rewrite this module's gradients in place by the SVRG rule, per context."""
        names = self._exec_group.param_names
        snapshot_grads = self._mod_aux._exec_group.grad_arrays
        for index, name in enumerate(names):
            grads = self._exec_group.grad_arrays[index]
            for ctx, grad in enumerate(grads):
                if grad is None:
                    continue
                self._svrg_grads_update_rule(
                    grad, snapshot_grads[index][ctx], self._param_dict[ctx][name]
                )


def _checked_update_freq(update_freq):
    """``update_freq`` if it is a positive int (MXNet's TypeError / ValueError otherwise)."""
    if not isinstance(update_freq, int):
        raise TypeError(
            f"SVRGModule: update_freq must be an integer, the number of epochs between "
            f"full-gradient computations; got {update_freq!r} ({type(update_freq).__name__})"
        )
    if update_freq <= 0:
        raise ValueError(
            f"SVRGModule: update_freq must be a positive integer (epochs between "
            f"full-gradient computations); got {update_freq}"
        )
    return update_freq
