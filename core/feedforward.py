"""``mx.model.FeedForward``: MXNet's deprecated estimator, kept for the scripts that use it.

FeedForward trains a symbol on NumPy arrays or a ``DataIter``
(``fit``/``predict``/``score``/``save``/``load``/``create``). MXNet 1.x
deprecated it in favour of ``mx.mod.Module``; here it runs on ``Module``, so
its training loop, optimizers, kvstores and checkpoints are Module's. NumPy
inputs become ``NDArrayIter`` batches of ``numpy_batch_size`` exactly as in
MXNet (shuffled with ``roll_over`` for training, in order for prediction).
"""

import logging
import warnings

import numpy as np

from . import io
from . import metric as metric_mod
from . import ndarray as nd
from .callback import LogValidationMetricsCallback
from .context import Context, cpu
from .model import BatchEndParam, load_checkpoint, save_checkpoint
from .module import Module
from .module.base import DEFAULT_INITIALIZER, resolve_initializer
from .module.batch_fields import call_all
from .symbol import Symbol

__all__ = ["FeedForward"]

_LOG_VALIDATION = LogValidationMetricsCallback()  # MXNet's default eval_end_callback


def _as_numpy(value):
    if isinstance(value, list):
        return np.array(value)
    return value


def _labels_for(X, y, is_train):
    if y is None:
        if is_train:
            raise ValueError("y must be specified when X is numpy.ndarray")
        y = np.zeros(X.shape[0])
    if not isinstance(y, (np.ndarray, nd.NDArray)):
        raise TypeError("y must be ndarray when X is numpy.ndarray")
    if X.shape[0] != y.shape[0]:
        raise ValueError("The numbers of data points and labels not equal")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.reshape((-1,))
    if y.ndim != 1:
        raise ValueError("Label must be 1D or 2D (with 2nd dimension being 1)")
    return y


class FeedForward:
    """MXNet's FeedForward model on rebind's Module (deprecated in MXNet; use Module)."""

    def __init__(
        self,
        symbol,
        ctx=None,
        num_epoch=None,
        epoch_size=None,
        optimizer="sgd",
        initializer=DEFAULT_INITIALIZER,
        numpy_batch_size=128,
        arg_params=None,
        aux_params=None,
        allow_extra_params=False,
        begin_epoch=0,
        **kwargs,
    ):
        warnings.warn(
            "mxnet.model.FeedForward has been deprecated. Please use mxnet.mod.Module instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        if isinstance(symbol, Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise TypeError(f"FeedForward: symbol must be a Symbol or a callable, got {symbol!r}")
        self.arg_params, self.aux_params = arg_params, aux_params
        self.allow_extra_params = allow_extra_params
        self.ctx = [cpu()] if ctx is None else [ctx] if isinstance(ctx, Context) else list(ctx)
        self.num_epoch, self.epoch_size = num_epoch, epoch_size
        self.optimizer, self.initializer = optimizer, initializer
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self.kwargs = dict(kwargs)
        self._pred_module = None

    # -- data ---------------------------------------------------------------------------
    def _init_iter(self, X, y, is_train):
        """A DataIter for ``X`` (NumPy/NDArray inputs are batched as MXNet batches them)."""
        if isinstance(X, (np.ndarray, nd.NDArray)):
            y = _labels_for(X, y, is_train)
            batch_size = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return io.NDArrayIter(X, y, batch_size, shuffle=True, last_batch_handle="roll_over")
            return io.NDArrayIter(X, y, batch_size, shuffle=False)
        if not isinstance(X, io.DataIter):
            raise TypeError("X must be DataIter, NDArray or numpy.ndarray")
        return X

    def _init_eval_iter(self, eval_data):
        """``eval_data`` as a DataIter: a DataIter, or a ``(data, label)`` pair."""
        if eval_data is None or isinstance(eval_data, io.DataIter):
            return eval_data
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            data, label = eval_data
            if data is None:
                raise ValueError("Eval data is NONE")
            if label is None and isinstance(data, io.DataIter):
                return data
            return self._init_iter(_as_numpy(data), _as_numpy(label), is_train=True)
        raise TypeError("Eval data must be DataIter, or NDArray/numpy.ndarray/list pair")

    # -- training -----------------------------------------------------------------------
    def _module_for(self, data_iter, work_load_list=None):
        data_names = [d[0] for d in data_iter.provide_data]
        # MXNet's rule for FeedForward: arguments ending in 'label' are labels, not parameters
        label_names = [
            n for n in self.symbol.list_arguments() if n.endswith("label") and n not in data_names
        ]
        return Module(
            self.symbol,
            data_names=data_names,
            label_names=label_names,
            logger=logging,
            context=self.ctx,
            work_load_list=work_load_list,
        )

    def _given_params(self):
        """``arg_params``/``aux_params`` kept to the symbol's names under allow_extra_params."""
        arg, aux = self.arg_params, self.aux_params
        if self.allow_extra_params and self.symbol is not None:
            names, aux_names = (
                set(self.symbol.list_arguments()),
                set(self.symbol.list_auxiliary_states()),
            )
            arg = None if arg is None else {k: v for k, v in arg.items() if k in names}
            aux = None if aux is None else {k: v for k, v in aux.items() if k in aux_names}
        return arg, aux

    def fit(
        self,
        X,
        y=None,
        eval_data=None,
        eval_metric="acc",
        epoch_end_callback=None,
        batch_end_callback=None,
        kvstore="local",
        logger=None,
        work_load_list=None,
        monitor=None,
        eval_end_callback=_LOG_VALIDATION,
        eval_batch_end_callback=None,
    ):
        """Train on ``X`` (and ``y`` for arrays) from ``begin_epoch`` to ``num_epoch``."""
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen is not None:
            self.symbol = self.sym_gen(data.default_bucket_key)
        module = self._module_for(data, work_load_list=work_load_list)
        if logger is not None:
            module.logger = logger
        train = data if self.epoch_size is None else io.ResizeIter(data, self.epoch_size, False)
        arg_params, aux_params = self._given_params()
        module.fit(
            train,
            eval_data=eval_data,
            eval_metric=eval_metric,
            epoch_end_callback=epoch_end_callback,
            batch_end_callback=batch_end_callback,
            kvstore=kvstore,
            optimizer=self.optimizer,
            optimizer_params=self.kwargs,
            eval_end_callback=eval_end_callback,
            eval_batch_end_callback=eval_batch_end_callback,
            initializer=resolve_initializer(self.initializer),
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=True,
            begin_epoch=self.begin_epoch,
            num_epoch=self.num_epoch,
            monitor=monitor,
        )
        self.arg_params, self.aux_params = module.get_params()
        self._pred_module = None

    # -- inference ----------------------------------------------------------------------
    def _predictor(self, data_iter):
        """A Module bound for inference to ``data_iter``'s shapes, holding the parameters."""
        shapes = [tuple(d[:2]) for d in data_iter.provide_data]
        module = self._pred_module
        if module is None or module.data_shapes != shapes:
            module = self._module_for(data_iter)
            module.bind(data_iter.provide_data, data_iter.provide_label or None, for_training=False)
            module.set_params(self.arg_params, self.aux_params or {}, allow_extra=True)
            self._pred_module = module
        return module

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """The outputs for ``X`` as NumPy arrays (one array for one output), padding removed."""
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        module = self._predictor(X)
        outputs, data, labels = [], [], []
        for index, batch in enumerate(X):
            if num_batch is not None and index == num_batch:
                break
            module.forward(batch, is_train=False)
            real = X.batch_size - (getattr(batch, "pad", 0) or 0)
            outputs.append([out[0:real].asnumpy() for out in module.get_outputs()])
            if return_data:
                data.append([x[0:real].asnumpy() for x in batch.data])
                labels.append([x[0:real].asnumpy() for x in batch.label or []])
        predicted = _joined(outputs)
        if not return_data:
            return predicted
        return predicted, _joined(data), _joined(labels)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None, reset=True):
        """``eval_metric`` over ``X``'s batches (with labels); returns its value."""
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        module = self._predictor(X)
        for index, batch in enumerate(X):
            if num_batch is not None and index == num_batch:
                break
            module.forward(batch, is_train=False)
            eval_metric.update(batch.label, module.get_outputs())
            param = BatchEndParam(epoch=0, nbatch=index, eval_metric=eval_metric, locals=locals())
            call_all(batch_end_callback, param)
        return eval_metric.get()[1]

    # -- files --------------------------------------------------------------------------
    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Write an MXNet checkpoint (``prefix-symbol.json``, ``prefix-%04d.params``)."""
        epoch = self.num_epoch if epoch is None else epoch
        if epoch is None:
            raise ValueError("FeedForward.save: give epoch (num_epoch is not set)")
        save_checkpoint(
            prefix, epoch, self.symbol, self.arg_params, self.aux_params or {}, remove_amp_cast
        )

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from a checkpoint, continuing from ``epoch``."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(
            symbol,
            ctx=ctx,
            arg_params=arg_params,
            aux_params=aux_params,
            begin_epoch=epoch,
            **kwargs,
        )

    @staticmethod
    def create(
        symbol,
        X,
        y=None,
        ctx=None,
        num_epoch=None,
        epoch_size=None,
        optimizer="sgd",
        initializer=DEFAULT_INITIALIZER,
        eval_data=None,
        eval_metric="acc",
        epoch_end_callback=None,
        batch_end_callback=None,
        kvstore="local",
        logger=None,
        work_load_list=None,
        eval_end_callback=_LOG_VALIDATION,
        eval_batch_end_callback=None,
        **kwargs,
    ):
        """Make a FeedForward and ``fit`` it in one call."""
        model = FeedForward(
            symbol,
            ctx=ctx,
            num_epoch=num_epoch,
            epoch_size=epoch_size,
            optimizer=optimizer,
            initializer=initializer,
            **kwargs,
        )
        model.fit(
            X,
            y,
            eval_data=eval_data,
            eval_metric=eval_metric,
            epoch_end_callback=epoch_end_callback,
            batch_end_callback=batch_end_callback,
            kvstore=kvstore,
            logger=logger or logging,
            work_load_list=work_load_list,
            eval_end_callback=eval_end_callback,
            eval_batch_end_callback=eval_batch_end_callback,
        )
        return model


def _joined(batches):
    """Per-batch lists of arrays joined along the batch axis: one array, or a list of them."""
    joined = [np.concatenate(parts) for parts in zip(*batches, strict=True)]
    return joined[0] if len(joined) == 1 else joined
