"""A stand-in GPU with several streams, for the ordering of copies (no CuPy needed).

Each stream is a queue of operations that run only when something asks: an
event's ``synchronize``, or the test (``run``). ``wait_event`` queues a wait
that runs the other stream up to the event's record first, as the device
would order them. So the test picks the order the device runs things in, and
a missing wait shows as wrong values: a copy stream run eagerly overwrites a
spare still to be read; a compute stream run eagerly reads a spare still to
be written. Host waits (``Event.synchronize`` on unfinished work, synchronous
``set``) are counted.
"""

import contextlib
from types import SimpleNamespace

import numpy as np


class Stream:
    def __init__(self, device, name):
        self.device, self.name = device, name
        self.ops, self.done = [], 0

    def queue(self, op):
        self.ops.append(op)

    def run_until(self, position):
        while self.done < position:
            op = self.ops[self.done]
            self.done += 1  # a wait pulls another stream, never this one again
            op()

    def run_all(self):
        self.run_until(len(self.ops))

    def wait_event(self, event):
        stream, position = event.stream, event.position
        self.queue(lambda: stream.run_until(position))

    def synchronize(self):
        if self.done < len(self.ops):
            self.device.host_waits += 1
        self.run_all()

    def __enter__(self):
        self.device.stack.append(self)
        return self

    def __exit__(self, *exc):
        self.device.stack.pop()


class Event:
    def __init__(self, device):
        self.device, self.stream, self.position = device, None, 0

    def record(self, stream=None):
        self.stream = stream or self.device.current()
        self.position = len(self.stream.ops)

    @property
    def done(self):
        return self.stream is None or self.stream.done >= self.position

    def synchronize(self):
        if not self.done:
            self.device.host_waits += 1
            self.stream.run_until(self.position)


class Array:
    """A device array: its storage changes only when the device runs the queued copy."""

    def __init__(self, device, shape, dtype):
        self.device = device
        self.storage = np.full(shape, -1, dtype)
        self.shape, self.dtype = self.storage.shape, self.storage.dtype
        self.nbytes = self.storage.nbytes
        self.flags = SimpleNamespace(c_contiguous=True)

    def set(self, view, stream=None):
        assert view.shape == self.shape and view.dtype == self.dtype
        if stream is None:  # CuPy's synchronous copy from pageable memory
            self.device.host_waits += 1
            self.device.run_everything()
            self.storage[...] = view
            return
        stream.queue(lambda: self.storage.__setitem__(Ellipsis, view))  # reads the view then


class Device:
    def __init__(self):
        self.default = Stream(self, "default")
        self.streams = [self.default]
        self.stack = []
        self.host_waits = 0

    def current(self):
        return self.stack[-1] if self.stack else self.default

    def new_stream(self, **_):
        stream = Stream(self, f"stream{len(self.streams)}")
        self.streams.append(stream)
        return stream

    def run_everything(self):
        for stream in self.streams:
            stream.run_all()


class FakeCupy:
    """The part of CuPy's API the staging and copy-ahead code uses."""

    def __init__(self):
        self.device = device = Device()
        self.ndarray = Array
        self.events = []  # every event made

        def event(**_):
            self.events.append(Event(device))
            return self.events[-1]

        self.cuda = SimpleNamespace(
            alloc_pinned_memory=bytearray,
            Event=event,
            Stream=device.new_stream,
            get_current_stream=device.current,
            Device=lambda _index=0: contextlib.nullcontext(),
        )

    # what a kernel queued before an allocation writes into the memory it is given
    STALE = -7.0

    def empty(self, shape, dtype):
        """A new array; with ``recycled_memory``, memory a queued kernel still writes.

        CuPy's pool hands out at once memory that Python freed on the current
        stream while kernels queued there may still write it: safe for that
        stream's own work, which runs after them, not for another stream's.
        """
        array = Array(self.device, shape, dtype)
        if getattr(self, "recycled_memory", False):
            self.device.current().queue(lambda: array.storage.fill(self.STALE))
        return array

    def copyto(self, target, source):
        """A device-to-device copy on the current stream, reading ``source`` when it runs."""
        stream = self.device.current()
        stream.queue(lambda: target.storage.__setitem__(Ellipsis, source.storage.copy()))

    def read_later(self, array, log):
        """A kernel of the current stream that reads ``array`` (into ``log``) when it runs."""
        self.device.current().queue(lambda: log.append(array.storage.copy()))
