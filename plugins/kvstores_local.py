"""The in-process key-value stores: ``local`` (sums on the CPU) and ``device`` (on the device).

Both keep every key in this process; they differ only in where the values
pushed for a key are summed and where the update runs. MXNet's other spellings
of the same two stores (``local_update_cpu``, ``local_allreduce_cpu``,
``local_allreduce_device``) are registered too and keep their name as ``type``.
"""

import functools

from rebind.context import cpu
from rebind.hookspecs import hookimpl
from rebind.kvstore import KVStore

__all__ = ["LocalKVStore", "DeviceKVStore"]


class LocalKVStore(KVStore):
    """Values are kept on ``cpu(0)``; pushed values are copied there and summed there.

    Pulls copy the result back to each output's context. The update (with an
    optimizer set) runs on the CPU.
    """

    def __init__(self, name="local"):
        super().__init__(name)

    def _home_context(self, value):
        return cpu(0)

    def _reduce_context(self, values):
        return cpu(0)


class DeviceKVStore(KVStore):
    """Pushed values are summed on the context of the first one, where the update runs too.

    ``init`` keeps its copy on the initial value's context; the stored value
    moves to where the sums are made on the first update, as in MXNet.
    """

    def __init__(self, name="device"):
        super().__init__(name)

    def _home_context(self, value):
        return value.context

    def _reduce_context(self, values):
        return values[0].context


@hookimpl
def rebind_add_kvstores(registry):
    registry.add("local", LocalKVStore)
    registry.add("device", DeviceKVStore)
    for alias in ("local_update_cpu", "local_allreduce_cpu"):
        registry.add(alias, functools.partial(LocalKVStore, alias))
    alias = "local_allreduce_device"
    registry.add(alias, functools.partial(DeviceKVStore, alias))
