"""BucketingModule: one network per bucket key, all sharing one set of parameters.

MXNet's module for inputs of varying length (sequences padded to a few bucket
lengths). ``sym_gen(bucket_key)`` returns ``(symbol, data_names,
label_names)``; ``bind`` binds the default bucket's ``Module``, and each other
bucket gets its own Module the first time a batch of its key arrives
(``switch_bucket``, called by ``forward`` and ``prepare``). Those Modules are
bound with ``shared_module=`` the default bucket's Module, so that:

- every bucket uses the default bucket's parameter, gradient and auxiliary
  arrays themselves (the same NDArray objects) and its optimizer;
- data, label and other non-parameter arrays are carved from the default
  executor's memory where they fit (its ``shared_data_arrays`` pool), so a
  smaller bucket allocates little of its own. The default bucket should
  therefore be the largest one, as in MXNet.

Checkpoints are MXNet's: ``save_checkpoint`` writes the parameters, one
``prefix-<key>-symbol.json`` per bucket created and ``prefix.buckets`` (the
keys as an int32 NDArray), and ``BucketingModule.load`` reads them back.
"""

import logging
import numbers

import numpy as np

from .. import model
from .. import ndarray as nd
from .. import symbol as sym
from ..io import DataDesc
from ..symbol.names import NameManager
from .batch_fields import (
    bucket_key_of,
    data_of,
    label_of,
    provide_data_of,
    provide_label_of,
)
from .inputs import check_input_names
from .module import Module
from .switching import SwitchingModule

__all__ = ["BucketingModule"]


class BucketingModule(SwitchingModule):
    """MXNet's BucketingModule: a ``Module`` per bucket key, parameters shared by identity.

    Args:
        sym_gen: ``sym_gen(bucket_key) -> (symbol, data_names, label_names)``.
            Called inside a fresh ``NameManager``, so automatic node names
            are the same on every call (as MXNet 1.9 does).
        default_bucket_key: the key ``bind`` binds (required); make it the
            bucket with the largest shapes, since the others borrow its memory.
        logger: where log lines go.
        context: a Context or a list of them (default ``cpu()``).
        work_load_list: relative share of each context (default: equal).
        fixed_param_names: parameters that are never updated.
        state_names: inputs kept between batches, set by ``set_states``.
        group2ctxs: ctx_group attribute -> context(s), for model parallelism.
        compression_params: passed to each Module (see ``Module``).

    The current bucket's Module is ``_curr_module``, its key
    ``_curr_bucket_key``; ``_buckets`` maps every key seen to its Module.
    """

    def __init__(
        self,
        sym_gen,
        default_bucket_key=None,
        logger=logging,
        context=None,
        work_load_list=None,
        fixed_param_names=None,
        state_names=None,
        group2ctxs=None,
        compression_params=None,
    ):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError(
                "BucketingModule: default_bucket_key is required (the key of the "
                "bucket bind() binds, usually the largest)"
            )
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        check_input_names(symbol, list(data_names or []), "data", True)
        check_input_names(symbol, list(label_names or []), "label", False)
        check_input_names(symbol, self._state_names, "state", True)
        check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._compression_params = compression_params
        self._buckets = {}
        self._curr_bucket_key = None

    def _call_sym_gen(self, bucket_key):
        with NameManager():
            return self._sym_gen(bucket_key)

    def _new_module(self, bucket_key, symbol=None):
        """An unbound Module for ``bucket_key``; ``symbol`` (from ``load``) replaces sym_gen's."""
        generated, data_names, label_names = self._call_sym_gen(bucket_key)
        return Module(
            generated if symbol is None else symbol,
            data_names,
            label_names,
            logger=self.logger,
            context=self._context,
            work_load_list=self._work_load_list,
            fixed_param_names=self._fixed_param_names,
            state_names=self._state_names,
            group2ctxs=self._group2ctxs,
            compression_params=self._compression_params,
        )

    def _bound_modules(self):
        return [module for module in self._buckets.values() if module.binded]

    def _reset_bind(self):
        """Forget every bucket's Module (``force_rebind``)."""
        super()._reset_bind()
        self._buckets = {}
        self._curr_bucket_key = None

    # -- names --------------------------------------------------------------------------
    @property
    def data_names(self):
        """The current bucket's data names (the default bucket's before ``bind``)."""
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        """The current bucket's output names (the default bucket's before ``bind``)."""
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    # -- binding --------------------------------------------------------------------------
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
        """Bind the default bucket's Module; other buckets are bound by ``switch_bucket``.

        ``data_shapes``/``label_shapes`` are the default bucket's. A second
        ``bind`` warns and does nothing unless ``force_rebind``, which drops
        every bucket and binds the default one anew, keeping the parameter
        values and the optimizer (with its state). ``shared_module`` is not
        supported, as in MXNet.
        """
        if shared_module is not None:
            raise ValueError(
                "BucketingModule.bind: shared_module is not supported (each bucket "
                "already shares the default bucket's parameters); pass None"
            )
        previous = self._release_binding() if force_rebind and self.binded else None
        if not self._lifecycle.check("bind", "bind"):
            return
        self.for_training, self.inputs_need_grad, self._grad_req = (
            for_training,
            inputs_need_grad,
            grad_req,
        )
        key = self._default_bucket_key
        module = self._buckets.get(key)
        if module is None:
            module = self._new_module(key)
        module.bind(
            data_shapes,
            label_shapes,
            for_training,
            inputs_need_grad,
            force_rebind=False,
            shared_module=None,
            grad_req=grad_req,
        )
        self._buckets[key] = module
        self._curr_bucket_key = key
        self._adopt_default(module, optimizer_source=previous)
        self._lifecycle.advance("bind")

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make ``bucket_key``'s Module current, binding it first if it is new.

        A new bucket's Module is bound for ``data_shapes``/``label_shapes``
        (typically the batch's ``provide_data``/``provide_label``) with the
        default bucket's Module as ``shared_module``: same parameter arrays,
        memory borrowed from it, and its optimizer. A known bucket's Module is
        reused as is (its ``forward`` re-shapes for a batch of another size).
        """
        self._lifecycle.require("bound_only", "switch_bucket")
        module = self._buckets.get(bucket_key)
        if module is None or not module.binded:
            self._lifecycle.require("forward", "switch_bucket")  # sharing needs the parameters
            if data_shapes is None:
                raise ValueError(
                    f"BucketingModule.switch_bucket: bucket {bucket_key!r} is new; "
                    "give its data_shapes (the batch's provide_data) to bind it"
                )
            if module is None:
                module = self._new_module(bucket_key)
            self._bind_shared(
                module, data_shapes, label_shapes, self._buckets[self._default_bucket_key]
            )
            self._buckets[bucket_key] = module
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def _switch_for(self, data_batch):
        """``switch_bucket`` to the batch's bucket; shapes from the batch if it has no provide_*."""
        key = self._key_of(data_batch)
        data_shapes, label_shapes = provide_data_of(data_batch), provide_label_of(data_batch)
        if data_shapes is None and key not in self._buckets:
            _, data_names, label_names = self._call_sym_gen(key)
            data_shapes = _descs(data_names, data_of(data_batch))
            labels = label_of(data_batch)
            if label_shapes is None and labels:
                label_shapes = _descs(label_names, labels)
        self.switch_bucket(key, data_shapes, label_shapes)

    def _key_of(self, data_batch):
        """The bucket a batch runs on: its ``bucket_key``, else the current or default one.

        A key of None keeps the current bucket; a batch without the field (a
        user's two-field batch) runs on the default bucket.
        """
        key = bucket_key_of(data_batch, missing=self._default_bucket_key)
        return self._curr_bucket_key if key is None else key

    # -- computation ----------------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the batch's bucket if it is new, then return to the current bucket."""
        self._lifecycle.require("forward", "prepare")
        original = self._curr_bucket_key
        if self._key_of(data_batch) != original:
            self._switch_for(data_batch)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def _devices_may_differ(self):
        module = self._curr_module
        return module is None or module._devices_may_differ()

    def _copy_ahead(self, data_batch):
        # the batch's bucket is bound by now (prepare); its Module loads it at forward
        module = self._buckets.get(self._key_of(data_batch))
        if module is not None and module.binded:
            module._copy_ahead(data_batch)

    def forward(self, data_batch, is_train=None):
        """Switch to ``data_batch.bucket_key``'s bucket and run its Module forward.

        Where rebind differs (MXNet fails reading a missing ``bucket_key`` or
        calls ``sym_gen(None)``): a batch with no ``bucket_key`` field (a
        user's two-field batch) runs on the default bucket; one whose key is
        None (``predict`` on a bare array) runs on the current bucket. A new
        bucket's batch without ``provide_data`` is bound for the shapes of its
        arrays.
        """
        self._lifecycle.require("forward", "forward")
        key = self._key_of(data_batch)
        if key != self._curr_bucket_key:
            self._switch_for(data_batch)
        self._curr_module.forward(data_batch, is_train=is_train)
        self._note_forward(is_train)

    # -- checkpoints ------------------------------------------------------------------------
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Save the parameters, every bucket's symbol and the bucket keys, in MXNet's files.

        Writes ``prefix-%04d.params``, ``prefix-<key>-symbol.json`` for every
        bucket created, ``prefix.buckets`` (an NDArray file holding one int32
        array of the keys, in the order the buckets were created) and, beyond
        MXNet, ``prefix-symbol.json`` with the default bucket's symbol, so
        ``mx.model.load_checkpoint`` reads the checkpoint too. Bucket keys must
        be integers (MXNet's format stores them as int32).
        """
        self._lifecycle.require("get_params", "save_checkpoint")
        if not self._buckets:
            raise ValueError("BucketingModule.save_checkpoint: no bucket to save; bind() first")
        keys = _int_keys(list(self._buckets))
        arg_params, aux_params = self.get_params()
        model.save_checkpoint(
            prefix,
            epoch,
            self._buckets[self._default_bucket_key].symbol,
            arg_params,
            aux_params,
            remove_amp_cast=remove_amp_cast,
        )
        for key, module in self._buckets.items():
            module.symbol.save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", [nd.array(keys, dtype=np.int32)])

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from a checkpoint written by ``save_checkpoint`` (MXNet's or ours).

        Each saved bucket ``k`` gets a Module of ``prefix-k-symbol.json`` (its
        data and label names from ``sym_gen(k)``); other keys come from
        ``sym_gen`` as usual. The parameters of ``prefix-%04d.params`` are
        known before ``bind``, which copies them in. ``kwargs`` go to the
        constructor (``context``, ``fixed_param_names``, ...).
        """
        if sym_gen is None or default_bucket_key is None:
            raise ValueError(
                "BucketingModule.load: sym_gen and default_bucket_key are required "
                "(give the ones the module was trained with)"
            )
        symbols = {key: sym.load(f"{prefix}-{key}-symbol.json") for key in _read_keys(prefix)}
        arg_params, aux_params = model.load_params(prefix, epoch)
        return BucketingModule.load_dict(
            symbols, sym_gen, default_bucket_key, arg_params, aux_params, **kwargs
        )

    @staticmethod
    def load_dict(
        sym_dict=None,
        sym_gen=None,
        default_bucket_key=None,
        arg_params=None,
        aux_params=None,
        **kwargs,
    ):
        """A BucketingModule from ``{bucket_key: symbol}`` and parameters known before ``bind``."""
        if sym_dict is None or sym_gen is None or default_bucket_key is None:
            raise ValueError(
                "BucketingModule.load_dict: sym_dict, sym_gen and default_bucket_key are required"
            )
        if arg_params is None or aux_params is None:
            raise ValueError(
                "BucketingModule.load_dict: arg_params and aux_params are required "
                "(dicts of name -> NDArray; aux_params may be empty)"
            )
        module = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        module._lifecycle.check("load_params_unbound", "load")
        for key, symbol in sym_dict.items():
            module._buckets[key] = module._new_module(key, symbol)
        module._curr_module = module._buckets.get(default_bucket_key)
        module._held_params = (arg_params, aux_params)
        module._lifecycle.advance("load_params_unbound")
        return module


def _descs(names, arrays):
    """DataDescs named ``names`` for the shapes and dtypes of ``arrays``."""
    return [
        DataDesc(name, tuple(array.shape), array.dtype)
        for name, array in zip(names, arrays, strict=False)
    ]


def _int_keys(keys):
    """The bucket keys as ints, or a ValueError naming the first that is not one."""
    for key in keys:
        if isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise ValueError(
                f"BucketingModule.save_checkpoint: bucket key {key!r} is not an "
                "integer; MXNet's prefix.buckets file stores the keys as int32, so "
                "only integer keys can be saved (save_params saves the parameters)"
            )
        if not np.iinfo(np.int32).min <= int(key) <= np.iinfo(np.int32).max:
            raise ValueError(
                f"BucketingModule.save_checkpoint: bucket key {key} does not fit "
                "in int32 (MXNet's prefix.buckets format)"
            )
    return [int(key) for key in keys]


def _read_keys(prefix):
    """The bucket keys in ``prefix.buckets``, as Python ints."""
    fname = f"{prefix}.buckets"
    saved = nd.load(fname)
    if isinstance(saved, dict) or len(saved) != 1 or saved[0].ndim != 1:
        raise ValueError(
            f"BucketingModule.load: {fname} should hold one unnamed 1-D array of "
            "bucket keys, as save_checkpoint writes it"
        )
    return [int(key) for key in saved[0].asnumpy().astype(np.int32)]
