"""fit(resume_from=...): an interrupted run continues exactly as an uninterrupted one."""

import json

import numpy as np
import pytest

import rebind as mx
from rebind.errors import FormatError
from rebind.module import ResumeCheckpoint, save_resume_point

from .core_nets import mlp, separable

X, Y = separable(60, seed=11)


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("REBIND_PROGRESS", "0")


def _run(prefix, num_epoch, ctx, context=None, resume=None, optimizer="sgd"):
    """A fresh 'process': seed, data (shuffled), module with dropout, scheduler, evaluation."""
    mx.random.seed(7)
    np.random.seed(7)  # NDArrayIter shuffles with NumPy's global generator, as MXNet's
    train = mx.io.NDArrayIter(
        mx.nd.array(X, ctx=ctx), mx.nd.array(Y, ctx=ctx), batch_size=16, shuffle=True
    )
    evaluation = mx.io.NDArrayIter(
        mx.nd.array(X[:30], ctx=ctx), mx.nd.array(Y[:30], ctx=ctx), batch_size=16, shuffle=True
    )
    mod = mx.mod.Module(mlp(hidden=12, dropout=0.3), context=context or ctx)
    params = {"learning_rate": 0.1, "lr_scheduler": mx.lr_scheduler.FactorScheduler(3, 0.8)}
    if optimizer == "sgd":
        params["momentum"] = 0.9
    with pytest.warns(UserWarning, match="overwritten"):  # scheduler's base lr, as MXNet warns
        mod.fit(
            train,
            eval_data=evaluation,
            num_epoch=num_epoch,
            optimizer=optimizer,
            optimizer_params=params,
            initializer=mx.init.Xavier(),
            epoch_end_callback=ResumeCheckpoint(mod, prefix),
            resume_from=resume,
        )
    return mod


def _weights(mod):
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_interrupted_run_continues_exactly(tmp_path, ctx, optimizer):
    straight = _run(str(tmp_path / "a"), 5, ctx, optimizer=optimizer)
    _run(str(tmp_path / "b"), 2, ctx, optimizer=optimizer)  # "interrupted" after epoch 2
    resumed = _run(str(tmp_path / "b"), 5, ctx, resume=str(tmp_path / "b"), optimizer=optimizer)
    assert resumed._optimizer.num_update == straight._optimizer.num_update
    for name, value in _weights(straight).items():
        np.testing.assert_array_equal(_weights(resumed)[name], value, err_msg=name)


def test_resume_with_two_contexts_and_kvstore(tmp_path):
    context = [mx.cpu(0), mx.cpu(1)]
    straight = _run(str(tmp_path / "a"), 4, None, context=context)
    _run(str(tmp_path / "b"), 1, None, context=context)
    resumed = _run(str(tmp_path / "b"), 4, None, context=context, resume=str(tmp_path / "b"))
    assert resumed._update_on_kvstore
    for name, value in _weights(straight).items():
        np.testing.assert_array_equal(_weights(resumed)[name], value, err_msg=name)


def test_plain_checkpoint_resume_is_not_exact(tmp_path):
    """Control: parameters and begin_epoch alone (MXNet's way) do not continue exactly."""
    straight = _run(str(tmp_path / "a"), 4, None)
    _run(str(tmp_path / "b"), 2, None)
    mx.random.seed(7)
    np.random.seed(7)  # NDArrayIter shuffles with NumPy's global generator, as MXNet's
    train = mx.io.NDArrayIter(X, Y, batch_size=16, shuffle=True)
    _, arg_params, aux_params = mx.model.load_checkpoint(str(tmp_path / "b"), 2)
    mod = mx.mod.Module(mlp(hidden=12, dropout=0.3))
    with pytest.warns(UserWarning):
        mod.fit(
            train,
            num_epoch=4,
            begin_epoch=2,
            arg_params=arg_params,
            optimizer_params={
                "learning_rate": 0.1,
                "momentum": 0.9,
                "lr_scheduler": mx.lr_scheduler.FactorScheduler(3, 0.8),
            },
        )
    assert not np.array_equal(_weights(mod)["fc1_weight"], _weights(straight)["fc1_weight"])


def test_resume_point_files_and_choice_of_epoch(tmp_path):
    prefix = str(tmp_path / "r")
    _run(prefix, 3, None)
    names = sorted(p.name for p in tmp_path.iterdir())
    for epoch in (1, 2, 3):
        assert {
            f"r-{epoch:04d}.params",
            f"r-{epoch:04d}.states",
            f"r-{epoch:04d}.resume.json",
        } <= set(names)
    record = json.loads((tmp_path / "r-0002.resume.json").read_text())
    assert record["epoch"] == 2 and record["format"] == "rebind-resume-point"
    assert record["num_update"] == 8 and sorted(record["data_state"]["rows"]) == list(range(60))
    assert len(record["host_rng"]["numpy"][1]) == 624  # NumPy's global Mersenne Twister
    epochs = []
    mx.random.seed(7)
    np.random.seed(7)  # NDArrayIter shuffles with NumPy's global generator, as MXNet's
    train = mx.io.NDArrayIter(X, Y, batch_size=16, shuffle=True)
    mod = mx.mod.Module(mlp(hidden=12, dropout=0.3))
    mod.fit(
        train,
        num_epoch=4,
        resume_from=(prefix, 1),
        epoch_end_callback=lambda epoch, *_: epochs.append(epoch),
    )
    assert epochs == [1, 2, 3]
    newest = mx.mod.Module(mlp(hidden=12, dropout=0.3))
    newest.fit(
        train,
        num_epoch=4,
        resume_from=prefix,
        epoch_end_callback=lambda epoch, *_: epochs.append(epoch),
    )
    assert epochs[-1:] == [3] and len(epochs) == 4


def test_missing_and_foreign_resume_points(tmp_path):
    train = mx.io.NDArrayIter(X, Y, batch_size=16)
    with pytest.raises(FileNotFoundError, match="ResumeCheckpoint"):
        mx.mod.Module(mlp()).fit(train, num_epoch=1, resume_from=str(tmp_path / "none"))
    (tmp_path / "x-0001.resume.json").write_text('{"format": "other"}')
    with pytest.raises(FormatError, match="resume point"):
        mx.mod.Module(mlp()).fit(train, num_epoch=1, resume_from=str(tmp_path / "x"))


def test_save_resume_point_outside_fit_and_period(tmp_path):
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (16, 6))], [("softmax_label", (16,))])
    mod.init_params()
    mod.init_optimizer()
    save_resume_point(mod, str(tmp_path / "p"), 4)
    assert json.loads((tmp_path / "p-0004.resume.json").read_text())["data_state"] is None
    callback = ResumeCheckpoint(mod, str(tmp_path / "q"), period=2)
    callback(0)
    assert not (tmp_path / "q-0001.resume.json").exists()
    callback(1)
    assert (tmp_path / "q-0002.resume.json").exists()


def test_random_state_round_trip(ctx):
    mx.random.seed(3)
    mx.nd.random.uniform(shape=(4,), ctx=ctx)
    state = json.loads(json.dumps(mx.random.get_state()))
    first = mx.nd.random.normal(shape=(5,), ctx=ctx).asnumpy()
    mx.nd.random.uniform(shape=(7,), ctx=ctx)
    mx.random.set_state(state)
    np.testing.assert_array_equal(mx.nd.random.normal(shape=(5,), ctx=ctx).asnumpy(), first)
