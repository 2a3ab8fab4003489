"""DataParallelExecutorGroup: one executor per context, a batch sliced across them.

A ``Module`` with several contexts binds one executor per context. Each
executor sees its slice of every batch along the batch axis (the ``N`` of the
input's layout), sized by ``work_load_list``. Outputs and input gradients are
merged back along that axis; parameter gradients stay per device and are summed
by the kvstore in ``Module.update``. With one context nothing is sliced or
merged: a batch is copied straight into the bound arrays.

The attribute names are MXNet's (``execs``, ``param_arrays``, ``grad_arrays``,
``aux_arrays``, ``data_arrays``, ``label_arrays``, ``slices``, ...), since user
code reaches into ``module._exec_group``.

This file binds the executors, runs backward and reads back what they leave
(parameters, outputs, input gradients, states, the metric); loading batches
into them and ``forward`` live in ``LoadingMixin`` (``rebind.module.loading``).
"""

import logging

from ..errors import LifecycleError, ShapeError
from ..io import DataDesc
from ..ndarray import NDArray
from .context_threads import ContextRunner
from .host_params import one_memory
from .inputs import as_descs
from .loading import LoadingMixin
from .slicing import copy_batch_part, prepare_group2ctxs, slice_axis, split_input_slice
from .slicing import merge_multi_context as merge_contexts

__all__ = ["DataParallelExecutorGroup"]


def _grad_requests(grad_req, arg_names, param_names, fixed, data_names, inputs_need_grad):
    """``{argument: 'write' | 'add' | 'null'}`` from MXNet's three ways of giving grad_req."""
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise ValueError(
                f"grad_req: {len(grad_req)} entries for {len(arg_names)} arguments {arg_names}"
            )
        return dict(zip(arg_names, grad_req, strict=True))
    if not isinstance(grad_req, (str, dict)):
        raise ValueError(f"grad_req must be a str, list, tuple or dict, got {grad_req!r}")
    default = grad_req if isinstance(grad_req, str) else "write"
    requests = {}
    for name in arg_names:
        if name in param_names:
            requests[name] = "null" if name in fixed else default
        elif name in data_names:
            requests[name] = default if inputs_need_grad else "null"
        else:
            requests[name] = "null"
    if isinstance(grad_req, dict):
        requests.update(grad_req)
    return requests


def _shared_buffers(shared_group, num_contexts):
    """Per context, the memory pool executors take arrays from (a shared group's, if any)."""
    if shared_group is not None:
        return shared_group.shared_data_arrays
    return [{} for _ in range(num_contexts)]


class DataParallelExecutorGroup(LoadingMixin):
    """Executors of one symbol on several contexts, fed slices of each batch.

    Args:
        symbol: the network.
        contexts: one context per executor.
        workload: relative share of each context in a batch.
        data_shapes, label_shapes: DataDescs of the inputs (whole batch).
        param_names: the arguments that are parameters.
        for_training: bind gradients (else every grad_req is 'null').
        inputs_need_grad: also compute gradients of the data inputs.
        shared_group: a group whose executors lend their parameters and memory
            (bucketing).
        fixed_param_names: parameters that get no gradient.
        grad_req: 'write'/'add'/'null', a list per argument or a dict by name.
        state_names: inputs kept between batches and set by ``set_states``.
        group2ctxs: ctx_group attribute -> context(s), for model parallelism.
    """

    def __init__(
        self,
        symbol,
        contexts,
        workload,
        data_shapes,
        label_shapes,
        param_names,
        for_training,
        inputs_need_grad,
        shared_group=None,
        logger=logging,
        fixed_param_names=None,
        grad_req="write",
        state_names=None,
        group2ctxs=None,
    ):
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.group2ctxs = prepare_group2ctxs(group2ctxs, len(self.contexts))
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        wanted = set(param_names)
        self.param_names = [name for name in self.arg_names if name in wanted]
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        # MXNet takes (name, shape) pairs wherever it takes DataDescs
        data_shapes = as_descs(data_shapes)
        label_shapes = None if label_shapes is None else as_descs(label_shapes)
        data_names = [desc.name for desc in data_shapes]
        self.grad_req = _grad_requests(
            grad_req if for_training else "null",
            self.arg_names,
            wanted,
            set(self.fixed_param_names),
            data_names,
            inputs_need_grad,
        )
        self.shared_data_arrays = _shared_buffers(shared_group, len(self.contexts))
        self._describe_outputs(symbol)
        self.execs = []
        self._default_execs = None
        self._total_exec_bytes = 0
        self.labels_fed = False  # whether the last forward copied labels in (rebind)
        self.data_shapes = self.label_shapes = None
        self.data_names, self.label_names = data_names, []
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _describe_outputs(self, symbol):
        """Output names and batch axes (from each output's ``__layout__``, else 0)."""
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [
            DataDesc.get_batch_axis(symbol[i].attr("__layout__")) for i in range(self.num_outputs)
        ]

    # -- binding ------------------------------------------------------------------------
    def decide_slices(self, data_shapes):
        """The batch axis of each input; sets ``batch_size`` and ``slices`` from the first."""
        if not data_shapes:
            raise ValueError("DataParallelExecutorGroup: no data inputs to take a batch size from")
        axes = [DataDesc.get_batch_axis(desc.layout) for desc in data_shapes]
        for desc, axis in zip(data_shapes, axes, strict=True):
            if axis == -1:
                continue
            size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise ShapeError(
                    f"all inputs must have the same batch size: batch_size = "
                    f"{self.batch_size}, but {desc.name} has shape {desc.shape}"
                )
        return axes

    def _sliced_shapes(self, descs, index, axes):
        """The DataDescs of context ``index``'s slice, for inputs the symbol takes."""
        sliced = []
        for desc, axis in zip(descs, axes, strict=True):
            if desc.name not in self.arg_names:
                continue  # a label the network does not consume
            shape = list(desc.shape)
            if axis >= 0:
                part = self.slices[index]
                shape[axis] = part.stop - part.start
            sliced.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return sliced

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Bind (or, with ``reshape``, re-shape) one executor per context."""
        if not reshape and self.execs:
            raise LifecycleError(
                "DataParallelExecutorGroup.bind_exec: already bound; "
                "pass reshape=True to change shapes"
            )
        data_shapes = as_descs(data_shapes)
        label_shapes = None if label_shapes is None else as_descs(label_shapes)
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = self.decide_slices(label_shapes) if label_shapes else []
        for index in range(len(self.contexts)):
            descs = self._sliced_shapes(data_shapes, index, self.data_layouts)
            if label_shapes:
                descs += self._sliced_shapes(label_shapes, index, self.label_layouts)
            if reshape:
                shapes = {desc.name: desc.shape for desc in descs}
                self.execs[index] = self._default_execs[index].reshape(
                    allow_up_sizing=True, **shapes
                )
            else:
                self.execs.append(self._bind_ith_exec(index, descs, shared_group))
            if not self.for_training:
                self.execs[index].use_inference_engine(self.param_names)
        self.data_shapes, self.label_shapes = data_shapes, label_shapes
        self.data_names = [desc.name for desc in data_shapes]
        self.label_names = [desc.name for desc in label_shapes] if label_shapes else []
        self._collect_arrays()

    def _bind_ith_exec(self, index, descs, shared_group):
        shared_exec = None if shared_group is None else shared_group.execs[index]
        return self.symbol.simple_bind(
            self.contexts[index],
            grad_req=self.grad_req,
            type_dict={desc.name: desc.dtype for desc in descs},
            group2ctx=self.group2ctxs[index],
            shared_arg_names=self.param_names,
            shared_exec=shared_exec,
            shared_buffer=self.shared_data_arrays[index],
            **{desc.name: desc.shape for desc in descs},
        )

    def reshape(self, data_shapes, label_shapes):
        """Re-shape every executor for new input shapes, sharing parameters and memory."""
        data_shapes = as_descs(data_shapes)
        label_shapes = None if label_shapes is None else as_descs(label_shapes)
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _collect_arrays(self):
        """MXNet's per-name lists of per-context arrays, and the one-context fast path."""
        execs = self.execs

        def per_context(name):
            return [(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]

        self.data_arrays = [per_context(name) for name in self.data_names]
        labels = [name for name in self.label_names if name in self.arg_names]
        self.label_arrays = [per_context(name) for name in labels] if self.label_shapes else None
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        positions = [self.arg_names.index(name) for name in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in positions]
        self.grad_arrays = (
            [[e.grad_arrays[i] for e in execs] for i in positions] if self.for_training else None
        )
        self.input_grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [
                [e.grad_arrays[self.arg_names.index(name)] for e in execs]
                for name in self.data_names
                if name in self.arg_names
            ]
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]
        self._single = execs[0] if len(execs) == 1 else None
        self._runner = ContextRunner(self.contexts, execs)
        self._reset_loading()

    # -- parameters -------------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copy parameter values into every executor."""
        for executor in self.execs:
            executor.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Copy the parameters into ``arg_params``/``aux_params`` (averaged over contexts)."""
        for names, blocks, targets in (
            (self.param_names, self.param_arrays, arg_params),
            (self.aux_names, self.aux_arrays, aux_params),
        ):
            for name, block in zip(names, blocks, strict=True):
                _average_into(block, targets[name])

    # -- computation (forward and loading: LoadingMixin in loading.py) ------------------
    def backward(self, out_grads=None):
        """Back-propagate in every executor; ``out_grads`` are sliced like the outputs."""
        if not self.for_training:
            raise LifecycleError(
                "Module.backward(): the module is bound for inference; call "
                "bind(..., for_training=True, force_rebind=True) first"
            )
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        if not out_grads:
            self._runner.run(lambda index, executor: executor.backward())
            return
        self._runner.run(
            lambda index, executor: executor.backward(out_grads=self._grads_of(out_grads, index))
        )

    def _grads_of(self, out_grads, index):
        """Context ``index``'s slice of the head gradients, on its context."""
        parts = []
        for grad, axis in zip(out_grads, self.output_layouts, strict=False):
            if axis >= 0 and self._single is None:
                grad = slice_axis(grad, axis, self.slices[index])
            parts.append(grad.as_in_context(self.contexts[index]))
        return parts

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Outputs ``[out1, out2]`` merged over contexts, or ``[[out1_dev1, ...], ...]``."""
        if self._single is not None and begin == 0 and end is None and merge_multi_context:
            return list(self._single.outputs)
        end = self.num_outputs if end is None else end
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return merge_contexts(outputs, self.output_layouts[begin:end])
        return outputs

    def get_output_shapes(self):
        """``[(name, shape)]`` of the outputs for the whole batch."""
        shapes = []
        for name, out, axis in zip(
            self.output_names, self.execs[0].outputs, self.output_layouts, strict=True
        ):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs, merged over contexts or per context."""
        if not self.inputs_need_grad:
            raise LifecycleError(
                "Module.get_input_grads(): the module was bound without input "
                "gradients; call bind(..., inputs_need_grad=True, "
                "force_rebind=True) first"
            )
        if merge_multi_context:
            return merge_contexts(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def get_states(self, merge_multi_context=True):
        """The state arrays, ``[[state1_dev1, state1_dev2], ...]`` (or one per state)."""
        if not merge_multi_context:
            return self.state_arrays
        if len(self.execs) > 1:
            raise NotImplementedError(
                "get_states(merge_multi_context=True) with several contexts: states have no "
                "known batch axis to merge on (MXNet refuses too); pass merge_multi_context=False"
            )
        return [block[0] for block in self.state_arrays]

    def set_states(self, states=None, value=None):
        """Set the states from ``[[state1_dev1, ...], ...]``, or every element to ``value``."""
        if (states is None) == (value is None):
            raise ValueError("set_states: give exactly one of states and value")
        if value is not None:
            for block in self.state_arrays:
                for target in block:
                    target[:] = value
            return
        for sources, targets in zip(states, self.state_arrays, strict=True):
            sources = sources if isinstance(sources, (list, tuple)) else [sources] * len(targets)
            copy_batch_part(sources, targets)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Feed each context's outputs and its slice of ``labels`` to ``eval_metric``."""
        for index, executor in enumerate(self.execs):
            part = self._labels_for_metric(eval_metric, labels, index, pre_sliced)
            names = self.label_names or [f"label{i}" for i in range(len(part))]
            eval_metric.update_dict(
                dict(zip(names, part, strict=False)),
                dict(zip(self.output_names, executor.outputs, strict=True)),
            )

    def install_monitor(self, mon):
        """Let ``mon`` watch every executor."""
        for executor in self.execs:
            mon.install(executor)


def _average_into(block, target):
    """Write the mean of one array over its contexts into ``target`` (a copy with one)."""
    if len(block) == 1 or one_memory(block):  # (host contexts sharing the store's copy)
        source = block[0]
    else:
        host = [array.as_in_context(target.context) for array in block]
        total = host[0].copy()
        for array in host[1:]:
            total += array
        source = total / len(block)
    if source.dtype != target.dtype:
        source = source.astype(target.dtype)
    source.copyto(target)
