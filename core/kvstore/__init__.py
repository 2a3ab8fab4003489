"""``mx.kv`` (alias ``mx.kvstore``): key-value stores that sum and update parameters.

``kvstore`` holds the ``KVStore`` base class with ``create`` and ``register``;
``keys`` checks and pairs keys with values. The stores themselves (``local``,
``device``, ``dist_sync``, ``nccl``, ...) are plugins.
"""

from .kvstore import KVStore, KVStoreBase, KVStoreError, create, register

__all__ = ["KVStore", "KVStoreBase", "KVStoreError", "create", "register"]
