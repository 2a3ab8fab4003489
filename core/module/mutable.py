"""MutableModule: a module whose input shapes may change from batch to batch.

MXNet's example/rcnn ``MutableModule``, for networks fed inputs of varying
shape (detection: images of different sizes, a varying number of boxes):

- ``bind`` binds a ``Module`` for the *largest* shapes: any input named in
  ``max_data_shapes``/``max_label_shapes`` is bound with that shape instead of
  the one given, so the arrays allocated first are big enough for every batch.
- ``forward`` compares the batch's input shapes with the current Module's. When
  they differ it binds a new Module for the batch's shapes with
  ``shared_module=`` the current one: the new Module uses the very same
  parameter (and gradient, auxiliary) arrays and the same optimizer, and carves
  its input arrays from the memory of the first binding. So parameter values,
  including updates made before the switch, and optimizer state carry over; the
  old Module is dropped.
- ``fixed_param_prefix``: every parameter whose name starts with one of these
  prefixes is fixed (``fixed_param_names`` of the Modules: no gradient, no
  update), e.g. ``['conv1', 'conv2']`` to freeze the first layers.

Everything else is a ``Module``'s intermediate API, run on the current Module.
"""

import logging

from .. import model
from ..io import DataDesc
from .batch_fields import data_of, label_of
from .computing import resized_labels
from .inputs import as_descs, check_input_names
from .module import Module
from .switching import SwitchingModule

__all__ = ["MutableModule"]


class MutableModule(SwitchingModule):
    """The rcnn example's MutableModule: re-binds, sharing parameters, when shapes change.

    Args:
        symbol: the network.
        data_names: names of the data inputs.
        label_names: names of the label inputs (None or [] for none).
        logger: where log lines go.
        context: a Context or a list of them (default ``cpu()``).
        work_load_list: relative share of each context (default: equal).
        max_data_shapes: ``[(name, shape)]`` of data inputs whose shape varies,
            with the largest shape each takes; ``bind`` uses these shapes.
        max_label_shapes: the same for label inputs.
        fixed_param_prefix: a list of name prefixes; every parameter (not
            data or label) starting with one of them is never updated.

    The current Module is ``_curr_module``.
    """

    def __init__(
        self,
        symbol,
        data_names,
        label_names,
        logger=logging,
        context=None,
        work_load_list=None,
        max_data_shapes=None,
        max_label_shapes=None,
        fixed_param_prefix=None,
    ):
        super().__init__(logger=logger)
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        check_input_names(symbol, self._data_names, "data", True)
        check_input_names(symbol, self._label_names, "label", False)
        self._context = context
        self._work_load_list = work_load_list
        self._max_data_shapes = _shape_pairs(
            max_data_shapes, self._data_names, "max_data_shapes", "data_names"
        )
        self._max_label_shapes = _shape_pairs(
            max_label_shapes, self._label_names, "max_label_shapes", "label_names"
        )
        if isinstance(fixed_param_prefix, str):
            fixed_param_prefix = [fixed_param_prefix]
        self._fixed_param_prefix = list(fixed_param_prefix or [])
        inputs = set(self._data_names + self._label_names)
        prefixes = tuple(self._fixed_param_prefix)
        self._fixed_param_names = [
            name
            for name in symbol.list_arguments()
            if name not in inputs and name.startswith(prefixes)
        ]
        self._curr_data_shapes = None  # data shapes the current Module is bound for
        self._curr_label_shapes = None

    def _new_module(self):
        return Module(
            self._symbol,
            self._data_names,
            self._label_names,
            logger=self.logger,
            context=self._context,
            work_load_list=self._work_load_list,
            fixed_param_names=self._fixed_param_names,
        )

    def _bound_modules(self):
        module = self._curr_module
        return [module] if module is not None and module.binded else []

    def _reset_bind(self):
        super()._reset_bind()
        self._curr_data_shapes = self._curr_label_shapes = None

    def _make_current(self, module):
        self._curr_module = module
        self._curr_data_shapes = tuple(tuple(desc.shape) for desc in module.data_shapes)
        labels = module.label_shapes
        self._curr_label_shapes = tuple(tuple(d.shape) for d in labels) if labels else None

    # -- names ----------------------------------------------------------------------------

    @property
    def output_names(self):
        """A list of names for the outputs of this module."""
        return self._symbol.list_outputs()

    @property
    def symbol(self):
        """The network (the same for every binding)."""
        return self._symbol

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
        """Bind a Module for the given shapes, the inputs of ``max_*_shapes`` at their maximum.

        A second ``bind`` warns and does nothing unless ``force_rebind``, which
        binds anew keeping the parameter values and the optimizer.
        ``shared_module`` is not supported (as in the rcnn example).
        """
        if shared_module is not None:
            raise ValueError("MutableModule.bind: shared_module is not supported; pass None")
        previous = self._release_binding() if force_rebind and self.binded else None
        if not self._lifecycle.check("bind", "bind"):
            return
        self.for_training, self.inputs_need_grad, self._grad_req = (
            for_training,
            inputs_need_grad,
            grad_req,
        )
        data_descs = _at_max(as_descs(data_shapes), self._max_data_shapes)
        label_descs = (
            _at_max(as_descs(label_shapes), self._max_label_shapes) if label_shapes else None
        )
        module = self._new_module()
        module.bind(
            data_descs,
            label_descs,
            for_training,
            inputs_need_grad,
            force_rebind=False,
            shared_module=None,
            grad_req=grad_req,
        )
        self._make_current(module)
        self._adopt_default(module, optimizer_source=previous)
        self._lifecycle.advance("bind")

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Save ``prefix-symbol.json``, ``prefix-%04d.params`` and optionally ``.states``.

        Beyond the rcnn example (which had none): ``Module.save_checkpoint``'s
        files, so ``Module.load`` or ``mx.model.load_checkpoint`` read them.
        """
        arg_params, aux_params = self.get_params()
        model.save_checkpoint(
            prefix, epoch, self._symbol, arg_params, aux_params, remove_amp_cast=remove_amp_cast
        )
        if save_optimizer_states:
            self.save_optimizer_states(f"{prefix}-{int(epoch):04d}.states")

    # -- computation ----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Run forward, first re-binding (sharing parameters) if the batch's shapes changed.

        The shapes compared are those of the batch's arrays (labels only when
        both the batch and the current binding have them).
        """
        self._lifecycle.require("forward", "forward")
        if isinstance(data_batch, list):
            raise NotImplementedError(
                "MutableModule.forward: a list of per-context batches is "
                "not supported; give one DataBatch"
            )
        if self._shapes_changed(data_batch):
            self._rebind_for(data_batch)
        self._curr_module.forward(data_batch, is_train=is_train)
        self._note_forward(is_train)

    def _shapes_changed(self, data_batch):
        if tuple(tuple(array.shape) for array in data_of(data_batch)) != self._curr_data_shapes:
            return True
        labels = label_of(data_batch)
        if not labels or self._curr_label_shapes is None:
            return False
        return tuple(tuple(array.shape) for array in labels) != self._curr_label_shapes

    def _rebind_for(self, data_batch):
        """Bind a Module for the batch's shapes, sharing with the current one; make it current."""
        current = self._curr_module
        data_descs = _like(current.data_shapes, data_of(data_batch))
        labels = label_of(data_batch)
        label_descs = None
        if labels and current.label_shapes:
            label_descs = _like(current.label_shapes, labels)
        elif current.label_shapes:
            # a batch without labels (prediction): keep them, at the new batch size
            label_descs = resized_labels(current.label_shapes, data_descs)
        module = self._bind_shared(self._new_module(), data_descs, label_descs, current)
        # the CPU copies are shared too: the new Module must refresh them when asked
        module._params_dirty = current._params_dirty or self._params_dirty
        self._make_current(module)


def _shape_pairs(pairs, names, what, names_arg):
    """``{name: shape}`` of ``max_*_shapes``; every name must be an input of that kind."""
    shapes = {}
    for desc in as_descs(pairs or []):
        if desc.name not in names:
            raise ValueError(
                f"MutableModule: {what} names {desc.name!r}, which is not one of "
                f"{names_arg}={names}; fix the name or add it to {names_arg}"
            )
        shapes[desc.name] = tuple(desc.shape)
    return shapes


def _at_max(descs, max_shapes):
    """``descs`` with the shapes of the inputs named in ``max_shapes`` replaced by theirs."""
    return [
        DataDesc(d.name, max_shapes.get(d.name, tuple(d.shape)), d.dtype, d.layout) for d in descs
    ]


def _like(descs, arrays):
    """``descs`` (names, dtypes, layouts) with the shapes of ``arrays``."""
    return [
        DataDesc(d.name, tuple(array.shape), d.dtype, d.layout)
        for d, array in zip(descs, arrays, strict=False)
    ]
