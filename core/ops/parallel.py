"""Memory-bound NumPy passes of the CNN kernels split over the CPUs rebind may use.

A training step of a convolutional network spends about half its CPU time
outside the matrix products, which OpenBLAS already runs on every core: in
im2col/col2im copies, padding, BatchNorm's passes and pooling, each a NumPy
copy, ufunc or reduction that runs on one core. NumPy releases the GIL in
all of them, so the same call over disjoint slices (channels, usually) on a
few threads runs that many times faster, with the same values: each element
is computed by the same operation as before.

``split`` runs ``task(start, stop)`` over ``range(total)`` cut in contiguous
parts, one per thread (``rebind.threadpool.compute_threads()``), the first
part on the calling thread; small work runs whole on the calling thread.
For NumPy arrays only: callers check ``xp is numpy`` (CuPy runs its own
kernels). The workers are the threads of one pool, made at the first split
and grown when the count rises; they sleep on a queue between calls (no
spinning), so a busy machine loses nothing to them, and
``compute_threads()`` counts 1 there anyway.
"""

import concurrent.futures
import os
import threading

import numpy

from rebind.threadpool import compute_threads

__all__ = ["copy", "parts", "release", "split"]

# below this many elements a pass runs on the calling thread. Handing a part to a
# worker costs some 20-50 us, but in a training step the worker also waits for the
# CPU that OpenBLAS's threads keep spinning on after each product: LeNet's passes
# (up to 2M elements at batch 64) ran 8% slower split, ResNet's (3-30M) faster
MIN_ELEMENTS = 1 << 20

_lock = threading.Lock()
_pool = {}  # "executor": ThreadPoolExecutor, "size": its max_workers, "pid": its process


def _executor(workers):
    with _lock:
        executor = _pool.get("executor")
        # a forked child inherits the pool but not its threads: it makes its own
        if executor is None or _pool["size"] < workers or _pool["pid"] != os.getpid():
            if executor is not None and _pool["pid"] == os.getpid():
                executor.shutdown(wait=False)
            executor = concurrent.futures.ThreadPoolExecutor(workers, "rebind-split")
            _pool.update(executor=executor, size=workers, pid=os.getpid())
        return executor


def release():
    """Let the pool's threads end once idle; the next split makes a new pool."""
    with _lock:
        executor = _pool.pop("executor", None)
        if executor is not None and _pool.get("pid") == os.getpid():
            executor.shutdown(wait=False)


def parts(total, elements):
    """How many parts to cut ``total`` items of ``elements`` elements in all into (>= 1)."""
    if total < 2 or elements < 2 * MIN_ELEMENTS:
        return 1
    return max(1, min(compute_threads(), total, elements // MIN_ELEMENTS))


def split(task, total, elements):
    """Call ``task(start, stop)`` over ``range(total)`` in contiguous parts, in parallel.

    ``elements`` is the work's size (elements touched), which decides whether
    splitting pays. Returns the tasks' results in order of ``start``.
    """
    count = parts(total, elements)
    if count == 1:
        return [task(0, total)]
    bounds = [total * i // count for i in range(count + 1)]
    executor = _executor(count - 1)
    futures = [executor.submit(task, bounds[i], bounds[i + 1]) for i in range(1, count)]
    first = task(bounds[0], bounds[1])
    return [first, *(future.result() for future in futures)]


def copy(source, axis=0):
    """A copy of a NumPy array in its memory order (``order="K"``), parts along ``axis``."""
    out = numpy.empty_like(source)
    before = (slice(None),) * axis

    def part(start, stop):
        select = (*before, slice(start, stop))
        out[select] = source[select]

    split(part, source.shape[axis], 2 * source.size)
    return out
