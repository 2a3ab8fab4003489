"""The ``fit`` loop: epochs of forward, backward, update, callbacks and plugin hooks.

``BaseModule.fit`` gathers its arguments into ``FitSettings`` and calls
``run_fit``, which follows MXNet 1.9's order of events exactly (see
``BaseModule.fit``) and adds rebind's: the training-event hooks, early stopping
through ``StopTraining``, and resumption from a resume point.

While ``fit`` runs, ``module._fit_run`` holds a ``FitRun``: the training data
and the actions to take once an epoch is completely over (after evaluation,
before the training data is reset), which is where a resume point must be
recorded so that a resumed run draws the same random numbers.
"""

import time

import attrs

from .. import metric as metric_mod
from ..errors import StopTraining
from ..executor.executor import single_backward
from ..model import BatchEndParam
from ..registry import get_plugin_manager
from . import resume
from .batch_fields import (
    batch_labels,
    call_all,
    iterate_batches,
    iterator_descs,
    pad_of,
    reset_iterator,
)
from .copy_ahead import labels_as_loaded

__all__ = ["FitSettings", "FitRun", "run_fit"]


@attrs.define
class FitSettings:
    """The arguments of one ``fit`` call (see ``BaseModule.fit``)."""

    train_data: object
    eval_data: object
    eval_metric: object
    epoch_end_callback: object
    batch_end_callback: object
    kvstore: object
    optimizer: object
    optimizer_params: object
    eval_end_callback: object
    eval_batch_end_callback: object
    initializer: object
    arg_params: object
    aux_params: object
    allow_missing: bool
    force_rebind: bool
    force_init: bool
    begin_epoch: int
    num_epoch: object
    validation_metric: object
    monitor: object
    sparse_row_id_fn: object
    resume_from: object


@attrs.define
class FitRun:
    """What a running ``fit`` shares with callbacks: its data and end-of-epoch actions."""

    train_data: object
    at_epoch_end: list = attrs.field(factory=list)

    def finish_epoch(self):
        """Run (and forget) the actions queued for the end of this epoch."""
        actions, self.at_epoch_end = self.at_epoch_end, []
        for action in actions:
            action()


def _prepare(module, s):
    """Bind, initialize and install the optimizer; returns the first epoch to run."""
    data = s.train_data
    data_descs, label_descs = iterator_descs(data)
    module.bind(
        data_shapes=data_descs,
        label_shapes=label_descs,
        for_training=True,
        force_rebind=s.force_rebind,
    )
    if s.monitor is not None:
        module.install_monitor(s.monitor)
    point = resume.load_point(s.resume_from) if s.resume_from is not None else None
    arg_params, aux_params = s.arg_params, s.aux_params
    if point is not None:
        arg_params, aux_params = point.arg_params, point.aux_params
    module.init_params(
        initializer=s.initializer,
        arg_params=arg_params,
        aux_params=aux_params,
        allow_missing=s.allow_missing and point is None,
        force_init=s.force_init or point is not None,
        allow_extra=True,
    )
    module.init_optimizer(
        kvstore=s.kvstore, optimizer=s.optimizer, optimizer_params=s.optimizer_params
    )
    if point is None:
        return s.begin_epoch
    return resume.restore_point(module, point, data)


def run_fit(module, s):
    """Train ``module`` as ``fit`` describes."""
    if s.num_epoch is None:
        raise ValueError(
            f"{type(module).__name__}.fit: num_epoch is required (the epoch index to stop at)"
        )
    begin_epoch = _prepare(module, s)
    validation_metric = s.eval_metric if s.validation_metric is None else s.validation_metric
    eval_metric = metric_mod.create(s.eval_metric)
    validation_metric = metric_mod.create(validation_metric)
    hook = get_plugin_manager().hook
    end_epoch = begin_epoch
    module._fit_run = FitRun(s.train_data)
    try:
        hook.rebind_fit_begin(
            module=module,
            begin_epoch=begin_epoch,
            num_epoch=s.num_epoch,
            train_data=s.train_data,
            eval_metric=eval_metric,
        )
        for epoch in range(begin_epoch, s.num_epoch):
            end_epoch = epoch + 1
            _run_epoch(module, s, epoch, eval_metric, validation_metric, hook)
    except StopTraining as stop:
        module.logger.warning("Epoch[%d] Training stopped: %s", max(end_epoch - 1, 0), stop)
    finally:
        module._fit_run = None
    hook.rebind_fit_end(module=module, num_epoch=end_epoch, eval_metric=eval_metric)


def _run_epoch(module, s, epoch, eval_metric, validation_metric, hook):
    tic = time.time()
    eval_metric.reset()
    name_values = _train_batches(module, s, epoch, eval_metric, hook)
    for name, value in name_values:
        module.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
    seconds = time.time() - tic
    module.logger.info("Epoch[%d] Time cost=%.3f", epoch, seconds)
    # the devices may hold different aux states (BatchNorm): make them one again (with one
    # device, writing back what was just read changes nothing: 2 x the parameters' bytes
    # over the bus an epoch, 100 ms for the 200 MiB of benchmarks/gpu.py's 4096 MLP)
    arg_params, aux_params = module.get_params()
    if module._devices_may_differ():
        module.set_params(arg_params, aux_params)
    call_all(s.epoch_end_callback, epoch, module.symbol, arg_params, aux_params)
    validated, trained = None, eval_metric
    if s.eval_data is not None:
        if validation_metric is eval_metric:
            # MXNet validates with the training metric object when no other is
            # given; scoring resets it, so the hooks get the training values
            # as they were before validation
            trained = _MetricSnapshot(eval_metric)
        result = module.score(
            s.eval_data,
            validation_metric,
            score_end_callback=s.eval_end_callback,
            batch_end_callback=s.eval_batch_end_callback,
            epoch=epoch,
        )
        for name, value in result:
            module.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
        validated = validation_metric
    hook.rebind_epoch_end(
        module=module,
        epoch=epoch,
        eval_metric=trained,
        validation_metric=validated,
        seconds=seconds,
    )
    module._fit_run.finish_epoch()
    reset_iterator(s.train_data)


class _MetricSnapshot:
    """The values a metric had at one moment, with the metric's read-only API."""

    def __init__(self, metric):
        self.name = metric.name
        self._local = list(metric.get_name_value())
        self._global = list(metric.get_global_name_value())

    def get_name_value(self):
        return list(self._local)

    def get_global_name_value(self):
        return list(self._global)

    def get(self):
        return _unzip(self._local)

    def get_global(self):
        return _unzip(self._global)


def _unzip(pairs):
    names, values = [n for n, _ in pairs], [v for _, v in pairs]
    return (names[0], values[0]) if len(pairs) == 1 else (names, values)


def _train_batches(module, s, epoch, eval_metric, hook):
    """One pass over the training data; returns the metric's ``(name, value)`` pairs."""
    data_iter = iterate_batches(s.train_data)
    try:
        next_batch = next(data_iter)
    except StopIteration:
        raise ValueError(
            f"{type(module).__name__}.fit: the training data yields no batch in "
            f"epoch {epoch}; reset() it or check its size"
        ) from None
    nbatch, end_of_data, name_values = 0, False, []
    while not end_of_data:
        batch = next_batch
        if s.monitor is not None:
            s.monitor.tic()
        _train_step(module, batch, eval_metric)
        try:
            next_batch = next(data_iter)
            module.prepare(next_batch, sparse_row_id_fn=s.sparse_row_id_fn)
            module._copy_ahead(next_batch)
        except StopIteration:
            end_of_data = True
            name_values = eval_metric.get_global_name_value()
        if s.monitor is not None:
            s.monitor.toc_print()
        _batch_end(module, s, epoch, nbatch, batch, eval_metric, hook, locals())
        nbatch += 1
    return name_values


def _train_step(module, batch, eval_metric):
    # fit runs one backward per forward: backward may free what forward kept as it
    # goes (see executor.single_backward); a user's own forward_backward keeps it,
    # as MXNet's lets backward run again
    with labels_as_loaded():  # the metric may read the labels the forward put on a GPU
        with single_backward():
            module.forward_backward(batch)
        module.update()
        module.update_metric(eval_metric, batch_labels(batch), pre_sliced=isinstance(batch, list))


def _batch_end(module, s, epoch, nbatch, batch, eval_metric, hook, loop_locals):
    """The batch-end callbacks (MXNet's), then the ``rebind_batch_end`` hook."""
    if s.batch_end_callback is not None:
        # MXNet's callbacks find the module as locals['self']
        param = BatchEndParam(epoch, nbatch, eval_metric, dict(loop_locals, self=module))
        call_all(s.batch_end_callback, param)
    hook.rebind_batch_end(
        module=module,
        epoch=epoch,
        nbatch=nbatch,
        batch_size=_samples(batch),
        eval_metric=eval_metric,
    )


def _samples(batch):
    """Examples in a batch (or list of per-device batches), padding excluded.

    A batch without data arrays (a mock that a test's stubbed module never
    reads, as in MXNet's own test_module) counts as none.
    """
    batches = batch if isinstance(batch, list) else [batch]
    return sum(b.data[0].shape[0] - pad_of(b) for b in batches if getattr(b, "data", None))
