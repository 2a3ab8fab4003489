"""The in-process key-value stores: ``local`` (sums on the CPU) and ``device`` (on the device).

Both keep every key in this process; they differ only in where the values
pushed for a key are summed and where the update runs. MXNet's other spellings
of the same two stores (``local_update_cpu``, ``local_allreduce_cpu``,
``local_allreduce_device``) are registered too and keep their name as ``type``.

As in MXNet, host values are kept on ``cpu_pinned(0)`` (plain host memory in
rebind), so the optimizer states of an updater on the store are saved with
MXNet's device type 3 and the ``.states`` files are MXNet's byte for byte.
"""

import functools

from rebind.context import cpu_pinned
from rebind.hookspecs import hookimpl
from rebind.kvstore import KVStore

__all__ = ["LocalKVStore", "DeviceKVStore"]


class LocalKVStore(KVStore):
    """Values are kept on ``cpu_pinned(0)``; pushed values are copied there and summed there.

    Pulls copy the result back to each output's context. The update (with an
    optimizer set) runs on the CPU.
    """

    def __init__(self, name="local"):
        super().__init__(name)

    def _home_context(self, value):
        return cpu_pinned(0)  # MXNet's CommCPU keeps its buffers on pinned host memory

    def _reduce_context(self, values):
        return cpu_pinned(0)


class DeviceKVStore(KVStore):
    """Pushed values are summed on the context of the first one, where the update runs too.

    Host values are kept and summed on ``cpu_pinned(0)``, where MXNet keeps
    its copy of a key; GPU values are summed on the first one's GPU and the
    stored value moves there on the first update, as in MXNet.
    """

    def __init__(self, name="device"):
        super().__init__(name)

    def _home_context(self, value):
        return _on_host_pinned(value.context)

    def _reduce_context(self, values):
        return _on_host_pinned(values[0].context)


def _on_host_pinned(ctx):
    """``ctx`` itself for a GPU, else ``cpu_pinned(0)`` (all host memory is one place)."""
    return ctx if ctx.device_type == "gpu" else cpu_pinned(0)


@hookimpl
def rebind_add_kvstores(registry):
    registry.add("local", LocalKVStore)
    registry.add("device", DeviceKVStore)
    for alias in ("local_update_cpu", "local_allreduce_cpu"):
        registry.add(alias, functools.partial(LocalKVStore, alias))
    alias = "local_allreduce_device"
    registry.add(alias, functools.partial(DeviceKVStore, alias))
