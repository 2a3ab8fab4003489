"""Plans of oneDNN primitives kept per calling thread, and channels-last arrays (issue 31).

A plan holds the primitives one operator built for one shape (``conv_dnnl``,
``pooling_dnnl``, ``norm_dnnl``), its memory objects and the handles it must
release; ``plan`` keeps the most recent ones per thread and kind. Activations
between oneDNN's layers are channels-last arrays shown with MXNet's
(N, C, *spatial) shape (``channels_last``).
"""

import collections

import numpy

from ..threadpool import engine_share

__all__ = [
    "MEMORY_BOUND_THREADS",
    "Plan",
    "as_channels_last",
    "channels_last",
    "channels_last_strides",
    "empty",
    "is_channels_last",
    "plan",
]


class Plan:
    """Primitives built for one shape in one thread: the handles it owns and its memory objects."""

    def __init__(self, lib):
        self.lib = lib
        self.handles = []  # (kind, handle) to release, in reverse order of creation
        self.memories = {}

    def keep(self, kind, handle):
        """Own ``handle`` (kind as for ``Library.destroy``); returns it."""
        self.handles.append((kind, handle))
        return handle

    def make(self, name, *args):
        """A primitive descriptor from constructor ``name``, owned."""
        return self.keep("primitive_desc", self.lib.make(name, *args))

    def primitive(self, pd):
        return self.keep("primitive", self.lib.primitive(pd))

    def strided(self, shape, strides):
        return self.keep("memory_desc", self.lib.strided_md(shape, strides))

    def memory(self, slot, md, array):
        """The plan's memory object for ``slot`` (descriptor ``md``) pointed at ``array``."""
        memory = self.memories.get(slot)
        if memory is None:
            memory = self.memories[slot] = self.keep("memory", self.lib.memory(md, array))
        else:
            self.lib.point(memory, array)
        return memory

    def close(self):
        for kind, handle in reversed(self.handles):
            self.lib.destroy(kind, handle)
        self.handles, self.memories = [], {}


def plan(lib, kind, key, build, limit, threads=None):
    """The calling thread's plan of ``kind`` for ``key`` (``build(lib, key)`` makes one).

    The ``limit`` most recently used plans of a kind are kept; an older one is
    released. Also sizes the thread's OpenMP team: ``threads``, else the engine count
    divided among the cpu contexts running side by side.
    """
    # oneDNN fixes a primitive's thread count when it is built: the count is in the key
    threads = threads or engine_share()
    lib.set_threads(threads)
    plans = lib.thread_cache().setdefault(kind, collections.OrderedDict())
    key = (key, threads)
    found = plans.get(key)
    if found is None:
        found = plans[key] = build(lib, key[0])
        while len(plans) > limit:
            plans.popitem(last=False)[1].close()
    else:
        plans.move_to_end(key)
    return found


def channels_last_strides(shape):
    """Element strides of (N, C, *spatial) ``shape`` laid out as (N, *spatial, C)."""
    strides = [0] * len(shape)
    strides[1], step = 1, shape[1]
    for axis in range(len(shape) - 1, 1, -1):
        strides[axis], step = step, step * shape[axis]
    strides[0] = step
    return strides


def channels_last(shape):
    """A new float32 array of (N, C, *spatial) ``shape``, channels-last in memory."""
    memory = numpy.empty((shape[0], *shape[2:], shape[1]), numpy.float32)
    return numpy.moveaxis(memory, -1, 1)


def is_channels_last(array):
    """Whether float32 ``array`` lies channels-last (strides of axes longer than 1 checked)."""
    if array.dtype != numpy.float32 or array.ndim < 3:
        return False
    expected = channels_last_strides(array.shape)
    return all(
        n == 1 or got == 4 * want
        for n, got, want in zip(array.shape, array.strides, expected, strict=True)
    )


def as_channels_last(array):
    """``array`` itself when it is channels-last float32, else such a copy of it."""
    if is_channels_last(array):
        return array
    moved = channels_last(array.shape)
    moved[...] = array  # also casts: the kernels read float32
    return moved


# The thread count of memory-bound primitives (BatchNorm, pooling): a pass over memory
# gains little from a second thread, and oneDNN's threads wait for each other at spinning
# barriers: on a busy machine, where one is descheduled, two took 2.5x the CPU of one
# (ResNet-18's BatchNorms: 96 -> 258 ms per step).
MEMORY_BOUND_THREADS = 1


def empty(nbytes):
    """A float32 buffer of at least ``nbytes`` bytes."""
    return numpy.empty(-(-nbytes // 4), numpy.float32)
