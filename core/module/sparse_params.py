"""row_sparse parameters of a ``Module``: pulling their rows from the kvstore, as MXNet 1.9.1.

When the optimizer runs on the kvstore, ``update`` pushes a row_sparse
parameter's gradient but does not pull the weight back (the store's ``pull``
skips row_sparse outputs): the devices get the rows the next batch needs in
``prepare(batch, sparse_row_id_fn)``, and the module's CPU copy gets every row
in ``_sync_params_from_devices`` (``get_params``).
"""

import warnings

import numpy as np

from .. import ndarray as nd
from ..context import cpu

__all__ = ["host_param", "pull_all_rows", "pull_batch_rows", "sparse_rows_on_store"]


def host_param(block, make_dense):
    """The module's CPU copy of a parameter whose device arrays are ``block``.

    Dense parameters get ``make_dense(block)``; sparse ones a zero array of
    their storage type (MXNet's ``zeros(shape, dtype, stype)``).
    """
    stype = getattr(block[0], "stype", "default")
    if stype == "default":
        return make_dense(block)
    return nd.zeros(block[0].shape, ctx=cpu(), dtype=block[0].dtype, stype=stype)


def stores_updates(module):
    """Whether ``module``'s optimizer runs on a kvstore that keeps the parameters."""
    return module._kvstore is not None and bool(module._update_on_kvstore)


def sparse_rows_on_store(module):
    """Whether some row_sparse parameter is updated on the kvstore (devices hold some rows)."""
    if not stores_updates(module) or not module._arg_params:
        return False
    return any(getattr(v, "stype", "default") != "default" for v in module._arg_params.values())


def pull_batch_rows(module, data_batch, sparse_row_id_fn):
    """``Module.prepare``'s sparse part: pull each parameter's rows ``sparse_row_id_fn`` names."""
    if sparse_row_id_fn is None:
        return
    if not stores_updates(module):
        warnings.warn(
            UserWarning(
                "Parameters are not updated in the KVStore. No need to call sparse_row_id_fn."
            ),
            stacklevel=3,
        )
        return
    row_ids = sparse_row_id_fn(data_batch)
    if not isinstance(row_ids, dict):
        raise TypeError(
            f"{type(module).__name__}.prepare: Expected dict output from sparse_row_id_fn "
            f"(parameter name -> NDArray of row ids), got {type(row_ids).__name__}"
        )
    group = module._exec_group
    for name, row_id in row_ids.items():
        if name not in group.param_names:
            raise ValueError(
                f"{type(module).__name__}.prepare: sparse_row_id_fn returned rows for "
                f"{name!r}, which is not a parameter (parameters: {group.param_names})"
            )
        index = group.param_names.index(name)
        arrays = group.param_arrays[index]
        if getattr(arrays[0], "stype", "default") != "row_sparse":
            warnings.warn(
                UserWarning(
                    f"{name}.stype is not 'row_sparse'. No need to perform row_sparse_pull."
                ),
                stacklevel=3,
            )
            continue
        module._kvstore.row_sparse_pull(name, arrays, row_ids=row_id, priority=-index)


def pull_all_rows(module):
    """Fill the CPU copies of row_sparse parameters with every row the kvstore holds."""
    if not stores_updates(module):
        return
    for name, value in sorted(module._arg_params.items()):
        if getattr(value, "stype", "default") == "row_sparse":
            rows = nd.array(np.arange(value.shape[0]), dtype="int64")
            module._kvstore.row_sparse_pull(name, value, row_ids=rows)
