"""SequentialModule: modules chained output to input, trained as one.

Each module's outputs are the next module's data; ``backward`` runs the chain
in reverse, handing each module's input gradients to the module before it as
``out_grads``. The labels of a batch go, unchanged, to every module added with
``take_labels=True`` (usually the last, a loss). ``auto_wiring=True`` renames
the previous module's outputs to this module's data names.

A chain is less flexible and less efficient than one symbol holding the whole
network; it is the way to put a module that is not a symbol (a
``PythonLossModule``, say) into a network.
"""

import logging

from ..errors import LifecycleError
from ..io import DataDesc
from .base import DEFAULT_INITIALIZER, BaseModule
from .batch_fields import relay_batch
from .inputs import as_descs
from .lifecycle import Lifecycle

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A container module that chains modules: each one's outputs feed the next.

    Args:
        logger: where log lines go.
    """

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"
    _META_KEYS = (META_TAKE_LABELS, META_AUTO_WIRING)

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        # set at bind: the data names each module was bound with
        self._wired_names = []

    def add(self, module, **kwargs):
        """Append ``module`` to the chain and return ``self`` (so calls chain).

        Keyword arguments are the module's meta information:
        ``take_labels=True`` gives it the batch's labels (any module in the
        chain may take them; all get the same ones), ``auto_wiring=True``
        renames the previous module's outputs to its ``data_names``. Adding a
        module puts the chain back to unbound: bind and initialize it again.
        """
        unknown = sorted(set(kwargs) - set(self._META_KEYS))
        if unknown:
            raise ValueError(
                f"{type(self).__name__}.add: unknown meta {unknown} (a typo?); "
                f"the known ones are {list(self._META_KEYS)}"
            )
        self._modules.append(module)
        self._metas.append(dict(kwargs))
        self._lifecycle = Lifecycle(type(self).__name__, logger=self.logger)
        return self

    def _takes_labels(self, index):
        return bool(self._metas[index].get(self.META_TAKE_LABELS, False))

    # -- inputs and outputs -------------------------------------------------------------
    @property
    def data_names(self):
        """The data names of the first module ([] for an empty chain)."""
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        """The output names of the last module ([] for an empty chain)."""
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        """The data shapes of the first module."""
        self._lifecycle.require("bound_only", "data_shapes")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        """The label shapes given to ``bind``; None when no module takes labels."""
        self._lifecycle.require("bound_only", "label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        """The output shapes of the last module."""
        self._lifecycle.require("bound_only", "output_shapes")
        return self._modules[-1].output_shapes

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
        """Bind each module in turn; a module's output shapes are the next one's data shapes.

        Every module after the first is bound with ``inputs_need_grad`` when
        training, since its input gradients are the previous module's output
        gradients. Labels go only to modules added with ``take_labels=True``.
        """
        if not force_rebind and not self._lifecycle.check("bind", "bind"):
            return
        self._check_bindable(for_training, inputs_need_grad, shared_module)
        label_descs = None if label_shapes is None else as_descs(label_shapes)
        my_data_shapes = as_descs(data_shapes)
        wired_names = []
        for index, module in enumerate(self._modules):
            if self._metas[index].get(self.META_AUTO_WIRING, False):
                my_data_shapes = self._auto_wire(index, module, my_data_shapes)
            wired_names.append([desc.name for desc in my_data_shapes])
            module.bind(
                data_shapes=my_data_shapes,
                label_shapes=label_descs if self._takes_labels(index) else None,
                for_training=for_training,
                inputs_need_grad=bool(inputs_need_grad or (for_training and index > 0)),
                force_rebind=force_rebind,
                shared_module=None,
                grad_req=grad_req,
            )
            my_data_shapes = as_descs(module.output_shapes)
        self._lifecycle.advance("unbind")  # force_rebind: keeps parameters and optimizer
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        any_takes_labels = any(self._takes_labels(i) for i in range(len(self._modules)))
        self._label_shapes = label_descs if any_takes_labels else None
        self._wired_names = wired_names
        self._lifecycle.advance("bind")

    def _check_bindable(self, for_training, inputs_need_grad, shared_module):
        owner = type(self).__name__
        if not self._modules:
            raise ValueError(f"{owner}.bind: the chain is empty; add(module) first")
        if inputs_need_grad and not for_training:
            raise ValueError(f"{owner}.bind: inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise NotImplementedError(
                f"{owner}.bind: shared_module is not supported (as in "
                "MXNet): a chain has no single set of parameters to share"
            )

    def _auto_wire(self, index, module, descs):
        """``descs`` renamed to ``module``'s data names, shapes and dtypes kept."""
        names = module.data_names
        if len(names) != len(descs):
            raise ValueError(
                f"{type(self).__name__}.bind: auto_wiring of module {index} "
                f"({type(module).__name__}): the previous module gives {len(descs)} outputs "
                f"{[d.name for d in descs]} but this module takes {len(names)} data "
                f"inputs {list(names)}"
            )
        return [
            DataDesc(name, d.shape, d.dtype, d.layout) for name, d in zip(names, descs, strict=True)
        ]

    # -- parameters and optimizer -------------------------------------------------------
    def init_params(
        self,
        initializer=DEFAULT_INITIALIZER,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        """Initialize every module's parameters (from the merged ``arg_params``/``aux_params``).

        Each module picks its own names from the dictionaries. A parameter
        name used by two modules is an error (ValueError), since
        ``get_params`` merges them into one dictionary. Names that no module
        uses raise ValueError unless ``allow_extra``.
        """
        if not self._lifecycle.check("init_params", "init_params", force=force_init):
            return
        for module in self._modules:
            module.init_params(
                initializer=initializer,
                arg_params=arg_params,
                aux_params=aux_params,
                allow_missing=allow_missing,
                force_init=force_init,
                allow_extra=True,
            )
        arg_names, aux_names = self._check_unique_names()
        if not allow_extra:
            self._check_no_extra("arg_params", arg_params, arg_names)
            self._check_no_extra("aux_params", aux_params, aux_names)
        self._lifecycle.advance("init_params")

    def _check_unique_names(self):
        """``(arg name -> module index, aux name -> module index)``; duplicates raise."""
        owners = ({}, {})
        for index, module in enumerate(self._modules):
            for known, params in zip(owners, module.get_params(), strict=True):
                for name in params:
                    if name in known:
                        first = known[name]
                        raise ValueError(
                            f"{type(self).__name__}.init_params: duplicated parameter name "
                            f"{name!r}: module {index} ({type(module).__name__}) uses it and "
                            f"so does module {first} ({type(self._modules[first]).__name__}); "
                            "give the layers different names"
                        )
                    known[name] = index
        return owners

    def _check_no_extra(self, what, given, known):
        extra = sorted(set(given or ()) - set(known))
        if extra:
            raise ValueError(
                f"{type(self).__name__}.init_params: {what} has {extra}, which no "
                "module in the chain uses; drop them or pass allow_extra=True"
            )

    def get_params(self):
        """``(arg_params, aux_params)`` of all the modules, merged into two dictionaries."""
        self._lifecycle.require("get_params", "get_params")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            args, auxs = module.get_params()
            arg_params.update(args)
            aux_params.update(auxs)
        return arg_params, aux_params

    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Install the optimizer in every module (each gets its own from the same settings).

        An ``Optimizer`` instance given here is shared by the modules, as in
        MXNet; give its name and ``optimizer_params`` to keep them apart.
        """
        if not self._lifecycle.check("init_optimizer", "init_optimizer", force=force_init):
            return
        for module in self._modules:
            module.init_optimizer(
                kvstore=kvstore,
                optimizer=optimizer,
                optimizer_params=optimizer_params,
                force_init=force_init,
            )
        self._lifecycle.advance("init_optimizer")

    # -- computing ----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Run the modules in order, each on the previous one's outputs.

        The batch's fields (``label``, ``pad``, ``index``, ``bucket_key``, those
        it has) travel along in a shallow stand-in, whose ``data`` and
        ``provide_data`` are replaced between modules (``provide_data`` names
        the data as the next module was bound with, so it stays right under
        auto-wiring). The stand-in makes immutable batches work too (a
        ``namedtuple('Batch', ['data'])``, which MXNet fails to modify).
        """
        self._lifecycle.require("forward", "forward")
        batch = relay_batch(data_batch)
        last = len(self._modules) - 1
        for index, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if index == last:
                break
            batch.data = module.get_outputs()
            if hasattr(batch, "provide_data"):
                names = self._wired_names[index + 1]
                batch.provide_data = [
                    DataDesc(name, array.shape, array.dtype)
                    for name, array in zip(names, batch.data, strict=True)
                ]

    def backward(self, out_grads=None):
        """Run ``backward`` from the last module to the first, passing input gradients back."""
        self._lifecycle.require("backward", "backward")
        for index in range(len(self._modules) - 1, -1, -1):
            module = self._modules[index]
            module.backward(out_grads=out_grads)
            if index == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        """Update every module's parameters with the gradients of the last ``backward``."""
        self._lifecycle.require("update", "update")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last module."""
        self._lifecycle.require("outputs", "get_outputs")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the first module's data (bind with ``inputs_need_grad=True``)."""
        self._lifecycle.require("outputs", "get_input_grads")
        if not self.inputs_need_grad:
            raise LifecycleError(
                f"{type(self).__name__}.get_input_grads: the chain was bound "
                "without input gradients; call bind(..., "
                "inputs_need_grad=True, force_rebind=True) first"
            )
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` on the modules that take labels (none take: no update)."""
        self._lifecycle.require("outputs", "update_metric")
        for index, module in enumerate(self._modules):
            if self._takes_labels(index):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Install ``mon`` on every module of the chain."""
        self._lifecycle.require("bound_only", "install_monitor")
        for module in self._modules:
            module.install_monitor(mon)
