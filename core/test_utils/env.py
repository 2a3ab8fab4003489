"""Test-run helpers: environment variables, stderr, retries, GPUs, and a constant iterator."""

import contextlib
import functools
import os
import platform
import sys

from .. import context, ndarray
from ..io import DataIter
from ..io.base import batch_size_of

__all__ = [
    "DummyIter",
    "discard_stderr",
    "environment",
    "has_tvm_ops",
    "is_aarch64_run",
    "is_cd_run",
    "is_op_runnable",
    "list_gpus",
    "retry",
]


def _set_environ(values):
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def environment(*args):
    """Set environment variables for a ``with`` block (or a decorated function), then restore.

    Call as ``environment(name, value)`` or ``environment({name: value, ...})``;
    a value of None unsets the variable. rebind reads its settings from
    ``os.environ``, so what is set here is what rebind sees.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        values = dict(args[0])
    elif len(args) == 2:
        values = {args[0]: args[1]}
    else:
        raise TypeError("environment: pass one dict, or a name and a value")
    snapshot = {name: os.environ.get(name) for name in values}
    _set_environ(values)
    try:
        yield
    finally:
        ndarray.waitall()
        _set_environ(snapshot)


@contextlib.contextmanager
def discard_stderr():
    """Send what the process writes to its stderr file descriptor to the null device."""
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr is no real file (a capture, say)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(stderr_fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), stderr_fd)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, stderr_fd)
        os.close(saved)


def retry(n):
    """Run a stochastic test up to ``n`` times; only the last AssertionError propagates."""
    if n <= 0:
        raise ValueError(f"retry: n must be positive, got {n}")

    def decorate(test):
        @functools.wraps(test)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return test(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise

        return wrapper

    return decorate


def list_gpus():
    """``range(number of GPUs)``: empty where there is none (or no CuPy)."""
    return range(context.num_gpus())


def is_cd_run():
    """Whether the tests run in MXNet's continuous-delivery job (``CD_JOB=1``)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """Whether the machine is an aarch64 one."""
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """Always False: rebind has no TVM-generated operators."""
    return False


def is_op_runnable():
    """Always True: rebind's operators need no particular GPU compute capability."""
    return True


class DummyIter(DataIter):
    """An endless iterator that yields the first batch of ``real_iter`` again and again.

    For timing a model without the cost of reading data, as in MXNet.
    """

    def __init__(self, real_iter):
        super().__init__(batch_size_of(real_iter))
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The first batch of the real iterator (never raises StopIteration)."""
        return self.the_batch
