"""Test-run helpers: environment variables, stderr silencing, retries, GPUs, DummyIter."""

import functools
import os
import platform
import sys
from contextlib import contextmanager

from .. import context as mx_context
from .. import ndarray as nd
from ..io import DataIter


@contextmanager
def environment(*args):
    """Set environment variables for a ``with`` block or a decorated function, then restore.

    Call as ``environment(name, value)`` or ``environment({name: value, ...})``; a value of
    None unsets the variable.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        env_vars = args[0]
    else:
        assert len(args) == 2, "Expecting one dict arg or two args: env var name and value"
        env_vars = {args[0]: args[1]}
    snapshot = {name: os.environ.get(name) for name in env_vars}
    _set_environ(env_vars)
    try:
        yield
    finally:
        nd.waitall()
        _set_environ(snapshot)


def _set_environ(env_vars):
    for name, value in env_vars.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def set_env_var(key, val, default_val=""):
    """Set ``os.environ[key] = val`` and return the previous value (``default_val`` if unset)."""
    prev_val = os.environ.get(key, default_val)
    os.environ[key] = val
    return prev_val


@contextmanager
def discard_stderr():
    """Send file descriptor 2 (C and Python stderr) to /dev/null inside the block."""
    with open(os.devnull, "w") as bit_bucket:
        try:
            stderr_fileno = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            # stderr replaced by an object without a descriptor (e.g. captured)
            yield
            return
        sys.stderr.flush()
        old_stderr = os.dup(stderr_fileno)
        try:
            os.dup2(bit_bucket.fileno(), stderr_fileno)
            yield
        finally:
            os.dup2(old_stderr, stderr_fileno)
            os.close(old_stderr)


def retry(n):
    """Decorator: rerun a stochastic test up to ``n`` times while it raises AssertionError."""
    assert n > 0

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    nd.waitall()
        return wrapper
    return decorate


def list_gpus():
    """``range`` over the GPU ids rebind can use (empty without CuPy and a device)."""
    return range(mx_context.num_gpus())


def is_cd_run():
    """True when the ``CD_JOB`` environment variable is "1" (a release build)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """True on an aarch64 machine."""
    return platform.machine() == "aarch64"


class DummyIter(DataIter):
    """An endless iterator that yields the first batch of ``real_iter`` again and again."""

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The same batch every time."""
        return self.the_batch

    __next__ = next
