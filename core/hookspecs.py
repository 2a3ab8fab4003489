"""The hook specifications: the whole contract between rebind and its plugins.

A plugin is a module or object whose functions are decorated with
``rebind.hookimpl`` and named after one of the hooks below. Built-in backends,
optimizers, metrics and so on register through exactly these hooks, as a
third-party package does through the entry point group ``rebind``.

The ``rebind_add_*`` hooks receive a registry object and call
``registry.add(name, implementation)`` once per thing they contribute. The
training-event hooks are called by ``Module.fit`` for every plugin that
implements them; their return values are ignored.
"""

import pluggy

PROJECT_NAME = "rebind"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def rebind_add_backends(registry):
    """Add array backends: ``registry.add(name, backend)``.

    Args:
        registry: call ``registry.add(name, backend)`` with a
            ``rebind.backend.Backend`` instance; ``name`` is what
            ``REBIND_BACKEND`` selects, ``backend.device_type`` ("cpu", "gpu",
            or a new type) is what contexts of that type run on.
    """


@hookspec
def rebind_add_operators(registry):
    """Add operators: ``registry.add(name, opdef)`` with an operator definition."""


@hookspec
def rebind_add_optimizers(registry):
    """Add optimizers: ``registry.add(name, optimizer_class)``; names are case-insensitive."""


@hookspec
def rebind_add_initializers(registry):
    """Add initializers: ``registry.add(name, initializer_class)``; names are case-insensitive."""


@hookspec
def rebind_add_metrics(registry):
    """Add evaluation metrics: ``registry.add(name, metric_class)``; case-insensitive."""


@hookspec
def rebind_add_kvstores(registry):
    """Add key-value stores: ``registry.add(name, kvstore_factory)``; case-insensitive."""


@hookspec
def rebind_fit_begin(module, begin_epoch, num_epoch, train_data, eval_metric):
    """Training starts: ``Module.fit`` is about to run its first epoch.

    Args:
        module: the module being trained.
        begin_epoch: index of the first epoch to run (non-zero when resuming).
        num_epoch: the epoch index at which training stops (exclusive).
        train_data: the training ``DataIter``.
        eval_metric: the ``EvalMetric`` updated on training batches.
    """


@hookspec
def rebind_batch_end(module, epoch, nbatch, batch_size, eval_metric):
    """One training batch has been forwarded, back-propagated and applied.

    Args:
        module: the module being trained.
        epoch: the current epoch index.
        nbatch: index of the batch just finished within the epoch.
        batch_size: number of samples in that batch, padding excluded.
        eval_metric: the training metric, already updated with this batch.
    """


@hookspec
def rebind_epoch_end(module, epoch, eval_metric, validation_metric, seconds):
    """One epoch is over, after evaluation on the validation data if any.

    Args:
        module: the module being trained.
        epoch: the epoch index just finished.
        eval_metric: the training metric accumulated over the epoch.
        validation_metric: the metric on ``eval_data``, or None without it.
        seconds: wall time the epoch's training took.
    """


@hookspec
def rebind_fit_end(module, num_epoch, eval_metric):
    """Training is over (also when it stops early); ``num_epoch`` epochs ran in total."""
