"""Several contexts in one Module: sliced batches, merged outputs, kvstore-summed gradients."""

import numpy as np
import pytest

import rebind as mx
from rebind.module.slicing import split_input_slice

from .core_nets import mlp, random_params, separable, to_nd

TWO = [mx.cpu(0), mx.cpu(1)]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("REBIND_PROGRESS", "0")


def _train(
    context,
    steps=4,
    work_load_list=None,
    kvstore="local",
    optimizer_params=None,
    inputs_need_grad=False,
):
    x, y = separable(16 * steps, seed=3)
    mod = mx.mod.Module(mlp(), context=context, work_load_list=work_load_list)
    mod.bind([("data", (16, 6))], [("softmax_label", (16,))], inputs_need_grad=inputs_need_grad)
    mod.init_params(arg_params=to_nd(random_params()))
    mod.init_optimizer(
        kvstore=kvstore,
        optimizer="sgd",
        optimizer_params=optimizer_params or {"learning_rate": 0.2, "momentum": 0.9, "wd": 0.001},
    )
    for step in range(steps):
        rows = slice(16 * step, 16 * (step + 1))
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x[rows])], [mx.nd.array(y[rows])]))
        mod.update()
    return mod


def _params(mod):
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def _assert_same(a, b):
    for name, value in _params(a).items():
        np.testing.assert_allclose(value, _params(b)[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("work_load_list", [None, [1, 3]])
@pytest.mark.parametrize("kvstore", ["local", "device"])
def test_two_contexts_train_like_one(work_load_list, kvstore):
    one = _train(mx.cpu(0))
    two = _train(TWO, work_load_list=work_load_list, kvstore=kvstore)
    assert one._kvstore is None and two._kvstore.type == kvstore and two._update_on_kvstore
    _assert_same(one, two)
    merged = two.get_outputs()[0]
    np.testing.assert_allclose(
        merged.asnumpy(), one.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6
    )


def test_local_updates_after_summing_gradients(monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    one = _train(mx.cpu(0))
    two = _train(TWO, work_load_list=[3, 1])
    assert not two._update_on_kvstore and two._updater is not None
    assert sorted(two._optimizer.idx2name) == list(range(8))  # i * devices + k
    assert two._optimizer.idx2name[1] == "fc1_weight" and two._optimizer.idx2name[2] == "fc1_bias"
    _assert_same(one, two)


def test_slices_follow_the_work_load():
    mod = _train(TWO, steps=1, work_load_list=[1, 3])
    group = mod._exec_group
    assert group.slices == [slice(0, 4), slice(4, 16)]
    per_device = mod.get_outputs(merge_multi_context=False)[0]
    assert [o.shape for o in per_device] == [(4, 3), (12, 3)]
    assert [o.context for o in per_device] == TWO
    assert mod.get_outputs()[0].shape == (16, 3)
    assert [len(block) for block in group.param_arrays] == [2, 2, 2, 2]


def test_input_gradients_are_merged():
    one = _train(mx.cpu(0), steps=1, inputs_need_grad=True)
    two = _train(TWO, steps=1, work_load_list=[1, 3], inputs_need_grad=True)
    np.testing.assert_allclose(
        two.get_input_grads()[0].asnumpy(), one.get_input_grads()[0].asnumpy(), rtol=1e-5, atol=1e-6
    )
    assert [g.shape for g in two.get_input_grads(merge_multi_context=False)[0]] == [(4, 6), (12, 6)]


def test_fit_and_score_with_two_contexts_equal_one():
    x, y = separable(64, seed=5)
    results = []
    for context in (mx.cpu(0), TWO):
        data = mx.io.NDArrayIter(x, y, batch_size=16)
        mod = mx.mod.Module(mlp(), context=context)
        mod.fit(
            data,
            num_epoch=3,
            arg_params=to_nd(random_params()),
            optimizer_params={"learning_rate": 0.3},
        )
        results.append((mod, mod.score(data, "ce")))
    (one, score_one), (two, score_two) = results
    _assert_same(one, two)
    assert score_one[0][1] == pytest.approx(score_two[0][1], rel=1e-5)


def test_split_input_slice():
    assert split_input_slice(10, [1, 1]) == [slice(0, 5), slice(5, 10)]
    assert split_input_slice(10, [1, 1, 1]) == [slice(0, 3), slice(3, 6), slice(6, 10)]
    assert split_input_slice(7, [2, 1]) == [slice(0, 5), slice(5, 7)]
    with pytest.raises(ValueError, match="empty"):
        split_input_slice(2, [1, 1, 1])


def test_work_load_list_must_match_contexts():
    with pytest.raises(ValueError, match="work_load_list"):
        mx.mod.Module(mlp(), context=TWO, work_load_list=[1])


def test_batchnorm_statistics_are_averaged_over_contexts():
    data = mx.sym.Variable("data")
    out = mx.sym.BatchNorm(data, name="bn", fix_gamma=False, momentum=0.0)
    mod = mx.mod.Module(out, label_names=None, context=TWO)
    mod.bind([("data", (4, 2))])
    mod.init_params()
    batch = np.array([[0, 0], [2, 2], [10, 10], [12, 12]], np.float32)
    mod.forward(mx.io.DataBatch([mx.nd.array(batch)]), is_train=True)
    mod.backward([mx.nd.ones((4, 2))])  # MXNet moves the statistics in backward
    mean = mod.get_params()[1]["bn_moving_mean"].asnumpy()
    np.testing.assert_allclose(mean, [6.0, 6.0])  # (1 + 11) / 2: each device saw half
