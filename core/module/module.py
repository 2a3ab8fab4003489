"""Module: a symbol bound to one or more contexts, trained with an optimizer.

The module keeps a CPU copy of the parameters (``_arg_params``,
``_aux_params``) and a ``DataParallelExecutorGroup`` (``_exec_group``) running
the network on its contexts. ``update`` changes the parameters on the devices
and marks the CPU copy dirty; ``get_params`` refreshes it when needed.

This file owns construction, checkpoints, binding and re-shaping. Its
neighbours hold the other halves of the class: the parameters in
``rebind.module.parameters``, the optimizer (``init_optimizer``, ``update``,
optimizer states) in ``rebind.module.optimizing``, and the computation
(``forward``, ``backward``, outputs, states, metric) in ``rebind.module.computing``.
"""

import logging

from ..context import Context, cpu
from ..errors import LifecycleError
from ..model import load_checkpoint, save_checkpoint
from ..ndarray import NDArray
from .base import BaseModule
from .computing import ComputingMixin
from .executor_group import DataParallelExecutorGroup
from .inputs import check_input_names, check_inputs_provided, parse_data_desc
from .optimizing import OptimizingMixin
from .parameters import ParamsMixin
from .sparse_params import host_param

__all__ = ["Module"]


class Module(ParamsMixin, OptimizingMixin, ComputingMixin, BaseModule):
    """MXNet's Module: runs ``symbol`` on ``context`` (one or several, data parallel).

    Args:
        symbol: the network.
        data_names: names of the data inputs.
        label_names: names of the label inputs (None or [] for none).
        logger: where log lines go.
        context: a Context or a list of them; the batch is split across a list.
        work_load_list: relative share of each context (default: equal).
        fixed_param_names: parameters that are never updated (no gradient).
        state_names: inputs not given by the data iterator, kept between
            batches and set by ``set_states`` (zeros at first).
        group2ctxs: ctx_group attribute -> context(s), for model parallelism.
        compression_params: gradient compression for the kvstore (not
            implemented by rebind's stores; they say so).
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
    ):
        super().__init__(logger=logger)
        self._context, self._work_load_list = _contexts(context, work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        self._set_input_names(data_names, label_names, state_names, fixed_param_names)
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._reset_optimizer()
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None
        self._curr_data_shapes = None

    def _set_input_names(self, data_names, label_names, state_names, fixed_param_names):
        """Check the input names against the symbol; the other arguments are parameters."""
        symbol = self._symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        check_input_names(symbol, self._data_names, "data", True)
        check_input_names(symbol, self._label_names, "label", False)
        check_input_names(symbol, self._state_names, "state", True)
        check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from ``prefix-symbol.json`` and ``prefix-%04d.params`` (MXNet's files).

        The parameters are known before ``bind`` and copied in by it. With
        ``load_optimizer_states``, ``prefix-%04d.states`` is loaded by
        ``init_optimizer``. ``kwargs`` go to the constructor (``data_names``,
        ``label_names``, ``context``, ...).
        """
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        module = Module(symbol=symbol, **kwargs)
        module._lifecycle.check("load_params_unbound", "load")
        module._arg_params, module._aux_params = arg_params, aux_params
        module._lifecycle.advance("load_params_unbound")
        if load_optimizer_states:
            module._preload_opt_states = f"{prefix}-{int(epoch):04d}.states"
        return module

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Save ``prefix-symbol.json``, ``prefix-%04d.params`` and optionally ``.states``.

        With a distributed kvstore of several workers, only rank 0 writes (every
        worker holds the same parameters) and every worker returns once the
        files are written (rebind; MXNet wrote on every worker).
        """
        arg_params, aux_params = self.get_params()
        writer = self._writes_files()
        if writer:
            save_checkpoint(
                prefix, epoch, self._symbol, arg_params, aux_params, remove_amp_cast=remove_amp_cast
            )
        if save_optimizer_states:
            state_name = f"{prefix}-{int(epoch):04d}.states"
            self.save_optimizer_states(state_name)
            if writer:
                logging.info('Saved optimizer state to "%s"', state_name)
        self._wait_for_files()

    # -- names and shapes -----------------------------------------------------------------

    @property
    def data_shapes(self):
        """The DataDescs of the data inputs (the module must be bound)."""
        self._lifecycle.require("bound_only", "data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self):
        """The DataDescs of the labels; None when bound without labels."""
        self._lifecycle.require("bound_only", "label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the outputs for the whole batch."""
        self._lifecycle.require("bound_only", "output_shapes")
        return self._exec_group.get_output_shapes()

    # -- binding -------------------------------------------------------------------------------
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
        """Bind executors for the input shapes (``provide_data``/``provide_label``).

        A second ``bind`` warns and does nothing unless ``force_rebind``, which
        keeps the parameters (and the optimizer) and binds anew. With
        ``shared_module`` (bucketing) the parameters, their memory and, when
        installed, the optimizer are shared with that module.
        """
        if force_rebind:
            self._unbind()
        action = "bind" if shared_module is None else "bind_shared"
        if not self._lifecycle.check(action, "bind"):
            return
        if inputs_need_grad and not for_training:
            raise ValueError("Module.bind: inputs_need_grad=True needs for_training=True")
        data_descs, label_descs = self._parse_shapes("bind", data_shapes, label_shapes)
        if shared_module is not None:
            self._check_lender(shared_module)
        self._exec_group = self._make_group(
            data_descs, label_descs, for_training, inputs_need_grad, shared_module, grad_req
        )
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        self._set_shapes(data_descs, label_descs)
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        self._adopt_params(shared_module)
        self._lifecycle.advance(action)
        lender = shared_module
        if lender is not None and lender.optimizer_initialized and not self.optimizer_initialized:
            self.borrow_optimizer(lender)

    def _parse_shapes(self, method, data_shapes, label_shapes):
        """``(data descs, label descs or None)``, checked against the symbol's inputs."""
        data_descs, label_descs = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes
        )
        arguments = self._symbol.list_arguments()
        needed = [n for n in self._data_names + self._label_names if n in arguments]
        owner = f"{type(self).__name__}.{method}"
        check_inputs_provided(owner, arguments, needed, data_descs, label_descs)
        return data_descs, label_descs

    def _check_lender(self, shared_module):
        stage = shared_module._lifecycle.stage
        if not (stage.bound and stage.params_initialized):
            raise LifecycleError(
                f"{type(self).__name__}.bind(shared_module=...): the shared module is "
                f"{stage.describe()}; bind it and initialize its parameters first"
            )
        if len(shared_module._exec_group.execs) < len(self._context):
            raise ValueError(
                f"{type(self).__name__}.bind: the shared module runs on "
                f"{len(shared_module._exec_group.execs)} contexts, this one on "
                f"{len(self._context)}; it cannot lend parameters for all of them"
            )

    def _make_group(
        self, data_descs, label_descs, for_training, inputs_need_grad, shared_module, grad_req
    ):
        return DataParallelExecutorGroup(
            self._symbol,
            self._context,
            self._work_load_list,
            data_descs,
            label_descs,
            self._param_names,
            for_training,
            inputs_need_grad,
            None if shared_module is None else shared_module._exec_group,
            logger=self.logger,
            fixed_param_names=self._fixed_param_names,
            grad_req=grad_req,
            group2ctxs=self._group2ctxs,
            state_names=self._state_names,
        )

    def _adopt_params(self, shared_module):
        """After binding: share, copy in, or allocate the CPU copies of the parameters."""
        group = self._exec_group
        if shared_module is not None:
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            group.set_params(self._arg_params, self._aux_params)
        else:
            # in memory the first context's backend copies to and from fast (pinned for a
            # GPU): get_params refreshes them at every epoch's end of fit
            backend = self._context[0].backend
            host = cpu()

            def host_zeros(block):
                return NDArray(backend.host_zeros(block[0].shape, block[0].dtype), host)

            self._arg_params = {  # row_sparse parameters keep their storage type
                name: host_param(block, host_zeros)
                for name, block in zip(group.param_names, group.param_arrays, strict=True)
            }
            self._aux_params = {
                name: host_zeros(block)
                for name, block in zip(group.aux_names, group.aux_arrays, strict=True)
            }

    def _unbind(self):
        """Drop the binding (``force_rebind``); parameter values are kept, refreshed first."""
        if self.binded and self.params_initialized and self._params_dirty:
            self._sync_params_from_devices()
        self._lifecycle.advance("unbind")
        self._exec_group = None
        self._data_shapes = self._label_shapes = self._curr_data_shapes = None

    def _set_shapes(self, data_descs, label_descs):
        self._data_shapes, self._label_shapes = data_descs, label_descs
        self._curr_data_shapes = tuple(tuple(desc.shape) for desc in data_descs)

    def reshape(self, data_shapes, label_shapes=None):
        """Re-shape the executors for new input shapes (e.g. another batch size)."""
        self._lifecycle.require("bound_only", "reshape")
        data_descs, label_descs = self._parse_shapes("reshape", data_shapes, label_shapes)
        self._exec_group.reshape(data_descs, label_descs)
        self._set_shapes(data_descs, label_descs)


def _contexts(context, work_load_list):
    """``(contexts, work_load_list)``: one Context or several, with one share each."""
    context = cpu() if context is None else context
    contexts = [context] if isinstance(context, (Context, str)) else list(context)
    contexts = [Context(c) for c in contexts]
    if work_load_list is None:
        work_load_list = [1] * len(contexts)
    if len(work_load_list) != len(contexts):
        raise ValueError(
            f"Module: work_load_list has {len(work_load_list)} entries for "
            f"{len(contexts)} contexts; give one per context"
        )
    return contexts, list(work_load_list)
