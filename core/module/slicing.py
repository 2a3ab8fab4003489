"""Cutting a batch into per-context slices and joining per-context results back.

Helpers of ``DataParallelExecutorGroup``: how a batch is divided by
``work_load_list``, how each slice is copied into its executor's arrays, and
how outputs from several contexts are concatenated along the batch axis.
"""

from ..context import Context
from ..errors import ShapeError
from ..ndarray import NDArray, concatenate

__all__ = [
    "split_input_slice",
    "prepare_group2ctxs",
    "slice_axis",
    "copy_batch_part",
    "load_sliced",
    "merge_multi_context",
]


def split_input_slice(batch_size, work_load_list):
    """One ``slice`` of ``range(batch_size)`` per context, sized by relative workload.

    Each share is ``round(load * batch_size / total)``; the last context takes
    what rounding left over. A context that would get nothing is an error.
    """
    total = sum(work_load_list)
    counts = [round(load * batch_size / total) for load in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise ValueError(
                f"cannot split a batch of {batch_size} over {len(work_load_list)} contexts with "
                f"work_load_list={list(work_load_list)}: some slices would be empty; use a "
                "bigger batch or fewer contexts"
            )
        slices.append(slice(begin, end))
    return slices


def prepare_group2ctxs(group2ctxs, num_contexts):
    """``group2ctxs`` as one ``{ctx_group: context}`` dict (or None) per context."""
    if group2ctxs is None:
        return [None] * num_contexts
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != num_contexts:
            raise ValueError(
                f"group2ctxs has {len(group2ctxs)} entries for {num_contexts} "
                "contexts; give one dict per context"
            )
        return group2ctxs
    if not isinstance(group2ctxs, dict):
        raise TypeError(f"group2ctxs must be a dict or a list of dicts, got {group2ctxs!r}")
    prepared = [{} for _ in range(num_contexts)]
    for group, value in group2ctxs.items():
        if isinstance(value, Context):
            value = [value] * num_contexts
        elif len(value) == 1:
            value = list(value) * num_contexts
        elif len(value) != num_contexts:
            raise ValueError(
                f"group2ctxs[{group!r}] lists {len(value)} contexts; give one or "
                f"one per module context ({num_contexts})"
            )
        for index in range(num_contexts):
            prepared[index][group] = value[index]
    return prepared


def slice_axis(array, axis, part):
    """A view of ``array`` restricted to ``part`` (a slice) along ``axis``."""
    if axis == 0:
        return array[part.start : part.stop]
    key = (slice(None),) * axis + (part,)
    return NDArray(array.data[key], array.context)


def copy_batch_part(sources, targets):
    """Copy each source (NDArray or host array) into its bound target, shapes checked."""
    for source, target in zip(sources, targets, strict=False):
        if not isinstance(source, NDArray):
            target[:] = source
            continue
        if source.stype != "default" or target.stype != "default":
            _copy_sparse_part(source, target)  # parts copied, never the dense form
            continue
        if source._data.shape != target._data.shape:
            raise ShapeError(
                f"an input of shape {source.shape} was given for an array bound "
                f"with shape {target.shape}; reshape the module or fix the batch"
            )
        if source._ctx == target._ctx:
            target._data[...] = source._data
        else:
            source.copyto(target)


def _copy_sparse_part(source, target):
    """Copy a batch input into its bound array when either is sparse (csr data, say)."""
    if tuple(source.shape) != tuple(target.shape):
        raise ShapeError(
            f"an input of shape {source.shape} was given for an array bound "
            f"with shape {target.shape}; reshape the module or fix the batch"
        )
    source.copyto(target)


def load_sliced(sources, targets, axes):
    """Copy each context's slice of each source into that context's array.

    Args:
        sources: one NDArray per input (the whole batch).
        targets: per input, ``[(slice, array)]`` per context.
        axes: per input, the batch axis (-1: no batch axis, copied whole).
    """
    for source, per_context, axis in zip(sources, targets, axes, strict=False):
        for part, target in per_context:
            whole = axis < 0 or (part.start == 0 and part.stop == source.shape[axis])
            piece = source if whole else slice_axis(source, axis, part)
            copy_batch_part([piece], [target])


def merge_multi_context(outputs, axes):
    """Per output, its per-context arrays joined along the batch axis (one context: as is)."""
    merged = []
    for arrays, axis in zip(outputs, axes, strict=True):
        if axis < 0 or len(arrays) == 1:
            merged.append(arrays[0])
            continue
        home = arrays[0].context
        merged.append(concatenate([a.as_in_context(home) for a in arrays], axis=axis))
    return merged
