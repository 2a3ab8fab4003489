"""PythonModule and PythonLossModule: modules whose computation is plain Python.

``PythonModule`` fills in the parts of the module interface that a computation
without parameters does not need (``init_params``, ``init_optimizer`` and
``update`` do nothing, ``get_params`` is empty) and records its input shapes at
``bind``; a subclass writes ``forward``, ``backward``, ``get_outputs``,
``get_input_grads`` and ``_compute_output_shapes``.

``PythonLossModule`` is such a subclass: a loss written in Python, used as the
last module of a ``SequentialModule`` (``add(loss, take_labels=True)``). Its
output is its input (the scores), and ``backward`` asks ``grad_func(scores,
labels)`` for the gradient of the loss with respect to the scores.
"""

import logging

from .. import ndarray as nd
from .base import DEFAULT_INITIALIZER, BaseModule
from .batch_fields import data_of, label_of
from .inputs import as_descs

__all__ = ["PythonModule", "PythonLossModule"]


def _name_list(names, what, owner):
    """``names`` as a list (MXNet accepts lists and tuples; None for no labels)."""
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError(
            f"{owner}: {what} must be a list of names, got the string {names!r}; write [{names!r}]"
        )
    return list(names)


class PythonModule(BaseModule):
    """A module whose computation is written in Python, without parameters.

    Args:
        data_names: names of the data inputs.
        label_names: names of the label inputs, or None for a module without labels.
        output_names: names of the outputs.
        logger: where log lines go.

    A subclass implements ``forward``, ``backward``, ``get_outputs``,
    ``get_input_grads`` and ``_compute_output_shapes`` (the output
    ``(name, shape)`` pairs, from ``self._data_shapes``); it overrides
    ``get_params``, ``init_params``, ``init_optimizer`` and ``update`` if it
    has parameters after all.
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        owner = type(self).__name__
        self._data_names = _name_list(data_names, "data_names", owner)
        self._label_names = _name_list(label_names, "label_names", owner)
        self._output_names = _name_list(output_names, "output_names", owner)
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    # -- inputs and outputs -------------------------------------------------------------

    @property
    def data_shapes(self):
        """The data ``DataDesc``s given to ``bind``."""
        return self._data_shapes

    @property
    def label_shapes(self):
        """The label ``DataDesc``s given to ``bind`` (None when bound without labels)."""
        return self._label_shapes

    @property
    def output_shapes(self):
        """The output ``(name, shape)`` pairs, computed at ``bind``."""
        return self._output_shapes

    def _compute_output_shapes(self):
        """The output ``(name, shape)`` pairs for ``self._data_shapes``; subclasses say."""
        raise self._abstract("_compute_output_shapes (the output shapes for the bound inputs)")

    # -- parameters and optimizer: none by default --------------------------------------
    def get_params(self):
        """``({}, {})``: a Python module has no parameters unless a subclass adds some."""
        self._lifecycle.require("get_params", "get_params")
        return {}, {}

    def init_params(
        self,
        initializer=DEFAULT_INITIALIZER,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        """Mark the parameters initialized; there are none, so nothing is computed.

        As in MXNet, ``arg_params``/``aux_params`` are ignored (a module in a
        ``SequentialModule`` is handed the parameters of the whole chain).
        """
        if self._lifecycle.check("init_params", "init_params", force=force_init):
            self._lifecycle.advance("init_params")

    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Mark the optimizer installed; with no parameters there is nothing to optimize."""
        if self._lifecycle.check("init_optimizer", "init_optimizer", force=force_init):
            self._lifecycle.advance("init_optimizer")

    def update(self):
        """Nothing to update: a Python module has no parameters unless a subclass adds some."""
        self._lifecycle.require("update", "update")

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Feed the outputs of the last ``forward`` and ``labels`` to ``eval_metric``.

        A module bound without labels has no predictions to score, so the
        call does nothing (as in MXNet).
        """
        self._lifecycle.require("bound_only", "update_metric")
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError(
                f"{type(self).__name__}.update_metric: labels sliced per device "
                "(pre_sliced=True) are not supported; a Python module computes "
                "on one device, pass the whole batch's labels"
            )
        eval_metric.update(labels, self.get_outputs())

    # -- binding ------------------------------------------------------------------------
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
        """Record the input shapes and compute the output shapes; nothing is allocated.

        Only ``grad_req='write'`` is supported (as in MXNet): the gradients a
        Python module computes replace the previous ones. ``shared_module`` is
        ignored, there being no parameters to share.
        """
        if not force_rebind and not self._lifecycle.check("bind", "bind"):
            return
        if grad_req != "write":
            raise ValueError(
                f"{type(self).__name__}.bind: grad_req={grad_req!r} is not "
                "supported; a Python module only writes its gradients "
                "(grad_req='write')"
            )
        data_descs = as_descs(data_shapes)
        self._check_names("data", self._data_names, data_descs)
        label_descs = None
        if label_shapes is not None:
            label_descs = as_descs(label_shapes)
            self._check_names("label", self._label_names, label_descs)
        self._data_shapes = data_descs
        self._label_shapes = label_descs
        self._output_shapes = self._compute_output_shapes()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._lifecycle.advance("unbind")  # force_rebind: keeps parameters and optimizer
        self._lifecycle.advance("bind")

    def _check_names(self, kind, names, descs):
        given = [desc.name for desc in descs]
        if (names or []) == given:  # no label names: an empty label_shapes is fine too
            return
        expected = "no labels (label_names=None)" if names is None else f"{kind}_names={names}"
        raise ValueError(
            f"{type(self).__name__}.bind: {kind}_shapes name {given} but the module "
            f"was created with {expected}; give {kind}_shapes with exactly those "
            f"names, in that order (SequentialModule.add(..., auto_wiring=True) "
            f"renames a chained module's data)"
        )


class PythonLossModule(PythonModule):
    """A loss computed in Python: outputs its scores, back-propagates ``grad_func``.

    Args:
        name: the module's name; its one output is ``name + '_output'``.
        data_names: one name, for the scores.
        label_names: one name, for the labels.
        logger: where log lines go.
        grad_func: ``grad_func(scores, labels)`` returns the gradient of the
            loss with respect to ``scores`` (both NDArrays), as an NDArray or
            anything ``mx.nd.array`` takes (a NumPy array, say). Without it,
            ``backward`` raises NotImplementedError (as MXNet's does).
    """

    def __init__(
        self,
        name="pyloss",
        data_names=("data",),
        label_names=("softmax_label",),
        logger=logging,
        grad_func=None,
    ):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        owner = type(self).__name__
        for kind, names in (("data_names", self._data_names), ("label_names", self._label_names)):
            if names is None or len(names) != 1:
                raise ValueError(f"{owner}: {kind} must hold exactly one name, got {names}")
        if grad_func is not None and not callable(grad_func):
            raise TypeError(
                f"{owner}: grad_func must be callable as grad_func(scores, labels), "
                f"got {type(grad_func).__name__}"
            )
        self._name = name
        self._grad_func = grad_func
        self._scores = None
        self._labels = None
        self._scores_grad = None

    def _compute_output_shapes(self):
        """One output, shaped like the scores."""
        scores = self._data_shapes[0]
        return [(self._name + "_output", scores.shape)]

    def forward(self, data_batch, is_train=None):
        """Keep the scores (``data_batch.data[0]``) and, when training, the labels."""
        self._lifecycle.require("bound_only", "forward")
        self._scores = data_of(data_batch)[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            labels = label_of(data_batch)
            if not labels:
                raise ValueError(
                    f"{type(self).__name__}.forward: training needs labels, but "
                    "the batch has none; give the DataBatch its label (or "
                    "forward with is_train=False)"
                )
            self._labels = labels[0]

    def get_outputs(self, merge_multi_context=True):
        """``[scores]``: the input of the last ``forward``, unchanged."""
        self._lifecycle.require("bound_only", "get_outputs")
        self._one_context("get_outputs", merge_multi_context)
        return [self._scores]

    def backward(self, out_grads=None):
        """Compute the gradient of the scores as ``grad_func(scores, labels)``.

        The result is kept as an NDArray on the scores' context and dtype.
        """
        self._lifecycle.require("bound_only", "backward")
        owner = type(self).__name__
        if out_grads is not None:
            raise ValueError(
                f"{owner}.backward: a loss module makes its own gradient; call "
                "backward() without out_grads"
            )
        if not self.for_training:
            raise RuntimeError(
                f"{owner}.backward: the module is bound for prediction; "
                "bind(..., for_training=True) to compute gradients"
            )
        if self._grad_func is None:
            raise NotImplementedError(
                f"{owner}.backward: no grad_func was given; create it as "
                f"{owner}(grad_func=f) with f(scores, labels) returning "
                "the gradient of the loss with respect to the scores"
            )
        grad = self._grad_func(self._scores, self._labels)
        scores = self._scores
        if not isinstance(grad, nd.NDArray) or grad.context != scores.context:
            grad = nd.array(grad, ctx=scores.context, dtype=scores.dtype)
        self._scores_grad = grad

    def get_input_grads(self, merge_multi_context=True):
        """``[gradient of the scores]`` from the last ``backward``."""
        self._lifecycle.require("bound_only", "get_input_grads")
        self._one_context("get_input_grads", merge_multi_context)
        return [self._scores_grad]

    def install_monitor(self, mon):
        """Not available: a Python loss runs no executor for a monitor to watch."""
        raise NotImplementedError(
            f"{type(self).__name__}.install_monitor: a Python loss runs "
            "no executor, so there are no arrays for a monitor to watch"
        )

    def _one_context(self, method, merge_multi_context):
        if not merge_multi_context:
            raise ValueError(
                f"{type(self).__name__}.{method}: merge_multi_context=False is not "
                "supported; a Python loss computes on one context"
            )
