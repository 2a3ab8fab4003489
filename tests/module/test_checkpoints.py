"""The golden checkpoints written by MXNet 1.9.1 (mlp, lenet_bn): load, predict, save, retrain."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import rebind as mx

CASES = ("mlp", "lenet_bn")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("REBIND_PROGRESS", "0")


def _case(golden, name):
    cases = json.loads((golden / "manifest.json").read_text())["categories"]["checkpoints"]
    (case,) = [c for c in cases["cases"] if c["id"] == name]
    prefix = str(golden / case["dir"] / case["prefix"])
    return case, prefix, np.load(golden / case["data_file"])


def _eval_iter(data, ctx, batch=8):
    return mx.io.NDArrayIter(
        mx.nd.array(data["eval.data"], ctx=ctx),
        mx.nd.array(data["eval.softmax_label"], ctx=ctx),
        batch_size=batch,
    )


def _tolerance(case, ctx):
    """MXNet's reload difference (a few float32 ulps) on the CPU; GPU kernels sum differently."""
    if ctx is not None and ctx.device_type != "cpu":
        return 1e-5
    return max(case["reload_check_maxdiff"], 1e-7) * 4


@pytest.mark.parametrize("name", CASES)
def test_module_load_reproduces_recorded_predictions(golden, ctx, name):
    case, prefix, data = _case(golden, name)
    mod = mx.mod.Module.load(prefix, case["epoch"], context=ctx)
    assert mod.params_initialized and not mod.binded
    evaluation = _eval_iter(data, ctx)
    mod.bind(evaluation.provide_data, evaluation.provide_label, for_training=False)
    out = mod.predict(evaluation)
    np.testing.assert_allclose(
        out.asnumpy(), data["eval.output.0"], rtol=0, atol=_tolerance(case, ctx)
    )


@pytest.mark.parametrize("name", CASES)
def test_load_checkpoint_and_forward(golden, ctx, name):
    case, prefix, data = _case(golden, name)
    symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, case["epoch"])
    keys = sorted([f"arg:{k}" for k in arg_params] + [f"aux:{k}" for k in aux_params])
    assert keys == case["params_keys"]
    x = data["eval.data"]
    mod = mx.mod.Module(symbol, context=ctx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bound without labels: MXNet warns too
        mod.bind([("data", x.shape)], for_training=False)
    mod.set_params(arg_params, aux_params)
    mod.forward(mx.io.DataBatch([mx.nd.array(x, ctx=ctx)]), is_train=False)
    np.testing.assert_allclose(
        mod.get_outputs()[0].asnumpy(), data["eval.output.0"], rtol=0, atol=_tolerance(case, ctx)
    )


@pytest.mark.parametrize("name", CASES)
def test_save_checkpoint_reads_back_identically(golden, tmp_path, name):
    case, prefix, data = _case(golden, name)
    mod = mx.mod.Module.load(prefix, case["epoch"])
    evaluation = _eval_iter(data, None)
    mod.bind(evaluation.provide_data, evaluation.provide_label, for_training=False)
    ours = str(tmp_path / name)
    mod.save_checkpoint(ours, case["epoch"])
    theirs, saved = (
        mx.nd.load(f"{prefix}-{case['epoch']:04d}.params"),
        mx.nd.load(f"{ours}-{case['epoch']:04d}.params"),
    )
    assert sorted(saved) == sorted(theirs)
    for key, value in theirs.items():
        assert saved[key].dtype == value.dtype
        np.testing.assert_array_equal(saved[key].asnumpy(), value.asnumpy(), err_msg=key)
    with open(f"{prefix}-symbol.json") as mine, open(f"{ours}-symbol.json") as written:
        assert written.read() == mine.read()


def _fix_gamma_params(symbol_file):
    """Gammas of BatchNorms with fix_gamma (MXNet's default)."""
    nodes = json.loads(open(symbol_file).read())["nodes"]
    return {
        f"arg:{n['name']}_gamma"
        for n in nodes
        if n["op"] == "BatchNorm" and (n.get("attrs") or {}).get("fix_gamma", "True") == "True"
    }


def _retrain(golden, ctx, name):
    case, prefix, data = _case(golden, name)
    symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, 0)
    train = mx.io.NDArrayIter(
        mx.nd.array(data["train.data"], ctx=ctx),
        mx.nd.array(data["train.softmax_label"], ctx=ctx),
        batch_size=case["data_shapes"]["data"][0],
    )
    mod = mx.mod.Module(symbol, context=ctx)
    metrics, last = [], {}
    mod.fit(
        train,
        num_epoch=case["epoch"],
        arg_params=arg_params,
        aux_params=aux_params,
        optimizer=case["info"]["optimizer"],
        optimizer_params=case["info"]["optimizer_params"],
        batch_end_callback=lambda p: last.update(metric=p.eval_metric),
        epoch_end_callback=lambda *_: metrics.append(last["metric"].get_name_value()),
    )
    return case, data, mod, metrics


@pytest.mark.parametrize("name", CASES)
def test_training_from_the_initial_params_reproduces_mxnet(golden, ctx, name):
    case, data, mod, metrics = _retrain(golden, ctx, name)
    assert mod._optimizer.rescale_grad == case["info"]["module_rescale_grad"]
    recorded = [[tuple(pair) for pair in epoch] for epoch in case["info"]["train_metric_per_epoch"]]
    assert metrics == recorded
    arg_params, aux_params = mod.get_params()
    skipped = _fix_gamma_params(golden / case["symbol_file"])
    for key in case["params_keys"]:
        if key in skipped:
            continue
        kind, param = key.split(":")
        got = (arg_params if kind == "arg" else aux_params)[param].asnumpy()
        np.testing.assert_allclose(
            got, data[f"params_final.{key}"], rtol=1e-5, atol=2e-6, err_msg=key
        )


def test_fix_gamma_gamma_after_training_matches_mxnet(golden):
    case, data, mod, _ = _retrain(golden, mx.cpu(), "lenet_bn")
    got = mod.get_params()[0]["bn2_gamma"].asnumpy()
    np.testing.assert_allclose(got, data["params_final.arg:bn2_gamma"], rtol=1e-5, atol=2e-6)


def test_checkpoint_with_optimizer_states_continues_training(golden, tmp_path):
    case, prefix, data = _case(golden, "mlp")
    train = mx.io.NDArrayIter(data["train.data"], data["train.softmax_label"], batch_size=8)
    params = case["info"]["optimizer_params"]
    symbol, arg_params, _ = mx.model.load_checkpoint(prefix, 0)
    straight = mx.mod.Module(symbol)
    straight.fit(train, num_epoch=3, arg_params=arg_params, optimizer_params=params)
    first = mx.mod.Module(symbol)
    train.reset()
    first.fit(train, num_epoch=1, arg_params=arg_params, optimizer_params=params)
    first.save_checkpoint(str(tmp_path / "ck"), 1, save_optimizer_states=True)
    second = mx.mod.Module.load(str(tmp_path / "ck"), 1, load_optimizer_states=True)
    train.reset()
    with pytest.warns(UserWarning, match="already initialized"):  # as in MXNet
        second.fit(train, num_epoch=3, begin_epoch=1, optimizer_params=params)
    for name, value in straight.get_params()[0].items():
        np.testing.assert_array_equal(second.get_params()[0][name].asnumpy(), value.asnumpy())


def test_mxnet_module_states_file_continues_training_as_mxnet(golden):
    """A ``.states`` pickle written by MXNet's Module is read (safely) and used."""
    _, prefix, data = _case(golden, "mlp")
    recorded = Path(__file__).parent / "data"
    mod = mx.mod.Module.load(prefix, 3)
    mod.bind([("data", (8, 12))], [("softmax_label", (8,))])
    before = mx.nd.load(str(recorded / "mlp_momentum_before.params"))
    mod.set_params({k[4:]: v for k, v in before.items()}, {})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.load_optimizer_states(str(recorded / "mlp_momentum.states"))
    assert sorted(mod._updater.states) == [0, 1, 2, 3, 4, 5]
    batch = mx.io.DataBatch(
        [mx.nd.array(data["train.data"][:8])], [mx.nd.array(data["train.softmax_label"][:8])]
    )
    mod.forward_backward(batch)
    mod.update()
    after = mx.nd.load(str(recorded / "mlp_momentum_after.params"))
    for key, value in after.items():
        np.testing.assert_allclose(
            mod.get_params()[0][key[4:]].asnumpy(),
            value.asnumpy(),
            rtol=1e-5,
            atol=1e-6,
            err_msg=key,
        )
