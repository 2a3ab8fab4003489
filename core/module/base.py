"""BaseModule: the interface every module offers, and the high-level API built on it.

A module is a machine that runs a network: it is bound to input shapes
(``bind``), gets parameters (``init_params``), an optimizer
(``init_optimizer``), and then computes (``forward``, ``backward``,
``update``). A subclass implements that intermediate API; ``fit``, ``score``,
``predict`` and ``iter_predict`` here work on any module through it.

The stage of a module (unbound, bound, parameters initialized, optimizer
installed) is owned by its ``Lifecycle`` (``rebind.module.lifecycle``): public
methods declare the action they perform, and MXNet's flags ``binded``,
``params_initialized`` and ``optimizer_initialized`` are read-only views of it.
"""

import logging
import warnings

import numpy as np

from .. import initializer as init
from .. import metric as metric_mod
from .. import model
from .. import ndarray as nd
from ..io import DataBatch, DataIter
from .batch_fields import (
    batch_labels,
    call_all,
    is_data_iterator,
    iterate_batches,
    pad_of,
    reset_iterator,
)
from .copy_ahead import labels_as_loaded
from .lifecycle import Lifecycle
from .training import FitSettings, run_fit

__all__ = ["BaseModule", "DEFAULT_INITIALIZER", "resolve_initializer"]


class _DefaultInitializer:
    """MXNet's default initializer, ``Uniform(0.01)``, made when first used.

    Initializers come from the plugin registry, which is built lazily, so the
    default cannot be an instance at import time.
    """

    def __repr__(self):
        return "Uniform(0.01)"


DEFAULT_INITIALIZER = _DefaultInitializer()


def resolve_initializer(initializer):
    """The initializer to call: ``DEFAULT_INITIALIZER`` becomes ``Uniform(0.01)``."""
    if initializer is DEFAULT_INITIALIZER:
        return init.create("uniform", scale=0.01)
    return initializer


class BaseModule:
    """The base class of modules (see the module docstring for the stages).

    Args:
        logger: where log lines go (MXNet passes the ``logging`` module).
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.for_training = False
        self.inputs_need_grad = False
        self._symbol = None
        self._total_exec_bytes = 0
        self._lifecycle = Lifecycle(type(self).__name__, logger=logger)
        self._fit_run = None  # set while fit runs (rebind.module.training.FitRun)

    # -- the stage, as MXNet's flags ----------------------------------------------------
    @property
    def binded(self):
        """Whether ``bind`` has allocated the executors."""
        return self._lifecycle.binded

    @property
    def params_initialized(self):
        """Whether the parameters have values (``init_params``, ``set_params``, ``Module.load``)."""
        return self._lifecycle.params_initialized

    @property
    def optimizer_initialized(self):
        """Whether an optimizer is installed (``init_optimizer``, ``borrow_optimizer``)."""
        return self._lifecycle.optimizer_initialized

    # -- high-level API -----------------------------------------------------------------
    def forward_backward(self, data_batch):
        """``forward(data_batch, is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(
        self,
        eval_data,
        eval_metric,
        num_batch=None,
        batch_end_callback=None,
        score_end_callback=None,
        reset=True,
        epoch=0,
        sparse_row_id_fn=None,
    ):
        """Run prediction on ``eval_data`` and return ``eval_metric``'s ``(name, value)`` pairs.

        Padded examples of the last batch count in the metric, as in MXNet.
        Callbacks get a ``BatchEndParam`` (``epoch`` is passed through to them).
        """
        self._lifecycle.require("forward", "score")
        if reset:
            reset_iterator(eval_data)
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(iterate_batches(eval_data)):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            pre_sliced = isinstance(eval_batch, list)
            with labels_as_loaded():  # the metric may read the labels forward put on a GPU
                self.forward(eval_batch, is_train=False)
                self.update_metric(eval_metric, batch_labels(eval_batch), pre_sliced=pre_sliced)
            if batch_end_callback is not None:
                call_all(
                    batch_end_callback, model.BatchEndParam(epoch, nbatch, eval_metric, locals())
                )
            actual_num_batch += 1
        if score_end_callback:
            call_all(
                score_end_callback,
                model.BatchEndParam(epoch, actual_num_batch, eval_metric, locals()),
            )
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, batch index, batch)`` per batch; ``outputs`` exclude padding."""
        self._lifecycle.require("forward", "iter_predict")
        if reset:
            reset_iterator(eval_data)
        for nbatch, eval_batch in enumerate(iterate_batches(eval_data)):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = pad_of(eval_batch)
            outputs = [out[0 : out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(
        self,
        eval_data,
        num_batch=None,
        merge_batches=True,
        reset=True,
        always_output_list=False,
        sparse_row_id_fn=None,
    ):
        """Run prediction on ``eval_data`` and collect the outputs, one row per example.

        ``eval_data`` is a DataIter, or one NDArray / NumPy array (a single
        batch). With ``merge_batches`` the result is one array per output,
        batches concatenated (a single output is returned bare unless
        ``always_output_list``); otherwise a list per batch. Padding of the last
        batch is dropped, so the rows match the examples exactly.

        Where rebind differs: an array given directly runs with
        ``is_train=False`` (MXNet used the binding's ``for_training``).
        """
        self._lifecycle.require("forward", "predict")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]), is_train=False)
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter) and not is_data_iterator(eval_data):
            raise ValueError(
                f"predict: eval_data must be a DataIter (or an object with __iter__ "
                f"or next()), an NDArray or a NumPy array, got {type(eval_data).__name__}"
            )
        batches = [
            [out.copy() for out in outputs]
            for outputs, _, _ in self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)
        ]
        if not batches or not merge_batches:
            return batches
        num_outputs = len(batches[0])
        if any(len(outputs) != num_outputs for outputs in batches):
            raise ValueError(
                "predict: cannot merge batches, as the number of outputs differs "
                "between batches (bucketing?); pass merge_batches=False"
            )
        merged = [nd.concatenate([outputs[i] for outputs in batches]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

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
        initializer=DEFAULT_INITIALIZER,
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
        """Train the module's parameters on ``train_data`` for ``num_epoch`` epochs.

        MXNet 1.9's ``fit``: bind, ``init_params`` (``arg_params`` win over the
        initializer), ``init_optimizer``, then per epoch: forward, backward,
        update and the training metric per batch (``batch_end_callback`` gets a
        ``BatchEndParam``); at the epoch's end the parameters are synchronised,
        ``epoch_end_callback(epoch, symbol, arg_params, aux_params)`` runs, and
        ``eval_data`` is scored with ``validation_metric`` (``eval_end_callback``,
        ``eval_batch_end_callback``). Plugins see ``rebind_fit_begin``,
        ``rebind_batch_end``, ``rebind_epoch_end`` and ``rebind_fit_end``.

        Beyond MXNet:
            - a callback (or hook) may raise ``rebind.errors.StopTraining`` to end
              training early; ``fit`` logs why, fires ``rebind_fit_end`` and returns.
            - ``resume_from=prefix`` (or ``(prefix, epoch)``) continues from a
              resume point written by ``rebind.module.ResumeCheckpoint`` /
              ``save_resume_point``: parameters, optimizer state and counters,
              scheduler, epoch and random streams, so the run continues exactly
              as if it had not been interrupted. ``begin_epoch`` is then taken
              from the resume point.
            - ``arg_params`` may hold names the network does not use; they are
              ignored, as MXNet's ``fit`` ignores them.
        """
        settings = dict(locals())
        del settings["self"]
        run_fit(self, FitSettings(**settings))

    # -- the interface a module implements ----------------------------------------------
    def _abstract(self, what):
        return NotImplementedError(f"{type(self).__name__} does not implement {what}")

    def _stored(self, attribute, what):
        """The names a subclass keeps in ``attribute`` (None: no labels); else not implemented."""
        if not hasattr(self, attribute):
            raise self._abstract(what)
        return getattr(self, attribute)

    @property
    def data_names(self):
        """A list of names for data required by this module."""
        return self._stored("_data_names", "data_names")

    @property
    def label_names(self):
        """A list of names for labels required by this module."""
        return self._stored("_label_names", "label_names")

    @property
    def output_names(self):
        """A list of names for the outputs of this module."""
        return self._stored("_output_names", "output_names")

    @property
    def data_shapes(self):
        """A list of (name, shape) pairs specifying the data inputs to this module."""
        raise self._abstract("data_shapes")

    @property
    def label_shapes(self):
        """A list of (name, shape) pairs of the label inputs ([] or None without labels)."""
        raise self._abstract("label_shapes")

    @property
    def output_shapes(self):
        """A list of (name, shape) pairs specifying the outputs of this module."""
        raise self._abstract("output_shapes")

    @property
    def symbol(self):
        """The symbol this module runs (for some modules, the one currently in use)."""
        return self._symbol

    def get_params(self):
        """``(arg_params, aux_params)``: name -> NDArray, copies on the CPU."""
        raise self._abstract("get_params")

    def init_params(
        self,
        initializer=DEFAULT_INITIALIZER,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        """Give the parameters values: from ``arg_params``/``aux_params``, else the initializer."""
        raise self._abstract("init_params")

    def set_params(
        self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False
    ):
        """Assign parameter and aux state values (``init_params`` with no initializer).

        A module that can keep its current values for the parameters not given
        (one defining ``_assign_params``) does so under ``allow_missing``.
        """
        assign = getattr(self, "_assign_params", None)
        if not (allow_missing and assign):
            self.init_params(
                initializer=None,
                arg_params=arg_params,
                aux_params=aux_params,
                allow_missing=allow_missing,
                force_init=force_init,
                allow_extra=allow_extra,
            )
            return
        if not self._lifecycle.check("init_params", "set_params", force=force_init):
            return
        assign(arg_params, aux_params, force_init, allow_extra)
        self._params_dirty = True  # the CPU copies did not get the new values
        self._lifecycle.advance("init_params")

    def save_params(self, fname):
        """Save the parameters to ``fname`` as ``arg:<name>``/``aux:<name>`` entries."""
        arg_params, aux_params = self.get_params()
        nd.save(fname, model._params_dict(arg_params, aux_params))

    def load_params(self, fname):
        """Load parameters saved by ``save_params`` (or MXNet) and ``set_params`` them."""
        saved = nd.load(fname)
        if not isinstance(saved, dict):
            raise ValueError(f"load_params: {fname} holds unnamed arrays, not arg:/aux: entries")
        arg_params, aux_params = model.split_params(saved, fname)
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        """The state arrays (modules without states have none)."""
        self._lifecycle.require("outputs", "get_states")
        return []

    def set_states(self, states=None, value=None):
        """Set the state arrays (modules without states have none to set)."""
        self._lifecycle.require("outputs", "set_states")
        if states is not None and value is not None:
            raise ValueError("set_states: give exactly one of states and value")

    def install_monitor(self, mon):
        """Let ``mon`` (an ``mx.monitor.Monitor``) watch every executor."""
        raise self._abstract("install_monitor")

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for ``data_batch`` (switch bucket, reshape); nothing to do by default.

        As in MXNet, the base implementation asks for no stage (a ``BaseModule``
        whose methods a test replaced still fits); ``Module`` requires ``bind``.
        """
        if sparse_row_id_fn is not None:
            warnings.warn(
                UserWarning("sparse_row_id_fn is not invoked for BaseModule."), stacklevel=2
            )

    def _devices_may_differ(self):
        """Whether the devices may hold different parameter values after an epoch (rebind).

        ``fit`` makes them one again at each epoch's end with ``set_params(get_params())``,
        as MXNet's does; where this says False (one device) that round trip would write
        back the values just read, and is skipped. Modules that do not know say True.
        """
        return True

    def _copy_ahead(self, data_batch):
        """fit's next batch: start its device copies while this one's work runs (rebind).

        Nothing by default; ``Module`` on a GPU starts them (``copy_ahead.py``).
        """

    def forward(self, data_batch, is_train=None):
        """Run the network on ``data_batch`` (``is_train`` defaults to ``for_training``)."""
        raise self._abstract("forward")

    def backward(self, out_grads=None):
        """Back-propagate; ``out_grads`` are needed for outputs that are not losses."""
        raise self._abstract("backward")

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last ``forward``."""
        raise self._abstract("get_outputs")

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs from the last ``backward``."""
        raise self._abstract("get_input_grads")

    def update(self):
        """Apply the optimizer to the parameters with the gradients of the last ``backward``."""
        raise self._abstract("update")

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` over the outputs of the last ``forward`` and ``labels``."""
        raise self._abstract("update_metric")

    def bind(
        self,
        data_shapes,
        label_shapes=None,
        for_training=True,
        inputs_need_grad=False,
        force_rebind=False,
        shared_module=None,
        grad_req="write",
    ):
        """Allocate the executors for the given input shapes."""
        raise self._abstract("bind")

    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Install an optimizer (and a kvstore where several devices need one)."""
        raise self._abstract("init_optimizer")
