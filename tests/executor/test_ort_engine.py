"""The ONNX Runtime inference engine: when it runs, that it computes what the plan computes,
and that it sees every parameter write made through NDArray."""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.ort_engine import ENGINE_VARIABLE

pytestmark = pytest.mark.filterwarnings("ignore:Data provided by label_shapes")

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def _convnet():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _mlp():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=5, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh")
    return mx.sym.FullyConnected(net, num_hidden=2, name="fc2")


def _module(sym, shape, monkeypatch, engine, label_names=("softmax_label",), **params):
    monkeypatch.setenv(ENGINE_VARIABLE, engine)
    mod = mx.mod.Module(sym, label_names=list(label_names) or None)
    mod.bind([("data", shape)], for_training=False)
    mx.random.seed(7)
    mod.init_params(mx.init.Uniform(0.5))
    if params:
        mod.set_params(params["args"], params["aux"])
    return mod


def _predict(mod, x):
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    return mod.get_outputs()[0].asnumpy()


def _engine(mod):
    return mod._exec_group.execs[0]._engine


@pytest.fixture
def images():
    return np.random.RandomState(0).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)


def test_auto_runs_convolutional_graphs_on_onnxruntime_with_the_plans_values(monkeypatch, images):
    plain = _module(_convnet(), images.shape, monkeypatch, "numpy")
    args, aux = plain.get_params()
    fast = _module(_convnet(), images.shape, monkeypatch, "auto", args=args, aux=aux)
    assert _engine(plain) is None
    expected = _predict(plain, images)
    got = _predict(fast, images)
    assert _engine(fast)._session_ready
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert got.shape == (2, 3) and np.allclose(got.sum(axis=1), 1, atol=1e-6)


def test_auto_leaves_graphs_without_convolution_and_training_modules_to_the_plan(
    monkeypatch, images
):
    mlp = _module(_mlp(), (4, 6), monkeypatch, "auto", label_names=())
    assert _engine(mlp) is None
    monkeypatch.setenv(ENGINE_VARIABLE, "onnxruntime")
    train = mx.mod.Module(_convnet())
    train.bind([("data", images.shape)], [("softmax_label", (2,))])
    assert train._exec_group.execs[0]._engine is None


def test_onnxruntime_setting_takes_any_exportable_inference_graph(monkeypatch):
    x = np.random.RandomState(1).normal(size=(4, 6)).astype(np.float32)
    plain = _module(_mlp(), x.shape, monkeypatch, "numpy", label_names=())
    args, aux = plain.get_params()
    fast = _module(_mlp(), x.shape, monkeypatch, "onnxruntime", (), args=args, aux=aux)
    np.testing.assert_allclose(_predict(fast, x), _predict(plain, x), rtol=1e-5, atol=1e-6)
    assert _engine(fast)._session_ready


def test_parameter_writes_rebuild_the_session(monkeypatch, images):
    mod = _module(_convnet(), images.shape, monkeypatch, "auto")
    first = _predict(mod, images)
    args, aux = mod.get_params()
    args = {k: v * 2 for k, v in args.items()}
    mod.set_params(args, aux)
    second = _predict(mod, images)
    assert not np.allclose(first, second)
    plain = _module(_convnet(), images.shape, monkeypatch, "numpy", args=args, aux=aux)
    np.testing.assert_allclose(second, _predict(plain, images), rtol=1e-5, atol=1e-6)
    # a write through the bound array itself, and an in-place update, are seen too
    executor = mod._exec_group.execs[0]
    executor.arg_dict["fc_bias"][:] = 5.0
    executor.arg_dict["fc_weight"] *= 0
    np.testing.assert_allclose(_predict(mod, images), np.full((2, 3), 1 / 3), rtol=1e-6)


def test_unexportable_graph_warns_once_and_runs_the_plan(monkeypatch):
    data = mx.sym.Variable("data")
    sym = mx.sym.linalg.potrf(mx.sym.linalg.syrk(data, alpha=1.0) + mx.sym.eye(3))
    x = np.random.RandomState(2).normal(size=(3, 3)).astype(np.float32)
    monkeypatch.setenv(ENGINE_VARIABLE, "onnxruntime")
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind([("data", x.shape)], for_training=False)
    mod.init_params()
    with pytest.warns(RuntimeWarning, match="cannot run this graph"):
        got = _predict(mod, x)
    assert _engine(mod) is None
    a = x @ x.T + np.eye(3)
    np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=1e-5)


def test_a_bad_setting_names_the_choices(monkeypatch, images):
    monkeypatch.setenv(ENGINE_VARIABLE, "tensorrt")
    mod = mx.mod.Module(_convnet())
    with pytest.raises(ValueError, match="auto, numpy, onnxruntime"):
        mod.bind([("data", images.shape)], for_training=False)


def test_sessions_spin_on_a_free_machine_and_sleep_on_a_busy_one(monkeypatch, images):
    from rebind.executor import ort_engine

    mod = _module(_convnet(), images.shape, monkeypatch, "auto")
    monkeypatch.setattr(ort_engine, "engine_threads", lambda: 2)
    monkeypatch.setattr(ort_engine, "compute_threads", lambda: 2)  # free: BLAS gets both
    free = _predict(mod, images)
    monkeypatch.setattr(ort_engine, "compute_threads", lambda: 1)  # busy: BLAS gets one
    busy = _predict(mod, images)
    assert sorted(_engine(mod)._sessions) == [(2, False), (2, True)]
    np.testing.assert_allclose(free, busy, rtol=1e-6)
    # a parameter write drops every session: the next pass builds the one it needs
    mod._exec_group.execs[0].arg_dict["fc_bias"][:] = 0.0
    _predict(mod, images)
    assert sorted(_engine(mod)._sessions) == [(2, False)]


def test_a_failing_session_run_falls_back_to_the_plan(monkeypatch, images):
    plain = _module(_convnet(), images.shape, monkeypatch, "numpy")
    args, aux = plain.get_params()
    mod = _module(_convnet(), images.shape, monkeypatch, "onnxruntime", args=args, aux=aux)
    _predict(mod, images)
    engine = _engine(mod)

    class Broken:
        def run(self, *args):
            raise RuntimeError("no kernel for this node")

    engine._sessions = {key: Broken() for key in engine._sessions}
    with pytest.warns(RuntimeWarning, match="no kernel for this node"):
        got = _predict(mod, images)
    assert _engine(mod) is None
    np.testing.assert_allclose(got, _predict(plain, images), rtol=1e-5, atol=1e-6)


def _depthwise_net(grouped=True, relu=True):
    """Convolution + BatchNorm (+ relu) twice, the second depthwise (MobileNet's block)."""
    net = mx.sym.Variable("data")
    for name, groups in (("full", 1), ("dw", 4 if grouped else 1)):
        net = mx.sym.Convolution(
            net, num_filter=4, kernel=(3, 3), pad=(1, 1), num_group=groups, name=f"{name}_conv"
        )
        net = mx.sym.BatchNorm(net, fix_gamma=False, name=f"{name}_bn")
        if relu or name == "full":
            net = mx.sym.Activation(net, act_type="relu", name=f"{name}_relu")
    net = mx.sym.Pooling(net, kernel=(1, 1), global_pool=True, pool_type="avg", name="pool")
    return mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=3, name="fc")


def test_auto_leaves_fused_depthwise_networks_at_large_batches_to_onednn(monkeypatch):
    """ort_engine.auto: every convolution one oneDNN call with BatchNorm and relu, some
    depthwise, a batch of ONEDNN_BATCH or more: the plan (measured faster there)."""
    from rebind.executor.ort_engine import ONEDNN_BATCH
    from rebind.ops import dnnl_lib

    if dnnl_lib.library() is None:
        pytest.skip(f"oneDNN did not load: {dnnl_lib.missing_reason()}")
    big, small = (ONEDNN_BATCH, 3, 8, 8), (ONEDNN_BATCH // 4, 3, 8, 8)
    plan = _module(_depthwise_net(), big, monkeypatch, "auto", label_names=())
    assert _engine(plan) is None
    assert [k for k, _, _ in plan._exec_group.execs[0]._plan.optimizations].count(
        "conv_batchnorm"
    ) == 2
    assert _engine(_module(_depthwise_net(), small, monkeypatch, "auto", label_names=()))
    for net in (_depthwise_net(grouped=False), _depthwise_net(relu=False)):
        assert _engine(_module(net, big, monkeypatch, "auto", label_names=()))
    # the plan computes what ONNX Runtime computes
    x = np.random.RandomState(1).uniform(-1, 1, big).astype(np.float32)
    args, aux = plan.get_params()
    ort = _module(_depthwise_net(), big, monkeypatch, "onnxruntime", (), args=args, aux=aux)
    expected = _predict(ort, x)
    np.testing.assert_allclose(_predict(plan, x), expected, rtol=1e-5, atol=1e-5)
