"""Sums and copies of a store's values between host contexts: in place, side by side.

All host contexts (``cpu(0)``, ``cpu(1)``, ``cpu_pinned(0)``) are one memory,
so the values pushed from several cpu contexts are summed where they are
(``NDArray.copyto`` between two of them copies twice), and a big push or pull
(a training step's every gradient and weight) is split between threads
(``side_by_side``): the sums by key, the copies by the context they fill, so
each thread writes arrays no other thread touches and the values are those
of doing the work in turn. ``REBIND_CONTEXT_THREADS=0``, or a thread policy
at one thread (a busy machine), keeps it in the calling thread.
"""

from .. import side_by_side, threadpool
from ..ndarray import NDArray

__all__ = ["copy_all", "merge_all", "on_host", "sum_on_host"]

# below this many bytes a push or pull stays in the calling thread: handing work
# to a thread costs tens of microseconds, about what copying 1 MiB takes
SPLIT_BYTES = 1 << 20


def on_host(array, ctx):
    """Whether the dense ``array`` and the host context ``ctx`` share memory."""
    return (
        ctx.device_type != "gpu"
        and array.context.device_type != "gpu"
        and getattr(array, "stype", "default") == "default"
        and ctx.backend.owns(array._data)
    )


def copy_into(source, target):
    """``source.copyto(target)``, in one copy between host contexts, none into the same memory."""
    if target._data is source._data:  # a pull into arrays holding the stored value itself
        target._version += 1  # (KVStore._share_stored): written, as copyto counts it
        return
    if (
        target.shape == source.shape
        and target.stype == "default"
        and on_host(source, target.context)
    ):
        target._data[...] = source._data
        target._version += 1  # NDArray's write count, as copyto moves it
        return
    source.copyto(target)


def copy_all(copies):
    """Every ``(source, target)`` copy; a big set split by target context between threads."""
    by_context = {}
    for source, target in copies:
        by_context.setdefault(target.context, []).append((source, target))
    if len(by_context) > 1 and _worth_splitting(t for _, t in copies):
        side_by_side.run([_copier(part) for part in by_context.values()])
        return
    for source, target in copies:
        copy_into(source, target)


def _copier(copies):
    def copy_part():
        for source, target in copies:
            copy_into(source, target)

    return copy_part


def sum_on_host(arrays, ctx, out=None):
    """The sum of host ``arrays`` in the order given, into ``out`` (a NumPy array) or a new one."""
    xp = ctx.backend.xp
    total = xp.add(arrays[0]._data, arrays[1]._data, out=out)
    for array in arrays[2:]:
        total += array._data
    return NDArray(total, ctx)


def merge_all(merge, groups):
    """``[(key, merge(arrays, key))]`` for ``groups``; many host sums in two threads."""
    summed = [arrays for _, arrays in groups if len(arrays) > 1]
    if len(summed) < 2 or not _worth_splitting(a for arrays in summed for a in arrays):
        return [(name, merge(arrays, name)) for name, arrays in groups]
    halves = _halves(groups)
    parts = side_by_side.run([_merger(merge, half) for half in halves])
    return [pair for part in parts for pair in part]


def _merger(merge, groups):
    return lambda: [(name, merge(arrays, name)) for name, arrays in groups]


def _halves(groups):
    """``groups`` cut in two consecutive parts of about equal bytes (order kept)."""
    sizes = [sum(_nbytes(a) for a in arrays) for _, arrays in groups]
    total, running = sum(sizes), 0
    for cut, size in enumerate(sizes):
        if running + size / 2 >= total / 2 and cut > 0:
            return [groups[:cut], groups[cut:]]
        running += size
    return [groups[:-1], groups[-1:]]


def _worth_splitting(arrays):
    """Whether work over ``arrays`` (host, dense) is big enough for threads, and has the CPUs.

    With the thread policy at one thread (other processes keep the other cores
    busy) the two threads would only take turns, each handover costing CPU and
    a wait for the scheduler: the calling thread does it all.
    """
    if not side_by_side.enabled() or threadpool.compute_threads() < 2:
        return False
    arrays = list(arrays)
    if not all(on_host(a, a.context) for a in arrays):
        return False
    return sum(_nbytes(a) for a in arrays) >= SPLIT_BYTES


def _nbytes(array):
    return array._data.nbytes
