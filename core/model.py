"""``mx.model``: checkpoints in MXNet's formats, ``BatchEndParam``, and the kvstore plumbing.

A checkpoint is MXNet's pair of files: ``prefix-symbol.json`` (the network)
and ``prefix-%04d.params`` (every parameter as ``arg:<name>`` and every
auxiliary state as ``aux:<name>``, MXNet's NDArray list format). Both are
written atomically: a crash mid-save leaves the previous file intact.

The ``_create_kvstore`` / ``_initialize_kvstore`` / ``_update_params*``
helpers are what ``Module`` uses to sum gradients over devices and apply the
optimizer, decided the way MXNet 1.9 decides: one device on one machine needs
no store; otherwise a store is made and, unless told otherwise, the update
runs on the store.
"""

import logging
import math
import os
from collections import namedtuple

from . import kvstore as kvs
from . import ndarray as nd
from . import symbol as sym
from .context import cpu
from .errors import FormatError

__all__ = [
    "BASE_ESTIMATOR",
    "BatchEndParam",
    "DataParallelExecutorManager",
    "load_checkpoint",
    "load_params",
    "save_checkpoint",
]

BASE_ESTIMATOR = object  # MXNet's base class of FeedForward

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
BatchEndParam.__doc__ = """What a batch-end (or eval-end) callback receives.

Attributes:
    epoch: the epoch index.
    nbatch: the batch index within the epoch (for an eval-end callback: the
        number of batches evaluated).
    eval_metric: the metric updated so far.
    locals: the calling function's local variables (``locals['self']`` is the module).
"""

# MXNet keeps the update off the 'local' store when a parameter is this big
_LOCAL_UPDATE_LIMIT = 1024 * 1024 * 16


# ---------------------------------------------------------------- checkpoints


def _params_dict(arg_params, aux_params):
    saved = {f"arg:{name}": value.as_in_context(cpu()) for name, value in arg_params.items()}
    saved.update({f"aux:{name}": value.as_in_context(cpu()) for name, value in aux_params.items()})
    return saved


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (when ``symbol`` is given) and ``prefix-%04d.params``.

    Args:
        prefix: the path prefix of the files.
        epoch: the number in the parameter file's name.
        symbol: the network, or None to write only the parameters.
        arg_params, aux_params: name -> NDArray; saved as ``arg:``/``aux:`` entries.
        remove_amp_cast: passed to ``Symbol.save`` (leave out amp_cast/amp_multicast nodes).
    """
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
    param_name = f"{prefix}-{int(epoch):04d}.params"
    nd.save(param_name, _params_dict(arg_params, aux_params))
    logging.info('Saved checkpoint to "%s"', param_name)


def split_params(saved, source):
    """``(arg_params, aux_params)`` from a dict of ``arg:``/``aux:`` entries."""
    arg_params, aux_params = {}, {}
    for key, value in saved.items():
        kind, _, name = key.partition(":")
        if kind == "arg" and name:
            arg_params[name] = value
        elif kind == "aux" and name:
            aux_params[name] = value
        else:
            raise FormatError(
                f"{source}: entry {key!r} is neither 'arg:<name>' nor 'aux:<name>'; "
                "this is not a parameter file written by save_checkpoint/save_params"
            )
    return arg_params, aux_params


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` from ``prefix-%04d.params``."""
    fname = f"{prefix}-{int(epoch):04d}.params"
    saved = nd.load(fname)
    if not saved:
        logging.warning("Params file '%s' is empty", fname)
        return {}, {}
    if not isinstance(saved, dict):
        raise FormatError(f"{fname}: holds an unnamed list of arrays, not arg:/aux: entries")
    return split_params(saved, fname)


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` from a checkpoint written by MXNet or rebind.

    Arrays land on ``cpu(0)``; ``Module.set_params`` (or ``Module.load``)
    copies them to the module's contexts.
    """
    symbol = sym.load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


# ---------------------------------------------------------------- kvstore plumbing


def _create_kvstore(kvstore, num_device, arg_params):
    """``(store or None, update_on_kvstore)`` for ``num_device`` devices, as MXNet decides.

    A store name with one device and no ``dist`` in it needs no store, except
    ``nccl``, which in rebind sums over processes too. The update runs on the
    store unless ``MXNET_UPDATE_ON_KVSTORE=0``, or the store is ``'local'``
    and some parameter has more than 16M elements.
    """
    update_on_kvstore = bool(int(os.environ.get("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        store = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        store = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore and kvstore.lower() != "nccl":
            store = None
        else:
            store = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                largest = max(math.prod(value.shape) for value in arg_params.values())
                if largest > _LOCAL_UPDATE_LIMIT:
                    update_on_kvstore = False
    else:
        raise TypeError(
            f"kvstore must be a KVStore, a store name such as 'local' or None; got {kvstore!r}"
        )
    if store is None:
        return None, False
    return store, update_on_kvstore and store.is_capable(kvs.KVStoreBase.OPTIMIZER)


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Put every parameter into the store; pull it to every device where the store decides.

    The store's value is pulled when the update runs on the store and, in
    rebind, whenever there are several workers: a distributed store keeps
    rank 0's parameters, and every worker must start from them.

    A store with only MXNet's ``KVStoreBase`` interface (no ``init``) has
    ``broadcast`` rank 0's parameters to the devices instead; MXNet calls
    ``init`` on it and fails.
    """
    if not isinstance(kvstore, kvs.KVStore):
        for index, name in enumerate(param_names):
            kvstore.broadcast(name, arg_params[name], out=param_arrays[index], priority=-index)
        return
    pull = update_on_kvstore or kvstore.num_workers > 1
    for index, name in enumerate(param_names):
        kvstore.init(name, arg_params[name])
        # row_sparse parameters reach the devices through prepare's row_sparse_pull
        if pull and getattr(arg_params[name], "stype", "default") == "default":
            kvstore.pull(name, param_arrays[index], priority=-index)


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push each gradient (summed over devices) and pull the updated weight back.

    rebind's own stores take every key in one ``pushpull`` (one optimizer call
    for all parameters, as on one device); another ``KVStoreBase`` gets one
    call per key, as MXNet makes them.
    """
    entries = [
        (index, grads, weights)
        for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays, strict=True))
        if grads[0] is not None
    ]
    sparse = [entry for entry in entries if _is_sparse(entry[1][0]) or _is_sparse(entry[2][0])]
    for index, grads, _ in sparse:
        # as MXNet: a sparse gradient or weight is pushed only; the rows the next batch
        # needs come back through prepare's row_sparse_pull
        kvstore.push(param_names[index], grads, priority=-index)
    pushed = {index for index, _, _ in sparse}
    entries = [entry for entry in entries if entry[0] not in pushed]
    if isinstance(kvstore, kvs.KVStore):
        if entries:
            names = [param_names[index] for index, _, _ in entries]
            grads = [grads for _, grads, _ in entries]
            kvstore.pushpull(names, grads, out=[weights for _, _, weights in entries])
        return
    for index, grads, weights in entries:
        kvstore.pushpull(param_names[index], grads, out=weights, priority=-index)


def _is_sparse(array):
    return getattr(array, "stype", "default") != "default"


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None, param_names=None):
    """Sum gradients through ``kvstore`` (if any), then update each device's copy locally.

    The updater sees index ``i * num_device + k`` for parameter ``i`` on
    device ``k``, MXNet's numbering (it keys the optimizer states).
    """
    if kvstore is not None:
        for index, grads in enumerate(grad_arrays):
            if grads[0] is not None:
                kvstore.pushpull(param_names[index], grads, priority=-index)
    for indices, grad_list, weight_list in _device_updates(param_arrays, grad_arrays, num_device):
        if indices:
            updater(indices, grad_list, weight_list)


def _device_updates(param_arrays, grad_arrays, num_device):
    """Per device, the updater's ``(indices, grads, weights)`` of the parameters with gradients.

    Index ``i * num_device + k`` for parameter ``i`` on device ``k``. The lists
    hold the arrays themselves, so a module may keep them between steps.
    """
    updates = [([], [], []) for _ in range(num_device)]
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays, strict=True)):
        if grads[0] is None:
            continue
        for device, (weight, grad) in enumerate(zip(weights, grads, strict=True)):
            indices, grad_list, weight_list = updates[device]
            indices.append(index * num_device + device)
            grad_list.append(grad)
            weight_list.append(weight)
    return updates


class DataParallelExecutorManager:
    """MXNet's executor manager behind the old FeedForward loop: not in rebind."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "DataParallelExecutorManager is the executor plumbing of MXNet's old FeedForward "
            "loop; rebind's FeedForward runs on Module, whose DataParallelExecutorGroup "
            "(mx.module.executor_group) does that work"
        )


# The names MXNet's model module imports from elsewhere, and FeedForward, which runs on
# Module (whose package imports this module): resolved on first use, as MXNet users reach
# them (mx.model.FeedForward, from mxnet.model import Uniform).
_LAZY = {
    "FeedForward": ("feedforward", "FeedForward"),
    "LogValidationMetricsCallback": ("callback", "LogValidationMetricsCallback"),
    "Uniform": ("initializer", "Uniform"),
    "get_updater": ("optimizer", "get_updater"),
    "DataDesc": ("io", "DataDesc"),
    "Context": ("context", "Context"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module_name, attribute = _LAZY[name]
        return getattr(importlib.import_module(f"{__package__}.{module_name}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
