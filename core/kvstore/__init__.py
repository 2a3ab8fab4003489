"""``mx.kv`` (alias ``mx.kvstore``): key-value stores that sum and update parameters.

``base`` holds the ``KVStoreBase`` interface and ``register``; ``kvstore`` the
``KVStore`` in-process implementation and ``create``; ``keys`` checks and pairs
keys with values. The stores themselves (``local``, ``device``, ``dist_sync``,
``nccl``, ``teststore``, ...) are plugins.
"""

from .base import KVStoreBase, register
from .kvstore import KVStore, KVStoreError, create

__all__ = ["KVStore", "KVStoreBase", "KVStoreError", "create", "register"]
