"""Writing files so that a crash mid-write never destroys the previous version."""

import contextlib
import os
import secrets

__all__ = ["write_atomic"]


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` via a temporary file, fsync and rename.

    Readers see either the old file or the complete new one. A new file gets
    the usual permissions (0o666 less the umask, applied by the OS); an
    existing file keeps its own.
    """
    target = os.path.abspath(os.fspath(path))
    directory, base = os.path.split(target)
    fd, temp = _create_temp(directory, base, _existing_mode(target))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise
    _sync_directory(directory)


def _existing_mode(target):
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        return None


def _create_temp(directory, base, mode):
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(temp, flags, 0o666)
        except FileExistsError:
            continue
        if mode is not None:
            os.chmod(temp, mode)
        return fd, temp


def _sync_directory(directory):
    """Make the rename itself durable where the platform allows it."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
