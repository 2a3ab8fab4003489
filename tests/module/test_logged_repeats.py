"""Repeated calls MXNet tolerates: which are logged through the module's logger, which warn.

Recorded from MXNet 1.9.1 (python/mxnet/module/*.py, and a run with a handler
on the root logger): a second ``bind`` logs ``Already bound, ignoring bind()``
and a second ``init_optimizer`` logs ``optimizer already initialized,
ignoring...`` with ``self.logger.warning``; a second ``init_params`` warns
(``UserWarning``: "Parameters already initialized and force_init=False.
init_params call ignored.").
"""

import logging
import warnings

import pytest

import rebind as mx

from .core_nets import mlp
from .log_capture import logs_warning

SHAPES = ([("data", (4, 6))], [("softmax_label", (4,))])


@pytest.fixture
def module_logger():
    logger = logging.getLogger("tests.module.repeats")
    logger.setLevel(logging.INFO)
    return logger


def _ready(mod):
    mod.bind(*SHAPES)
    mod.init_params()
    mod.init_optimizer()
    return mod


def _silently(call):
    """Run ``call``, failing on any warning (the repeat must be logged, not warned)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call()


def _sequential(logger):
    first = mx.mod.Module(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc"),
        label_names=None,
        logger=logger,
    )
    second = mx.mod.Module(
        mx.sym.SoftmaxOutput(mx.sym.Variable("data"), name="softmax"), logger=logger
    )
    seq = mx.mod.SequentialModule(logger=logger)
    return seq.add(first).add(second, take_labels=True, auto_wiring=True)


MODULES = {
    "Module": lambda logger: mx.mod.Module(mlp(), logger=logger),
    "BucketingModule": lambda logger: mx.mod.BucketingModule(
        lambda key: (mlp(), ("data",), ("softmax_label",)), default_bucket_key=6, logger=logger
    ),
    "SequentialModule": _sequential,
}


@pytest.mark.parametrize("kind", MODULES)
def test_a_second_bind_is_logged_on_the_modules_logger(kind, module_logger):
    mod = _ready(MODULES[kind](module_logger))
    with logs_warning(r"^Already bound, ignoring bind\(\)", logger=module_logger):
        _silently(lambda: mod.bind(*SHAPES))


@pytest.mark.parametrize("kind", MODULES)
def test_a_second_init_optimizer_is_logged_on_the_modules_logger(kind, module_logger):
    mod = _ready(MODULES[kind](module_logger))
    optimizer = mod._optimizer if kind != "SequentialModule" else None
    with logs_warning(r"^optimizer already initialized, ignoring", logger=module_logger):
        _silently(mod.init_optimizer)
    if optimizer is not None:
        assert mod._optimizer is optimizer


def test_a_second_init_params_still_warns_as_mxnet(module_logger):
    mod = _ready(mx.mod.Module(mlp(), logger=module_logger))
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()


def test_python_loss_module_logs_a_second_bind(module_logger):
    loss = mx.mod.PythonLossModule(logger=module_logger)
    loss.bind([("data", (4, 3))], [("softmax_label", (4,))])
    with logs_warning(r"^Already bound, ignoring bind\(\)", logger=module_logger):
        _silently(lambda: loss.bind([("data", (4, 3))], [("softmax_label", (4,))]))


def test_the_default_logger_is_the_root_logger():
    mod = _ready(mx.mod.Module(mlp()))  # logger=logging, as MXNet
    with logs_warning(r"^Already bound, ignoring bind\(\) \(pass force_rebind=True"):
        _silently(lambda: mod.bind(*SHAPES))
