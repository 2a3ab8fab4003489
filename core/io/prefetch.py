"""PrefetchingIter: read the next batches of other iterators on background threads.

Each wrapped iterator gets one worker thread that calls its ``next()`` ahead
of the consumer and parks the results in a queue holding at most ``depth``
batches (1, as in MXNet). A reset stops the workers between two batches,
resets the wrapped iterators on the caller's thread and starts them again.
``close()`` (also run when the PrefetchingIter is garbage collected) stops the
threads for good; a consumer that stops reading early leaves at most ``depth``
batches read ahead and never blocks on a worker.
"""

import queue
import threading
import weakref

from ..context import Context, current_context
from .base import DataBatch, DataDesc, HeldBatchIter, as_desc, next_batch

__all__ = ["PrefetchingIter"]

# what a worker hands over: ("batch", DataBatch), ("end", None) or ("error", exception)
_BATCH, _END, _ERROR = "batch", "end", "error"


class _Worker:
    """One background thread reading one iterator, one epoch at a time."""

    def __init__(self, iterator, depth, ctx, name):
        self.iterator = iterator
        self.results = queue.Queue()
        self.slots = threading.Semaphore(depth)  # bounds the batches read ahead
        self.go = threading.Event()  # start an epoch (or exit, when closing)
        self.idle = threading.Event()  # set while no epoch is being read
        self.halt = threading.Event()  # asks the running epoch to stop
        self.closing = False
        self.finished = None  # the end-or-error item once the consumer took it
        # a Context of its own: ``with ctx`` keeps per-object state the threads must not share
        self.ctx = Context(ctx)
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.start_epoch()
        self.thread.start()

    # -- worker thread ------------------------------------------------------------
    def _run(self):
        # arrays the wrapped iterator creates land where the consumer's would
        with self.ctx:
            while True:
                self.go.wait()
                self.go.clear()
                if self.closing:
                    return
                self._read_epoch()
                self.idle.set()

    def _read_epoch(self):
        while True:
            self.slots.acquire()
            if self.halt.is_set():
                self.slots.release()
                return
            item = self._read_one()
            self.results.put(item)
            if item[0] != _BATCH:
                return

    def _read_one(self):
        try:
            return (_BATCH, next_batch(self.iterator))
        except StopIteration:
            return (_END, None)
        except Exception as exc:  # handed to the consumer, raised there
            return (_ERROR, exc)

    # -- consumer side ------------------------------------------------------------
    def take(self):
        """The next item; after the end of an epoch, that end again until a restart."""
        if self.finished is not None:
            return self.finished
        item = self.results.get()
        self.slots.release()
        if item[0] != _BATCH:
            self.finished = item
        return item

    def stop_epoch(self):
        """Stop reading ahead and drop what was read; returns when the thread is idle."""
        self.halt.set()
        while not self.idle.wait(timeout=0.01):
            self._drain()
        self._drain()
        self.halt.clear()

    def _drain(self):
        while True:
            try:
                self.results.get_nowait()
            except queue.Empty:
                return
            self.slots.release()

    def start_epoch(self):
        self.finished = None
        self.idle.clear()
        self.go.set()

    def close(self):
        if not self.thread.is_alive():
            return
        self.stop_epoch()
        self.closing = True
        self.go.set()
        self.thread.join()


def _shut_down(workers):
    for worker in workers:
        worker.close()


class PrefetchingIter(HeldBatchIter):
    """Wrap one or several iterators; each is read ahead on its own thread.

    The batches of several iterators are joined: data and labels in the order
    of ``iters``. They must yield the same number of batches with the same
    ``pad``. ``rename_data`` / ``rename_label`` give one dict per iterator
    mapping its input names to new ones; names a dict leaves out are kept
    (MXNet raises KeyError for them). ``depth`` is how many batches each
    worker may read ahead (rebind's addition; 1 is MXNet's behaviour).

    Call ``close()`` (or use ``with``) to stop the threads at once; otherwise
    they stop when the PrefetchingIter is garbage collected.
    """

    def __init__(self, iters, rename_data=None, rename_label=None, depth=1):
        super().__init__()
        if not isinstance(iters, (list, tuple)):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter needs at least one iterator")
        if depth < 1:
            raise ValueError(f"PrefetchingIter: depth must be >= 1, got {depth}")
        self.iters = list(iters)
        self.n_iter = len(self.iters)
        self.rename_data = _check_renames("rename_data", rename_data, self.n_iter)
        self.rename_label = _check_renames("rename_label", rename_label, self.n_iter)
        self.batch_size = as_desc(self.provide_data[0]).shape[0]
        self.current_batch = None
        ctx = current_context()
        self._workers = [
            _Worker(it, depth, ctx, f"rebind-prefetch-{i}") for i, it in enumerate(self.iters)
        ]
        # the threads hold only the workers, so this object can be collected
        self._finalizer = weakref.finalize(self, _shut_down, self._workers)

    @property
    def provide_data(self):
        return _renamed([it.provide_data for it in self.iters], self.rename_data)

    @property
    def provide_label(self):
        labels = [getattr(it, "provide_label", None) or [] for it in self.iters]
        return _renamed(labels, self.rename_label)

    def close(self):
        """Stop the background threads; the iterator cannot be used afterwards."""
        self._finalizer()

    def __del__(self):
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _check_open(self):
        if not self._finalizer.alive:
            raise RuntimeError("PrefetchingIter was closed; create a new one")

    def reset(self):
        self._check_open()
        for worker in self._workers:
            worker.stop_epoch()
        for iterator in self.iters:
            iterator.reset()
        for worker in self._workers:
            worker.start_epoch()

    def iter_next(self):
        self._check_open()
        items = [worker.take() for worker in self._workers]
        for kind, payload in items:
            if kind == _ERROR:
                raise payload
        ended = [kind == _END for kind, _ in items]
        if all(ended):
            return False
        if any(ended):
            raise ValueError(
                "PrefetchingIter: the wrapped iterators yield different numbers of batches "
                f"(ended: {ended})"
            )
        self.current_batch = self._join([batch for _, batch in items])
        return True

    def _join(self, batches):
        pads = [getattr(batch, "pad", 0) for batch in batches]
        if len(set(pads)) > 1:
            raise ValueError(f"PrefetchingIter: the wrapped batches have different pads {pads}")
        first = batches[0]
        return DataBatch(
            data=[array for batch in batches for array in batch.data],
            label=[array for batch in batches for array in (getattr(batch, "label", None) or [])],
            pad=pads[0],
            index=getattr(first, "index", None),
            bucket_key=getattr(first, "bucket_key", None),
            provide_data=self._batch_descs(batches, "provide_data", self.rename_data),
            provide_label=self._batch_descs(batches, "provide_label", self.rename_label),
        )

    def _batch_descs(self, batches, what, renames):
        """The batches' own descriptions where all have them, else the iterator's."""
        own = [getattr(batch, what, None) for batch in batches]
        if all(descs is not None for descs in own):
            return _renamed(own, renames)
        return getattr(self, what)


def _check_renames(what, renames, count):
    if renames is None:
        return None
    if isinstance(renames, dict):
        renames = [renames]
    if len(renames) != count:
        raise ValueError(
            f"PrefetchingIter: {what} needs one dict per iterator ({count}), got {len(renames)}"
        )
    return list(renames)


def _renamed(desc_lists, renames):
    if renames is None:
        return [as_desc(desc) for descs in desc_lists for desc in descs]
    joined = []
    for descs, mapping in zip(desc_lists, renames, strict=True):
        for desc in descs:
            desc = as_desc(desc)
            name = mapping.get(desc.name, desc.name)
            joined.append(DataDesc(name, desc.shape, desc.dtype, desc.layout))
    return joined
