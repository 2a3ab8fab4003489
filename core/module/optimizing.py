"""The optimizer half of ``Module``: install it, apply it, save and load its state.

``init_optimizer`` decides, as MXNet 1.9 does, whether a kvstore is needed
(several devices, or a distributed store) and whether the update runs on the
store or locally on each device after the gradients are summed; it scales
gradients by ``1 / batch_size`` unless told otherwise, and numbers parameters
for the optimizer as MXNet does (``i * num_devices + k`` for parameter ``i`` on
device ``k`` when updating locally), so ``lr_mult``/``wd_mult`` by name and
saved optimizer states line up.
"""

import os
import warnings

from .. import optimizer as opt
from ..errors import LifecycleError
from ..fileutil import write_atomic
from ..model import (
    _create_kvstore,
    _device_updates,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)
from .host_params import share_or_own

__all__ = ["OptimizingMixin"]


class OptimizingMixin:
    """``init_optimizer``, ``borrow_optimizer``, ``update`` and the optimizer states."""

    def _reset_optimizer(self):
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._local_update = None  # the one-device update's lists (see update)
        self._preload_opt_states = None

    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Install ``optimizer`` (a name or an Optimizer) and, where needed, a kvstore.

        A name is created with ``optimizer_params``, ``rescale_grad = 1 /
        batch_size`` (times the workers of a ``dist_sync`` store) unless given,
        ``sym`` (so ``__lr_mult__``/``__wd_mult__`` attributes count) and the
        parameter numbering. An instance is used as is (a warning says when its
        ``rescale_grad`` is not ``1 / batch_size``). A second call without
        ``force_init`` warns and does nothing.
        """
        if not self._lifecycle.check("init_optimizer", "init_optimizer", force=force_init):
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        group = self._exec_group
        store, on_store = _create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = group.batch_size
        if store is not None and "_async" not in store.type:
            # MXNet tests 'dist' and '_sync' in the type; every synchronous multi-worker
            # store (rebind's 'nccl' spans processes too) sums over num_workers batches
            batch_size *= store.num_workers
        optimizer = self._make_optimizer(
            optimizer, optimizer_params, 1.0 / batch_size, self._idx2name(on_store)
        )
        self._optimizer, self._kvstore, self._update_on_kvstore = optimizer, store, on_store
        self._updater = None
        self._local_update = None  # the one-device update's lists (see update)
        if store is not None:
            if self._compression_params:
                store.set_gradient_compression(self._compression_params)
            if on_store:
                store.set_optimizer(optimizer)
            _initialize_kvstore(
                store, group.param_arrays, self._arg_params, group.param_names, on_store
            )
            if store.num_workers > 1:
                self._params_dirty = True  # the devices now hold rank 0's parameters
        # several cpu contexts updated on the store read the store's weights themselves
        share_or_own(group, store, on_store)
        if not on_store:
            self._updater = opt.get_updater(optimizer)
        self._lifecycle.advance("init_optimizer")
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _idx2name(self, update_on_kvstore):
        names = self._exec_group.param_names
        if update_on_kvstore:
            return dict(enumerate(names))
        devices = len(self._context)
        return {i * devices + k: name for i, name in enumerate(names) for k in range(devices)}

    def _make_optimizer(self, optimizer, optimizer_params, rescale_grad, idx2name):
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            return opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **params)
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError(
                f"{type(self).__name__}.init_optimizer: optimizer must be a name or "
                f"an mx.optimizer.Optimizer, got {optimizer!r}"
            )
        if optimizer.rescale_grad != rescale_grad:
            warnings.warn(
                f"Optimizer created manually outside Module but rescale_grad is not normalized "
                f"to 1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. {rescale_grad}). "
                "Is this intended?",
                stacklevel=3,
            )
        if not optimizer.idx2name:
            optimizer.idx2name = idx2name.copy()
        return optimizer

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s optimizer, kvstore and updater (bucketing)."""
        shared_module._lifecycle.require("update", "borrow_optimizer")
        self._lifecycle.check("borrow_optimizer", "borrow_optimizer")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self._lifecycle.advance("borrow_optimizer")

    def update(self):
        """Apply the optimizer with the gradients of the last backward (summed over devices)."""
        self._lifecycle.require("update", "update")
        group = self._exec_group
        if group.grad_arrays is None:
            raise LifecycleError(
                f"{type(self).__name__}.update(): the module is bound for "
                "inference; call bind(..., for_training=True, "
                "force_rebind=True) first"
            )
        self._params_dirty = True
        if self._update_on_kvstore:
            _update_params_on_kvstore(
                group.param_arrays, group.grad_arrays, self._kvstore, group.param_names
            )
        elif self._kvstore is None and len(group.execs) == 1:
            # one device, no store: the updater gets the same three lists every step
            # (made again when the group's per-name lists are: a new bind, a reshape)
            local = self._local_update
            if (
                local is None
                or local[0] is not group.param_arrays
                or local[1] is not group.grad_arrays
            ):
                lists = _device_updates(group.param_arrays, group.grad_arrays, 1)[0]
                local = self._local_update = (group.param_arrays, group.grad_arrays, lists)
            if local[2][0]:
                self._updater(*local[2])
        else:
            _update_params(
                group.param_arrays,
                group.grad_arrays,
                updater=self._updater,
                num_device=len(self._context),
                kvstore=self._kvstore,
                param_names=group.param_names,
            )

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer states to ``fname`` atomically (rebind's format, no pickle).

        ``dump_optimizer`` (rebind) also saves the optimizer with its update
        counters and learning-rate scheduler; loading such a file replaces
        the optimizer, which is what resuming training needs.
        """
        self._lifecycle.require("optimizer_states", "save_optimizer_states")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=dump_optimizer)
            return
        if self._writes_files():
            write_atomic(fname, self._updater.get_states(dump_optimizer))
        self._wait_for_files()

    def _writes_files(self):
        """Whether this process writes checkpoints: not a worker of rank > 0 (rebind)."""
        return self._kvstore is None or self._kvstore.rank == 0

    def _wait_for_files(self):
        """With several workers, return once rank 0 has written its files."""
        if self._kvstore is not None and self._kvstore.num_workers > 1:
            self._kvstore.barrier()

    def load_optimizer_states(self, fname):
        """Load optimizer states saved by rebind or MXNet (its ``.states`` pickle, read safely)."""
        self._lifecycle.require("optimizer_states", "load_optimizer_states")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            # the store's updater holds the optimizer a dumped file may have replaced
            updater = getattr(self._kvstore, "_updater", None)
        else:
            with open(os.fspath(fname), "rb") as handle:
                self._updater.set_states(handle.read())
            updater = self._updater
        if updater is not None and getattr(updater, "optimizer", None) is not None:
            self._optimizer = updater.optimizer
