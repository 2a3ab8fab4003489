"""mx.metric: create, register, the built-in metrics' values, errors and configs."""

import importlib
import math
import sys
import textwrap

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.errors import ShapeError, UnknownNameError

# MXNet 1.9.1's registered names (class names lower-cased, plus its aliases)
MXNET_NAMES = {
    "accuracy": "Accuracy",
    "acc": "Accuracy",
    "topkaccuracy": "TopKAccuracy",
    "top_k_accuracy": "TopKAccuracy",
    "top_k_acc": "TopKAccuracy",
    "f1": "F1",
    "mcc": "MCC",
    "perplexity": "Perplexity",
    "mae": "MAE",
    "mse": "MSE",
    "rmse": "RMSE",
    "crossentropy": "CrossEntropy",
    "ce": "CrossEntropy",
    "negativeloglikelihood": "NegativeLogLikelihood",
    "nll_loss": "NegativeLogLikelihood",
    "pearsoncorrelation": "PearsonCorrelation",
    "pearsonr": "PearsonCorrelation",
    "pcc": "PCC",
    "loss": "Loss",
    "torch": "Torch",
    "caffe": "Caffe",
    "compositeevalmetric": "CompositeEvalMetric",
    "composite": "CompositeEvalMetric",
    "custommetric": "CustomMetric",
}


def nd(values, ctx, dtype="float32"):
    return mx.nd.array(np.asarray(values, dtype=dtype), ctx=ctx, dtype=dtype)


# -- create ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MXNET_NAMES))
def test_every_mxnet_name_resolves(name):
    cls = registry.lookup("metrics", name)
    assert cls.__name__ == MXNET_NAMES[name]
    assert cls is getattr(mx.metric, MXNET_NAMES[name])


def test_create_from_name_is_case_insensitive_and_passes_arguments():
    metric = mx.metric.create("Top_K_Accuracy", top_k=3)
    assert isinstance(metric, mx.metric.TopKAccuracy)
    assert metric.name == "top_k_accuracy_3"
    assert isinstance(mx.metric.create("ACC"), mx.metric.Accuracy)
    assert mx.metric.create("ce", 1e-3).eps == 1e-3


def test_create_from_list_makes_a_composite():
    def my_error(label, pred):
        return 0.0

    metric = mx.metric.create(["acc", mx.metric.MAE(), my_error])
    assert isinstance(metric, mx.metric.CompositeEvalMetric)
    assert [type(m).__name__ for m in metric.metrics] == ["Accuracy", "MAE", "CustomMetric"]
    assert metric.get_metric(2).name == "my_error"
    with pytest.raises(ValueError, match="out of range"):
        metric.get_metric(3)


def test_create_from_callable_instance_class_dict_and_json():
    metric = mx.metric.create(lambda label, pred: 1.0)
    assert isinstance(metric, mx.metric.CustomMetric)
    assert metric.name == "custom(<lambda>)"
    acc = mx.metric.Accuracy()
    assert mx.metric.create(acc) is acc
    with pytest.raises(ValueError, match="already an instance"):
        mx.metric.create(acc, axis=2)
    assert mx.metric.create(mx.metric.Accuracy, axis=2).axis == 2
    assert mx.metric.create({"metric": "acc", "axis": 3}).axis == 3
    assert mx.metric.create('{"metric": "ce", "eps": 0.5}').eps == 0.5
    assert mx.metric.create('["perplexity", {"ignore_label": 0}]').ignore_label == 0
    with pytest.raises(TypeError, match="metric must be"):
        mx.metric.create(3)


def test_unknown_name_lists_known_ones_and_suggests():
    with pytest.raises(UnknownNameError) as info:
        mx.metric.create("acuracy")
    message = str(info.value)
    assert "available:" in message and "acc" in message and "nll_loss" in message
    assert "Did you mean 'Accuracy'?" in message
    assert isinstance(info.value, ValueError)


def test_module_attributes_are_classes_only():
    assert mx.metric.F1.__name__ == "F1"
    with pytest.raises(AttributeError):
        mx.metric.acc  # an alias, not a class attribute in MXNet  # noqa: B018


# -- register and third-party metrics ----------------------------------------------------


class _Count(mx.metric.EvalMetric):
    """Counts predictions (a user metric without global statistics)."""

    def __init__(self, name="count", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels, preds):
        for pred in preds:
            self.sum_metric += pred.size
            self.num_inst += 1


def test_register_decorator_and_alias(fresh_registry):
    registered = mx.metric.alias("cnt", "howmany")(mx.metric.register(_Count))
    assert registered is _Count
    assert isinstance(mx.metric.create("_COUNT"), _Count)
    assert isinstance(mx.metric.create("HowMany"), _Count)
    assert mx.metric.create(["cnt", "acc"]).get()[0] == ["count", "accuracy"]
    with pytest.raises(TypeError, match="subclasses of EvalMetric"):
        mx.metric.register(dict)


def test_metric_without_global_stats_reports_local_values_globally(ctx):
    metric = _Count()
    metric.update([], [nd([1, 2, 3], ctx)])
    metric.update([], [nd([1], ctx)])
    assert metric.get() == ("count", 2.0)
    assert metric.get_global() == metric.get()
    assert metric.get_global_name_value() == [("count", 2.0)]
    metric.reset_local()
    assert math.isnan(metric.get_global()[1])


THIRD_PARTY_METRIC = """
from rebind import hookimpl
from rebind.metric import EvalMetric, asnumpy


class MaxError(EvalMetric):
    def __init__(self, name="max_error", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        for label, pred in zip(labels, preds):
            worst = float(abs(asnumpy(label) - asnumpy(pred)).max())
            self.sum_metric = max(self.sum_metric, worst)
            self.global_sum_metric = max(self.global_sum_metric, worst)
            self.num_inst = self.global_num_inst = 1


@hookimpl
def rebind_add_metrics(registry):
    registry.add("MaxError", MaxError)
    registry.add("max_err", MaxError)
"""


@pytest.fixture
def install_plugin(tmp_path, monkeypatch, fresh_registry):
    """Fake an installed distribution whose entry point (group 'rebind') is a plugin module."""

    def install(module_name, source):
        (tmp_path / f"{module_name}.py").write_text(textwrap.dedent(source))
        dist = tmp_path / f"{module_name}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {module_name}\nVersion: 1.0\n"
        )
        (dist / "entry_points.txt").write_text(f"[rebind]\n{module_name} = {module_name}\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()
        monkeypatch.delitem(sys.modules, module_name, raising=False)
        registry.reset()

    return install


def test_third_party_metric_through_entry_point(install_plugin, ctx):
    install_plugin("fake_metric_pkg", THIRD_PARTY_METRIC)
    metric = mx.metric.create("MAX_ERR")
    assert type(metric).__name__ == "MaxError"
    assert registry.get_registry("metrics").owner("maxerror") == "fake_metric_pkg"
    metric.update([nd([1, 2, 3], ctx)], [nd([1, 5, 2], ctx)])
    assert metric.get() == ("max_error", 3.0)
    composite = mx.metric.create(["max_err", "mae"])
    assert [m.name for m in composite.metrics] == ["max_error", "mae"]
    assert mx.metric.MaxError is type(metric)


# -- EvalMetric protocol -----------------------------------------------------------------


def test_update_dict_picks_named_outputs_and_labels(ctx):
    metric = mx.metric.Accuracy(output_names=["soft_output"], label_names=["soft_label"])
    preds = {"other": nd([[1, 0]], ctx), "soft_output": nd([[0.2, 0.8], [0.9, 0.1]], ctx)}
    labels = {"soft_label": nd([1, 1], ctx), "ignored": nd([0], ctx)}
    metric.update_dict(labels, preds)
    assert metric.get() == ("accuracy", 0.5)
    with pytest.raises(KeyError, match="soft_label"):
        metric.update_dict({"label": nd([1, 1], ctx)}, preds)


def test_composite_update_dict_filters_then_children_pick(ctx):
    composite = mx.metric.CompositeEvalMetric(
        [mx.metric.Accuracy(output_names=["b"]), mx.metric.MAE()],
        output_names=["b"],
        label_names=["y"],
    )
    preds = {"a": nd([[5.0]], ctx), "b": nd([[0.9, 0.1], [0.2, 0.8]], ctx)}
    labels = {"y": nd([0, 1], ctx), "z": nd([9], ctx)}
    composite.update_dict(labels, preds)
    names, values = composite.get()
    assert names == ["accuracy", "mae"]
    assert values[0] == 1.0
    # MAE broadcasts the (2, 1) label column against the (2, 2) scores
    assert values[1] == pytest.approx((0.9 + 0.1 + 0.8 + 0.2) / 4)


def test_reset_local_keeps_global_and_reset_clears_both(ctx):
    metric = mx.metric.Accuracy()
    metric.update([nd([0, 1], ctx)], [nd([[1, 0], [1, 0]], ctx)])
    metric.reset_local()
    metric.update([nd([1, 1], ctx)], [nd([[0, 1], [0, 1]], ctx)])
    assert metric.get() == ("accuracy", 1.0)
    assert metric.get_global() == ("accuracy", 0.75)
    assert metric.get_global_name_value() == [("accuracy", 0.75)]
    metric.reset()
    assert math.isnan(metric.get()[1]) and math.isnan(metric.get_global()[1])
    assert str(mx.metric.MAE()) == "EvalMetric: {'mae': nan}"


def test_shape_mismatch_errors_name_both_shapes(ctx):
    with pytest.raises(ShapeError, match=r"labels 2 does not match .* predictions 1"):
        mx.metric.Accuracy().update([nd([1], ctx), nd([1], ctx)], [nd([[0, 1]], ctx)])
    with pytest.raises(ValueError, match=r"labels 3 does not match .* predictions 2"):
        mx.metric.Accuracy().update([nd([1, 0, 1], ctx)], [nd([[0, 1], [1, 0]], ctx)])
    with pytest.raises(ValueError, match=r"\(2, 3\) does not match .* \(3, 2\)"):
        mx.metric.PearsonCorrelation().update(
            [nd(np.ones((2, 3)), ctx)], [nd(np.ones((3, 2)), ctx)]
        )
    with pytest.raises(ValueError, match=r"label \(5,\) vs\. prediction \(4, 3\)"):
        mx.metric.Perplexity(None).update([nd(np.ones(5), ctx)], [nd(np.ones((4, 3)), ctx)])
    labels, preds = mx.metric.check_label_shapes(nd([1], ctx), nd([2], ctx), wrap=True)
    assert isinstance(labels, list) and isinstance(preds, list)


# -- custom metrics ----------------------------------------------------------------------


def test_custom_metric_values_and_tuples(ctx):
    def abs_sum(label, pred):
        assert isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)
        return float(np.abs(label - pred).sum()), label.size

    metric = mx.metric.CustomMetric(abs_sum)
    metric.update([nd([1, 2], ctx)], [nd([2, 4], ctx)])
    assert metric.get() == ("abs_sum", 1.5)
    mean = mx.metric.create(lambda label, pred: float(pred.mean()), name="pm")
    mean.update([nd([0], ctx), nd([0], ctx)], [nd([2], ctx), nd([4], ctx)])
    assert mean.get() == ("pm", 3.0)
    assert mean.get_global() == ("pm", 3.0)
    with pytest.raises(NotImplementedError, match="cannot be serialized"):
        mean.get_config()


def test_custom_metric_extra_outputs(ctx):
    metric = mx.metric.CustomMetric(lambda label, pred: float(pred[0]), name="first")
    with pytest.raises(ShapeError):
        metric.update([nd([0], ctx)], [nd([3], ctx), nd([9], ctx)])
    tolerant = mx.metric.CustomMetric(
        lambda label, pred: float(pred[0]), name="first", allow_extra_outputs=True
    )
    tolerant.update([nd([0], ctx)], [nd([3], ctx), nd([9], ctx)])
    assert tolerant.get() == ("first", 3.0)


def test_np_decorator(ctx):
    @mx.metric.np
    def mean_error(label, pred):
        return np.mean(label - pred)

    assert isinstance(mean_error, mx.metric.CustomMetric)
    assert mean_error.name == "mean_error"
    mean_error.update([nd([3, 3], ctx)], [nd([1, 2], ctx)])
    assert mean_error.get()[1] == pytest.approx(1.5)
    named = mx.metric.np(lambda label, pred: 0.0, name="zero", allow_extra_outputs=True)
    named.update([nd([0], ctx)], [nd([1], ctx), nd([2], ctx)])
    assert named.get() == ("zero", 0.0)


# -- configs -----------------------------------------------------------------------------

ROUND_TRIPS = [
    lambda: mx.metric.Accuracy(axis=2, name="acc2", output_names=["out"], label_names=["y"]),
    lambda: mx.metric.CrossEntropy(eps=1e-3),
    lambda: mx.metric.NegativeLogLikelihood(),
    lambda: mx.metric.Perplexity(ignore_label=0),
    lambda: mx.metric.F1(),
    lambda: mx.metric.MCC(),
    lambda: mx.metric.MAE(name="l1"),
    lambda: mx.metric.RMSE(),
    lambda: mx.metric.PearsonCorrelation(),
    lambda: mx.metric.PCC(),
    lambda: mx.metric.Loss(name="myloss"),
    lambda: mx.metric.CompositeEvalMetric([mx.metric.MSE(), mx.metric.Loss()]),
]


@pytest.mark.parametrize("make", ROUND_TRIPS, ids=lambda make: make().get_config()["metric"])
def test_get_config_round_trip(make):
    config = make().get_config()
    rebuilt = mx.metric.create(**config)
    assert rebuilt.get_config() == config
    assert type(rebuilt).__name__ == config["metric"]


def test_topk_config_keeps_mxnet_name_suffix_quirk():
    config = mx.metric.TopKAccuracy(top_k=2).get_config()
    assert config["name"] == "top_k_accuracy_2" and config["top_k"] == 2
    # MXNet appends _<k> to any name, the recorded one included
    assert mx.metric.create(**config).name == "top_k_accuracy_2_2"
    with pytest.raises(ValueError, match="use Accuracy"):
        mx.metric.TopKAccuracy(top_k=1)
