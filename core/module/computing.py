"""The computing half of ``Module``: forward, backward and what they leave behind.

A bound module runs a batch with ``forward`` (re-shaping itself first when the
batch's shapes differ from the bound ones, as MXNet 1.9 does) and ``backward``;
the results are read with ``get_outputs``, ``get_input_grads``, ``get_states``
and ``update_metric``. ``prepare`` pulls the rows of row_sparse parameters a
batch needs. Binding and re-shaping live in ``rebind.module.module``; this
mixin only drives the executor group bound there (``_exec_group``).
"""

from ..io import DataDesc
from .batch_fields import data_of, label_of, provide_data_of, provide_label_of
from .inputs import check_labels_fed
from .sparse_params import pull_batch_rows, sparse_rows_on_store

__all__ = ["ComputingMixin", "resized_labels"]


class ComputingMixin:
    """``forward``, ``backward``, ``prepare`` and the outputs, states and metric of ``Module``."""

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Pull the rows of row_sparse parameters the batch needs (``sparse_row_id_fn``).

        ``sparse_row_id_fn(data_batch)`` returns ``{parameter name: row ids}``;
        those rows are pulled from the kvstore into the devices' arrays. Without
        a kvstore holding the parameters it warns and does nothing, as MXNet.
        """
        self._lifecycle.require("bound_only", "prepare")
        pull_batch_rows(self, data_batch, sparse_row_id_fn)

    def _devices_may_differ(self):
        # row_sparse parameters updated on a kvstore: the devices hold only pulled rows
        return len(self._context) > 1 or sparse_rows_on_store(self)

    def _copy_ahead(self, data_batch):
        group = self._exec_group
        if group is None or not group.copies_ahead or isinstance(data_batch, list):
            return
        # a batch of other shapes re-shapes at its forward, which binds other arrays
        if tuple(array.shape for array in data_of(data_batch)) == self._curr_data_shapes:
            group.copy_ahead(data_batch)

    def forward(self, data_batch, is_train=None):
        """Run forward; a batch of another shape re-shapes the module first (as MXNet 1.9)."""
        self._lifecycle.require("forward", "forward")
        if isinstance(data_batch, list):
            shapes = _list_batch_shapes(data_batch)
        else:
            shapes = tuple(array.shape for array in data_of(data_batch))
        if shapes != self._curr_data_shapes:
            self._reshape_for(data_batch, shapes)
        self._exec_group.forward(data_batch, is_train)
        if is_train or (is_train is None and self.for_training):
            self._params_dirty = True  # a training pass moves BatchNorm's running statistics

    def _reshape_for(self, data_batch, shapes):
        """Re-shape for a batch whose data shapes differ from the bound ones.

        The new shapes come from the batch's ``provide_data``/``provide_label``
        when it has them, else from its arrays. Where rebind differs: labels
        bound but absent from the batch are re-shaped to the new batch size
        (MXNet failed with a shape error, e.g. ``predict`` on one example of a
        module bound for training).
        """
        batches = data_batch if isinstance(data_batch, list) else [data_batch]
        single = None if isinstance(data_batch, list) else data_batch
        new_data = provide_data_of(single) or [
            DataDesc(d.name, shape, d.dtype, d.layout)
            for d, shape in zip(self._data_shapes, shapes, strict=True)
        ]
        new_label = provide_label_of(single)
        if not new_label and self._label_shapes:
            labels = label_of(batches[0])
            if labels:
                new_label = [
                    DataDesc(
                        d.name, (a.shape[0] * len(batches),) + tuple(a.shape[1:]), d.dtype, d.layout
                    )
                    for d, a in zip(self._label_shapes, labels, strict=False)
                ]
            else:
                new_label = resized_labels(self._label_shapes, new_data)
        self.reshape(new_data, new_label or None)

    def forward_backward(self, data_batch):
        """``forward(data_batch, is_train=True)`` then ``backward()``.

        With several cpu contexts running side by side, each context's
        forward and backward run in one pass of its thread (one handover a
        step instead of two); the values are those of the two calls.
        """
        group = self._exec_group
        plain = (
            type(self).forward is not ComputingMixin.forward
            or type(self).backward is not ComputingMixin.backward
        )
        if plain or group is None or not group.hold_forward():
            # a subclass's forward or backward may read the outputs between the two
            super().forward_backward(data_batch)
            return
        try:
            self.forward(data_batch, is_train=True)
            self.backward()
        finally:
            group.release_forward()  # runs the forward still held if backward raised first

    def backward(self, out_grads=None):
        """Back-propagate (``out_grads`` for outputs that are not loss layers).

        Where rebind differs: when the symbol reads labels that the last forward
        did not feed (its batch had none, or the module was bound without
        label shapes), this raises; MXNet back-propagated against the labels
        left from an earlier batch, or zeros.
        """
        self._lifecycle.require("backward", "backward")
        group = self._exec_group
        check_labels_fed(type(self).__name__, group, self._label_names, bool(self._label_shapes))
        group.backward(out_grads=out_grads)

    def get_outputs(self, merge_multi_context=True):
        """Outputs of the last forward: ``[out1, ...]`` or ``[[out1_dev1, ...], ...]``."""
        self._lifecycle.require("outputs", "get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._lifecycle.require("outputs", "get_input_grads")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        """The state arrays (``state_names``), merged or per context."""
        self._lifecycle.require("outputs", "get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        """Set the states from ``[[state1_dev1, ...], ...]`` or every element to ``value``."""
        self._lifecycle.require("outputs", "set_states")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` over the last outputs and ``labels``."""
        self._lifecycle.require("outputs", "update_metric")
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Let ``mon`` watch every executor."""
        self._lifecycle.require("bound_only", "install_monitor")
        self._exec_group.install_monitor(mon)


def resized_labels(label_descs, data_descs):
    """The label descriptions with their batch axis set to the data's new batch size."""
    sizes = [d.shape[a] for d in data_descs if (a := DataDesc.get_batch_axis(d.layout)) >= 0]
    if not sizes:
        return label_descs
    resized = []
    for desc in label_descs:
        axis = DataDesc.get_batch_axis(desc.layout)
        shape = list(desc.shape)
        if axis >= 0:
            shape[axis] = sizes[0]
        resized.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
    return resized


def _list_batch_shapes(batches):
    """The whole-batch data shapes of a list of per-context DataBatches."""
    if not batches:
        raise ValueError("Module.forward: got an empty list of data batches")
    shapes = []
    for index in range(len(data_of(batches[0]))):
        shape = tuple(data_of(batches[0])[index].shape)
        if any(tuple(data_of(b)[index].shape) != shape for b in batches):
            raise ValueError("Module.forward: all data batches in a list need the same shapes")
        shapes.append((len(batches) * shape[0],) + shape[1:])
    return tuple(shapes)
