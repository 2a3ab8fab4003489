"""Host -> device copies made ahead of their use, on a stream of their own.

``fit`` has the next batch in hand while the device still runs this batch's
forward, backward and update. Its copy cannot go into the executor's input
array yet (this batch's backward still reads it), and queued on the stream
that runs the kernels it would wait behind them. So the copy goes, through
the pinned ring (``cupy_staging``), into a spare device array on a
non-blocking copy stream, and its end is marked by the spare's ``ready``
event. When the batch's forward comes, ``finish`` makes the current stream
wait for that event and copies device to device into the input (at the
device's memory bandwidth, far faster than the transfer), then marks the
spare's ``consumed`` event. The next
copy into that spare waits, on the copy stream, for ``consumed``; a new spare's
``consumed`` is recorded where it is allocated, since CuPy's pool may give it
memory that kernels queued on the compute stream still write (the likely cause
of a GPU fit through copies ahead that once, in three runs on an H200, trained
differently from one without).

Nothing here waits on the host, except the pinned ring when it must reuse
a region whose copy has not run. One spare per (shape, dtype) is enough in
fit, which starts one batch ahead; more are made while all are taken.

Importing this module does not import CuPy.
"""

from .cupy_staging import MAX_STAGED_BYTES

__all__ = ["CopyAhead"]


class _Spare:
    __slots__ = ("array", "ready", "consumed", "taken")

    def __init__(self, cupy, shape, dtype):
        self.array = cupy.empty(shape, dtype=dtype)
        self.ready = _event(cupy)
        # CuPy's pool hands out memory freed on the current stream at once, while kernels
        # queued there may still write it (a temporary of the step now running): the first
        # copy into the spare, on the copy stream, waits for them as later copies wait for
        # the copy out of it
        self.consumed = _event(cupy)
        self.consumed.record(cupy.cuda.get_current_stream())
        self.taken = False


class Ticket:
    """One started copy: ``finish()`` delivers it to its target, ``drop()`` forgets it."""

    __slots__ = ("_cupy", "_device_id", "_spare", "_target")

    def __init__(self, cupy, device_id, spare, target):
        self._cupy, self._device_id, self._spare, self._target = cupy, device_id, spare, target

    def finish(self):
        """Write the values into the target after the work queued on the current stream."""
        spare, cupy = self._spare, self._cupy
        if spare is None:
            raise RuntimeError("copy_ahead: this copy was already finished or dropped")
        self._spare = None
        with cupy.cuda.Device(self._device_id):
            stream = cupy.cuda.get_current_stream()
            stream.wait_event(spare.ready)
            cupy.copyto(self._target, spare.array)
            spare.consumed.record(stream)
        spare.taken = False

    def drop(self):
        """Give the spare back (once); a later copy into it queues behind this one."""
        if self._spare is not None:
            self._spare.taken = False
            self._spare = None


class CopyAhead:
    """One device's copy stream and spare arrays; ``ring`` is its pinned ring."""

    def __init__(self, ring):
        self._ring = ring
        self._stream = None
        self._spares = {}  # (shape, dtype) -> [_Spare]

    def start(self, cupy, device_id, target, host):
        """A ticket for copying ``host`` (NumPy, ``target``'s shape and dtype) into ``target``.

        Called with ``target``'s device current (``device_id``). None where the
        copy is not staged (over ``MAX_STAGED_BYTES``) or is empty.
        """
        if not 0 < host.nbytes <= MAX_STAGED_BYTES:
            return None
        if self._stream is None:
            self._stream = cupy.cuda.Stream(non_blocking=True)
        spare = self._spare(cupy, target.shape, target.dtype)
        with self._stream:
            self._stream.wait_event(spare.consumed)
            self._ring.copy(cupy, spare.array, host)
            spare.ready.record(self._stream)
        spare.taken = True
        return Ticket(cupy, device_id, spare, target)

    def release(self):
        """Let go of the spares not taken (``free_cached_memory``), once their copies ran."""
        if self._stream is not None:
            self._stream.synchronize()  # copies into a spare; copies out of it are on its stream
        for key, spares in list(self._spares.items()):
            kept = [spare for spare in spares if spare.taken]
            if kept:
                self._spares[key] = kept
            else:
                del self._spares[key]

    def _spare(self, cupy, shape, dtype):
        spares = self._spares.setdefault((tuple(shape), dtype), [])
        for spare in spares:
            if not spare.taken:
                return spare
        spares.append(_Spare(cupy, shape, dtype))
        return spares[-1]


def _event(cupy):
    return cupy.cuda.Event(block=False, disable_timing=True)
