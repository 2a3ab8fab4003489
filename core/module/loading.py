"""The loading half of ``DataParallelExecutorGroup``: batches into the executors, then forward.

``forward`` copies a batch's data and labels into the bound input arrays (sliced
along the batch axis across contexts, or straight in with one context, through
the copies ``copy_ahead`` started if any) and runs every executor forward.
Only the labels the network consumes are loaded. The state this side keeps
(``_label_keep``, the load targets, ``_ahead``, ``_loaded_labels``,
``copies_ahead``) is reset by ``_reset_loading`` each time the arrays are bound;
``_labels_for_metric`` gives ``update_metric`` each context's labels as loaded.
Binding, parameters, backward, outputs and the metric live in
``rebind.module.executor_group``, which also holds the group's constructor.
"""

from .batch_fields import data_of, label_of
from .copy_ahead import AheadCopies, as_loaded, loaded_labels_apply
from .slicing import copy_batch_part, load_sliced, slice_axis

__all__ = ["LoadingMixin"]


class LoadingMixin:
    """``forward``, ``copy_ahead``, the forward hold and the labels loaded, for the group."""

    def _reset_loading(self):
        """Where batches load into the arrays just bound; drops copies started for the old ones."""
        # positions in a batch's label list of the labels the network consumes
        self._label_keep = [i for i, name in enumerate(self.label_names) if name in self.arg_names]
        self._label_layouts_used = [self.label_layouts[i] for i in self._label_keep]
        self._data_targets = [block[0][1] for block in self.data_arrays]
        self._label_targets = [block[0][1] for block in self.label_arrays or []]
        self._drop_ahead()  # copies started for the arrays bound before
        self._loaded_labels = None
        self.copies_ahead = self._single is not None and AheadCopies.supported(self.contexts[0])

    def copy_ahead(self, data_batch):
        """Start copying the next batch to the device while the queued work runs (fit).

        Only for one context whose backend copies ahead (a GPU); see ``copy_ahead.py``.
        """
        if not self.copies_ahead or isinstance(data_batch, list):
            return
        self._drop_ahead()
        parts = [(data_of(data_batch), self._data_targets)]
        labels = label_of(data_batch)
        if self.label_arrays and labels:
            parts.append((self._kept_labels(labels), self._label_targets))
        self._ahead = AheadCopies.start(data_batch, parts)

    def _drop_ahead(self):
        ahead = getattr(self, "_ahead", None)
        self._ahead = None
        if ahead is not None:
            ahead.drop()

    def forward(self, data_batch, is_train=None):
        """Load the batch (sliced per context) into the executors and run them forward."""
        if is_train is None:
            is_train = self.for_training
        single = self._single
        if single is not None and not isinstance(data_batch, list):
            ahead, self._ahead = self._ahead, None
            if ahead is not None and ahead.batch is not data_batch:
                ahead.drop()  # started for another batch
                ahead = None
            # through the copies started for this batch (copy_ahead), if any
            load = copy_batch_part if ahead is None else ahead.load
            load(data_of(data_batch), self._data_targets)
            labels = label_of(data_batch)
            self._loaded_labels = None
            self.labels_fed = bool(self.label_arrays and labels)
            if self.labels_fed:
                kept = self._kept_labels(labels)
                load(kept, self._label_targets)
                if self.copies_ahead and loaded_labels_apply():
                    self._loaded_labels = kept
            if ahead is not None:
                ahead.drop()  # those this batch did not use
            single.forward(is_train=is_train)
            return
        self._load(data_batch, "data", self.data_arrays, self.data_layouts)
        self.labels_fed = False
        if self.label_arrays:
            self.labels_fed = self._load(
                data_batch, "label", self.label_arrays, self._label_layouts_used
            )
        # held for backward's pass while forward_backward holds it (hold_forward)
        self._runner.run(lambda index, executor: executor.forward(is_train=is_train), hold=True)

    def hold_forward(self):
        """Run the next forward with backward, both in one pass per context (side by side only).

        Returns whether it holds; ``release_forward`` ends the hold and runs
        a forward still held (backward raised before it ran).
        """
        return self._single is None and self._runner.hold()

    def release_forward(self):
        """End ``hold_forward``; a forward still held runs now."""
        self._runner.release()

    def _load(self, data_batch, part, targets, axes):
        """Copy the batch's ``part`` into ``targets``; whether the batch had any to copy."""
        if isinstance(data_batch, list):  # already sliced: one DataBatch per context
            if not _part_of(data_batch[0], part):
                return False
            for index, batch in enumerate(data_batch):
                sources = _part_of(batch, part)
                if part == "label":
                    sources = self._kept_labels(sources)
                copy_batch_part(sources, [t[index][1] for t in targets])
            return True
        sources = _part_of(data_batch, part)
        if not sources:
            return False
        if part == "label":
            sources = self._kept_labels(sources)
        load_sliced(sources, targets, axes)
        return True

    def _kept_labels(self, labels):
        if len(self._label_keep) == len(labels):
            return labels
        return [labels[i] for i in self._label_keep if i < len(labels)]

    def _labels_for_metric(self, eval_metric, labels, index, pre_sliced):
        """Context ``index``'s labels for ``update_metric``: its slice, or those loaded."""
        if pre_sliced:
            return labels[index]
        if self._single is not None:
            if getattr(eval_metric, "reads_labels_on_device", False):
                # the labels this batch's forward put on a GPU, where they apply
                loaded, targets = self._loaded_labels, self._label_targets
                return as_loaded(labels, loaded, targets, self._label_keep)
            return labels
        return [
            slice_axis(label, axis, self.slices[index]) if axis >= 0 else label
            for label, axis in zip(labels, self._label_axes(labels), strict=True)
        ]

    def _label_axes(self, labels):
        axes = list(self.label_layouts)
        return axes + [0] * (len(labels) - len(axes))


def _part_of(batch, part):
    """The batch's ``data`` or ``label`` arrays (None for a batch without labels)."""
    return data_of(batch) if part == "data" else label_of(batch)
