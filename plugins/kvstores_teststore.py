"""``teststore``: MXNet's minimal store written against ``KVStoreBase`` alone.

MXNet 1.9 ships it (``mxnet.kvstore.base.TestStore``) to show and test the
interface third-party stores implement: ``broadcast`` copies, ``pushpull``
sums the values on the first value's context, and it cannot run an optimizer
(``is_capable('optimizer')`` is False), so a module updating through it keeps
the update on the devices. Keys are not stored: each call stands alone.
"""

from rebind.hookspecs import hookimpl
from rebind.kvstore import KVStoreBase
from rebind.ndarray import NDArray

__all__ = ["TestStore"]


def _as_list(arrays):
    return arrays if isinstance(arrays, list | tuple) else [arrays]


class TestStore(KVStoreBase):
    """A store of one worker that only copies (``broadcast``) and sums (``pushpull``)."""

    __test__ = False  # not a pytest test class, whatever its name

    def broadcast(self, key, value, out, priority=0):
        """Copy ``value`` into ``out`` (an NDArray or a list of them); ``key`` is not kept."""
        for target in _as_list(out):
            target[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        """Sum ``value`` (a list, one per device) into ``out``, or back into ``value``.

        A single NDArray is its own sum: it is copied to ``out`` if given.
        """
        if isinstance(value, NDArray):
            total, targets = value, [] if out is None else _as_list(out)
        else:
            ctx = value[0].context
            total = value[0].copyto(ctx)
            for array in value[1:]:
                total += array.as_in_context(ctx)
            targets = _as_list(value if out is None else out)
        for target in targets:
            target[:] = total

    @staticmethod
    def is_capable(capability):
        """``'optimizer'``: False (updates run on the devices); other names are unknown."""
        if isinstance(capability, str) and capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"kvstore 'teststore': unknown capability {capability!r}")

    @property
    def type(self):
        """``'teststore'``."""
        return "teststore"

    @property
    def rank(self):
        """Always 0: one worker."""
        return 0

    @property
    def num_workers(self):
        """Always 1."""
        return 1


@hookimpl
def rebind_add_kvstores(registry):
    registry.add("teststore", TestStore)
