"""SwitchingModule: a module that runs one of several bound ``Module``s at a time.

``BucketingModule`` (one Module per bucket key) and ``MutableModule`` (a new
Module whenever the input shapes change) both keep a *current* Module,
``_curr_module``, and hand it the intermediate API: ``forward`` picks or binds
the Module for the batch, everything after it (``backward``, ``update``,
``get_outputs``, ``update_metric``, ...) goes to the current one. Every Module
after the first is bound with ``shared_module=``, so all of them use the very
same parameter arrays (and gradient arrays, and the CPU copies
``_arg_params``/``_aux_params``) and one optimizer: whichever is current, an
update changes the parameters of all.

This file owns what the two have in common: the delegation, the parameters
(kept across ``bind(force_rebind=True)``, or known before ``bind`` from a
checkpoint), the optimizer installed on the current Module and borrowed by the
others, and the lifecycle checks of the wrapper itself (its own stage, which
moves like a Module's; the wrapped Modules keep theirs).
"""

import logging

from ..errors import LifecycleError
from .base import DEFAULT_INITIALIZER, BaseModule

__all__ = ["SwitchingModule"]


class SwitchingModule(BaseModule):
    """Base of modules that delegate to a current ``Module`` sharing parameters with others.

    A subclass implements ``bind``, ``forward``, ``data_names``,
    ``output_names`` and ``_bound_modules`` (every bound Module it keeps), and
    calls ``_release_binding`` / ``_adopt_default`` around a (re)bind.
    """

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._curr_module = None
        self._params_dirty = False  # the shared CPU copies lag behind the devices
        self._held_params = None  # (arg_params, aux_params) known while unbound
        self._monitor = None
        self._grad_req = "write"

    def _bound_modules(self):
        """Every bound Module this module keeps (the current one included)."""
        raise self._abstract("_bound_modules")

    # -- (re)binding ----------------------------------------------------------------------
    def _release_binding(self):
        """Drop the binding for ``force_rebind``; keeps parameter values and the optimizer.

        Returns the Module whose optimizer the new binding borrows (None when
        no optimizer is installed).
        """
        previous = self._curr_module if self.optimizer_initialized else None
        if self.params_initialized:
            self._held_params = self.get_params()
        self._lifecycle.advance("unbind")
        self._reset_bind()
        return previous

    def _reset_bind(self):
        """Forget every bound Module (MXNet's name)."""
        self._curr_module = None

    def _adopt_default(self, module, optimizer_source=None):
        """Make freshly bound ``module`` current, give it the held parameters and the optimizer."""
        self._curr_module = module
        if self._held_params is not None:
            arg_params, aux_params = self._held_params
            module.init_params(
                initializer=None, arg_params=arg_params, aux_params=aux_params, force_init=True
            )
            self._held_params = None
            self._params_dirty = False
        if optimizer_source is not None:
            module.borrow_optimizer(optimizer_source)
        if self._monitor is not None:
            module.install_monitor(self._monitor)

    def _bind_shared(self, module, data_shapes, label_shapes, shared_module):
        """Bind ``module`` like the current one, sharing parameters with ``shared_module``.

        ``Module.bind`` also lends it the optimizer when ``shared_module`` has one.
        """
        module.bind(
            data_shapes,
            label_shapes,
            self._curr_module.for_training,
            self._curr_module.inputs_need_grad,
            force_rebind=False,
            shared_module=shared_module,
            grad_req=self._grad_req,
        )
        if self._monitor is not None:
            module.install_monitor(self._monitor)
        return module

    # -- names and shapes ---------------------------------------------------------------
    @property
    def data_shapes(self):
        """The data DataDescs of the current Module."""
        self._lifecycle.require("bound_only", "data_shapes")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        """The label DataDescs of the current Module (None when bound without labels)."""
        self._lifecycle.require("bound_only", "label_shapes")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the current Module's outputs."""
        self._lifecycle.require("bound_only", "output_shapes")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The symbol of the current Module."""
        self._lifecycle.require("bound_only", "symbol")
        return self._curr_module.symbol

    # -- parameters -----------------------------------------------------------------------
    def get_params(self):
        """``(arg_params, aux_params)``: the shared CPU copies, refreshed from the devices.

        Before ``bind`` (after ``load``, or between a ``force_rebind``'s unbind
        and bind) these are the values the next binding will receive.
        """
        self._lifecycle.require("get_params", "get_params")
        if not self.binded:
            return self._held_params
        # another Module may have updated the shared arrays since this one synced
        module = self._curr_module
        module._params_dirty = module._params_dirty or self._params_dirty
        params = module.get_params()
        self._params_dirty = False
        return params

    def init_params(
        self,
        initializer=DEFAULT_INITIALIZER,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        """Initialize the shared parameters through the current Module (``Module.init_params``)."""
        if not self._lifecycle.check("init_params", "init_params", force=force_init):
            return
        self._curr_module.init_params(
            initializer=initializer,
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=allow_missing,
            force_init=force_init,
            allow_extra=allow_extra,
        )
        self._params_dirty = False
        self._lifecycle.advance("init_params")

    def _assign_params(self, arg_params, aux_params, force_init, allow_extra):
        """``set_params(allow_missing=True)``: the current module keeps the rest."""
        self._curr_module.set_params(
            arg_params,
            aux_params,
            allow_missing=True,
            force_init=force_init,
            allow_extra=allow_extra,
        )

    # -- optimizer ------------------------------------------------------------------------
    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Install the optimizer on the current Module; every other bound Module borrows it."""
        if not self._lifecycle.check("init_optimizer", "init_optimizer", force=force_init):
            return
        current = self._curr_module
        if self._params_dirty:
            current._params_dirty = True
        current.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for module in self._bound_modules():
            if module is not current:
                module.borrow_optimizer(current)
        self._lifecycle.advance("init_optimizer")

    def update(self):
        """Apply the shared optimizer with the current Module's gradients."""
        self._lifecycle.require("update", "update")
        self._params_dirty = True
        self._curr_module.update()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the shared optimizer's states (see ``Module.save_optimizer_states``; rebind)."""
        self._lifecycle.require("optimizer_states", "save_optimizer_states")
        self._curr_module.save_optimizer_states(fname, dump_optimizer=dump_optimizer)

    def load_optimizer_states(self, fname):
        """Load the shared optimizer's states into every bound Module (rebind)."""
        self._lifecycle.require("optimizer_states", "load_optimizer_states")
        current = self._curr_module
        current.load_optimizer_states(fname)
        for module in self._bound_modules():
            if module is not current:  # a dumped optimizer may have replaced the old one
                module.borrow_optimizer(current)

    @property
    def _optimizer(self):
        return getattr(self._curr_module, "_optimizer", None)

    @property
    def _kvstore(self):
        return getattr(self._curr_module, "_kvstore", None)

    @property
    def _updater(self):
        return getattr(self._curr_module, "_updater", None)

    @property
    def _update_on_kvstore(self):
        return getattr(self._curr_module, "_update_on_kvstore", None)

    # -- computation ----------------------------------------------------------------------
    def _note_forward(self, is_train):
        if is_train or (is_train is None and self.for_training):
            self._params_dirty = True  # BatchNorm moves its running statistics

    def backward(self, out_grads=None):
        """Back-propagate through the current Module."""
        self._lifecycle.require("backward", "backward")
        self._curr_module.backward(out_grads=out_grads)

    def get_outputs(self, merge_multi_context=True):
        """The current Module's outputs of the last ``forward``."""
        self._lifecycle.require("outputs", "get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The current Module's data gradients (bind with ``inputs_need_grad=True``)."""
        self._lifecycle.require("outputs", "get_input_grads")
        if not self.inputs_need_grad:
            raise LifecycleError(
                f"{type(self).__name__}.get_input_grads(): bound without input "
                "gradients; call bind(..., inputs_need_grad=True, "
                "force_rebind=True) first"
            )
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` over the current Module's outputs and ``labels``."""
        self._lifecycle.require("outputs", "update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def get_states(self, merge_multi_context=True):
        """The current Module's state arrays (``state_names``)."""
        self._lifecycle.require("outputs", "get_states")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        """Set the current Module's state arrays."""
        self._lifecycle.require("outputs", "set_states")
        self._curr_module.set_states(states, value)

    def install_monitor(self, mon):
        """Let ``mon`` watch every bound Module, and each one bound later."""
        self._lifecycle.require("bound_only", "install_monitor")
        self._monitor = mon
        for module in self._bound_modules():
            module.install_monitor(mon)
