"""``SVRGModule.fit``: MXNet's SVRG training loop, with rebind's training-event hooks.

The order of events is MXNet 1.9.1's ``SVRGModule.fit`` exactly (so a shuffling
iterator is reset, and so reshuffled, as often as there): bind, initialize,
install the optimizer; per epoch: reset the metric, refresh the full gradient
when ``epoch % update_freq == 0`` (rebind: also when none exists yet, as
after a ``begin_epoch`` between refreshes), reset the data, then forward, backward,
update, metric and callbacks per batch, the next batch fetched before the
callbacks run; at the end of the epoch the parameters are synchronised, the
epoch-end callbacks run and ``eval_data`` is scored. Plugins see
``rebind_fit_begin``, ``rebind_batch_end``, ``rebind_epoch_end`` and
``rebind_fit_end``, and a callback may raise ``StopTraining``, as in
``Module.fit``. ``SVRGFitMixin`` puts this ``fit`` on ``SVRGModule``.
"""

import time

from ... import metric as metric_mod
from ...errors import StopTraining
from ...model import BatchEndParam
from ...registry import get_plugin_manager

__all__ = ["SVRGFitMixin", "run_svrg_fit"]


class SVRGFitMixin:
    """``fit`` for SVRGModule (MXNet's SVRG loop; see ``run_svrg_fit``)."""

    def fit(
        self,
        train_data,
        eval_data=None,
        eval_metric="acc",
        epoch_end_callback=None,
        batch_end_callback=None,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        eval_end_callback=None,
        eval_batch_end_callback=None,
        initializer=None,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_rebind=False,
        force_init=False,
        begin_epoch=0,
        num_epoch=None,
        validation_metric=None,
        monitor=None,
        sparse_row_id_fn=None,
        resume_from=None,
    ):
        """Train as ``Module.fit`` does, refreshing the full gradient every ``update_freq`` epochs.

        MXNet's SVRG loop: at the start of each epoch whose index is a
        multiple of ``update_freq``, ``update_full_grads(train_data)``; then
        the batches, each ``forward_backward`` and ``update``. ``initializer``
        None means MXNet's ``Uniform(0.01)``. Callbacks, ``eval_data`` and the
        training-event hooks behave as in ``Module.fit``. ``resume_from`` is not
        supported (NotImplementedError): a resume point holds neither the
        snapshot nor its full gradient.
        """
        settings = dict(locals())
        del settings["self"]
        run_svrg_fit(self, settings)


def _as_list(callbacks):
    if callbacks is None:
        return []
    return list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]


def _prepare(module, s):
    if s["num_epoch"] is None:
        raise ValueError("SVRGModule.fit: num_epoch is required (the epoch index to stop at)")
    if s["resume_from"] is not None:
        raise NotImplementedError(
            "SVRGModule.fit: resume_from is not supported: a resume point holds neither "
            "the weight snapshot nor its full gradient; resume with arg_params and begin_epoch"
        )
    data = s["train_data"]
    module.bind(
        data_shapes=data.provide_data,
        label_shapes=data.provide_label,
        for_training=True,
        force_rebind=s["force_rebind"],
    )
    if s["monitor"] is not None:
        module.install_monitor(s["monitor"])
    init_args = {} if s["initializer"] is None else {"initializer": s["initializer"]}
    module.init_params(
        arg_params=s["arg_params"],
        aux_params=s["aux_params"],
        allow_missing=s["allow_missing"],
        force_init=s["force_init"],
        allow_extra=True,  # MXNet's fit ignores names the network does not have
        **init_args,
    )
    module.init_optimizer(
        kvstore=s["kvstore"], optimizer=s["optimizer"], optimizer_params=s["optimizer_params"]
    )


def run_svrg_fit(module, s):
    """Train ``module`` (an SVRGModule) with the arguments ``s`` of its ``fit``."""
    _prepare(module, s)
    validation_metric = s["validation_metric"]
    if validation_metric is None:
        validation_metric = s["eval_metric"]
    eval_metric = metric_mod.create(s["eval_metric"])
    hook = get_plugin_manager().hook
    end_epoch = s["begin_epoch"]
    hook.rebind_fit_begin(
        module=module,
        begin_epoch=s["begin_epoch"],
        num_epoch=s["num_epoch"],
        train_data=s["train_data"],
        eval_metric=eval_metric,
    )
    try:
        for epoch in range(s["begin_epoch"], s["num_epoch"]):
            end_epoch = epoch + 1
            _run_epoch(module, s, epoch, eval_metric, validation_metric, hook)
    except StopTraining as stop:
        module.logger.warning("Epoch[%d] Training stopped: %s", max(end_epoch - 1, 0), stop)
    hook.rebind_fit_end(module=module, num_epoch=end_epoch, eval_metric=eval_metric)


def _run_epoch(module, s, epoch, eval_metric, validation_metric, hook):
    eval_metric.reset()
    tic = time.time()
    train_data = s["train_data"]
    if epoch % module.update_freq == 0 or not module._full_grads_ready:
        module.update_full_grads(train_data)
    train_data.reset()
    for name, value in _train_batches(module, s, epoch, eval_metric, hook):
        module.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
    seconds = time.time() - tic
    module.logger.info("Epoch[%d] Time cost=%.3f", epoch, seconds)
    arg_params, aux_params = module.get_params()
    module.set_params(arg_params, aux_params)
    for callback in _as_list(s["epoch_end_callback"]):
        callback(epoch, module.symbol, arg_params, aux_params)
    validated = None
    if s["eval_data"] is not None:
        result = module.score(
            s["eval_data"],
            validation_metric,
            score_end_callback=s["eval_end_callback"],
            batch_end_callback=s["eval_batch_end_callback"],
            epoch=epoch,
        )
        for name, value in result:
            module.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
        validated = validation_metric
    hook.rebind_epoch_end(
        module=module,
        epoch=epoch,
        eval_metric=eval_metric,
        validation_metric=validated,
        seconds=seconds,
    )


def _train_batches(module, s, epoch, eval_metric, hook):
    """One pass over the (already reset) training data; the metric's ``(name, value)``s."""
    data_iter = iter(s["train_data"])
    try:
        next_batch = next(data_iter)
    except StopIteration:
        raise ValueError(
            f"SVRGModule.fit: the training data yields no batch in epoch {epoch}; check its size"
        ) from None
    nbatch, end_of_batch, name_values = 0, False, []
    monitor = s["monitor"]
    while not end_of_batch:
        batch = next_batch
        if monitor is not None:
            monitor.tic()
        module.forward_backward(batch)
        module.update()
        if isinstance(batch, list):
            module.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
        else:
            module.update_metric(eval_metric, batch.label)
        try:
            next_batch = next(data_iter)
            module.prepare(next_batch, sparse_row_id_fn=s["sparse_row_id_fn"])
        except StopIteration:
            end_of_batch = True
            name_values = eval_metric.get_name_value()
        if monitor is not None:
            monitor.toc_print()
        _batch_end(module, s, epoch, nbatch, batch, eval_metric, hook, locals())
        nbatch += 1
    return name_values


def _batch_end(module, s, epoch, nbatch, batch, eval_metric, hook, loop_locals):
    if s["batch_end_callback"] is not None:
        # MXNet's callbacks find the module as locals['self']
        param = BatchEndParam(epoch, nbatch, eval_metric, dict(loop_locals, self=module))
        for callback in _as_list(s["batch_end_callback"]):
            callback(param)
    batches = batch if isinstance(batch, list) else [batch]
    samples = sum(b.data[0].shape[0] - (b.pad or 0) for b in batches)
    hook.rebind_batch_end(
        module=module, epoch=epoch, nbatch=nbatch, batch_size=samples, eval_metric=eval_metric
    )
