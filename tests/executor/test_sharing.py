"""Executor memory: simple_bind allocation and sharing, reshape, releases, group2ctx."""

import gc
import weakref

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError


def _fc(hidden=3):
    return mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=hidden, name="fc")


def _net():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    act = mx.sym.Activation(fc1, act_type="tanh", name="act")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.BatchNorm(fc2, name="bn", fix_gamma=False)


def _shares(a, b):
    return np.shares_memory(a._data, b._data)


# -- simple_bind ---------------------------------------------------------------------


def test_simple_bind_allocates_from_shapes_and_types(ctx):
    executor = _net().simple_bind(
        ctx,
        data=(2, 5),
        type_dict={"data": np.float64},
        grad_req={"fc1_weight": "write", "fc2_bias": "add"},
    )
    shapes = {k: v.shape for k, v in executor.arg_dict.items()}
    assert shapes == {
        "data": (2, 5),
        "fc1_weight": (4, 5),
        "fc1_bias": (4,),
        "fc2_weight": (3, 4),
        "fc2_bias": (3,),
        "bn_gamma": (3,),
        "bn_beta": (3,),
    }
    assert {v.shape for v in executor.aux_dict.values()} == {(3,)}
    assert sorted(executor.grad_dict) == ["fc1_weight", "fc2_bias"]
    arrays = [
        *executor.arg_arrays,
        *executor.grad_dict.values(),
        *executor.aux_arrays,
        *executor.outputs,
    ]
    assert {a.dtype for a in arrays} == {np.float64}
    assert all(a.context == ctx for a in arrays)
    assert executor._grad_reqs == ["null", "write", "null", "null", "add", "null", "null"]


def test_shared_exec_shares_named_parameters_and_aux_states():
    first = _net().simple_bind(mx.cpu(), data=(4, 5))
    params = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "bn_gamma", "bn_beta"]
    second = _net().simple_bind(mx.cpu(), data=(2, 5), shared_exec=first, shared_arg_names=params)
    for name in params:
        assert second.arg_dict[name] is first.arg_dict[name]
        assert second.grad_dict[name] is first.grad_dict[name]
    for name in first.aux_dict:
        assert second.aux_dict[name] is first.aux_dict[name]
    assert second.arg_dict["data"] is not first.arg_dict["data"]
    alone = _net().simple_bind(mx.cpu(), data=(4, 5), shared_exec=first)
    assert alone.arg_dict["fc1_weight"] is not first.arg_dict["fc1_weight"]  # names decide
    with pytest.raises(ShapeError, match="shared_exec's 'fc1_weight' is \\(4, 5\\)"):
        _net().simple_bind(mx.cpu(), data=(4, 6), shared_exec=first, shared_arg_names=params)


def test_shared_buffer_reuses_and_carves_memory():
    buffer = {}
    big = _fc().simple_bind(mx.cpu(), data=(4, 4), shared_buffer=buffer)
    assert sorted(buffer) == [
        "data",
        "fc_bias",
        "fc_weight",
        "grad of data",
        "grad of fc_bias",
        "grad of fc_weight",
    ]
    assert buffer["data"] is big.arg_dict["data"]
    small = _fc().simple_bind(mx.cpu(), data=(2, 4), shared_buffer=buffer)
    assert small.arg_dict["fc_weight"] is big.arg_dict["fc_weight"]
    assert small.arg_dict["data"].shape == (2, 4)
    big.arg_dict["data"][:] = 7
    assert small.arg_dict["data"].asnumpy().sum() == 56  # carved from the bigger array
    bigger = _fc().simple_bind(mx.cpu(), data=(8, 4), shared_buffer=buffer)
    assert buffer["data"] is bigger.arg_dict["data"] and buffer["data"].shape == (8, 4)


# -- reshape ------------------------------------------------------------------------------


def test_reshape_shares_unchanged_arrays_and_carves_smaller_ones():
    executor = _net().simple_bind(mx.cpu(), data=(4, 5))
    executor.arg_dict["data"][:] = 3
    smaller = executor.reshape(data=(2, 5))
    for name in ("fc1_weight", "fc2_bias", "bn_gamma"):
        assert smaller.arg_dict[name] is executor.arg_dict[name]
        assert smaller.grad_dict[name] is executor.grad_dict[name]
    for name in executor.aux_dict:
        assert smaller.aux_dict[name] is executor.aux_dict[name]
    assert smaller.arg_dict["data"].shape == (2, 5)
    assert _shares(smaller.arg_dict["data"], executor.arg_dict["data"])
    assert smaller.arg_dict["data"].asnumpy().sum() == 30
    assert smaller.outputs[0].shape == (2, 3)
    smaller.forward(is_train=True)
    smaller.backward(mx.nd.ones((2, 3)))


def test_reshape_limits():
    executor = _fc().simple_bind(mx.cpu(), data=(4, 4))
    with pytest.raises(ShapeError, match="'data' would grow from \\(4, 4\\) to \\(8, 4\\)"):
        executor.reshape(data=(8, 4))
    grown = executor.reshape(data=(8, 4), allow_up_sizing=True)
    assert grown.arg_dict["data"].shape == (8, 4)
    assert not _shares(grown.arg_dict["data"], executor.arg_dict["data"])
    with pytest.raises(ShapeError, match="'fc_weight' would change from \\(3, 4\\) to \\(3, 2\\)"):
        executor.reshape(data=(4, 2))
    narrowed = executor.reshape(data=(4, 2), partial_shaping=True)
    assert narrowed.arg_dict["fc_weight"].shape == (3, 2)


# -- releases -------------------------------------------------------------------------------


def test_plan_releases_intermediates_after_their_last_use():
    executor = _net().simple_bind(mx.cpu(), data=(2, 5))
    plan = executor._plan
    released = {slot for step in plan.steps for slot in step.release}
    kept = set(plan.head_slots) | set(plan.arg_slots) | set(plan.aux_slots)
    assert released and not released & kept
    assert len(released) == plan.num_slots - len(kept)  # every intermediate goes


def test_inference_forward_keeps_only_the_heads():
    executor = _net().simple_bind(mx.cpu(), data=(2, 5))
    intermediates = []

    def watch(name, array):
        if name in ("fc1_output", "act_output"):
            intermediates.append(weakref.ref(array._data))

    executor.set_monitor_callback(watch)
    executor.forward()
    gc.collect()
    assert len(intermediates) == 2 and all(ref() is None for ref in intermediates)
    assert executor.outputs[0].shape == (2, 3)


# -- group2ctx --------------------------------------------------------------------------------


def _grouped():
    data = mx.sym.var("data")
    with mx.AttrScope(ctx_group="dev1"):
        act = mx.sym.Activation(
            mx.sym.FullyConnected(data, num_hidden=4, name="fc1"), act_type="tanh", name="act"
        )
    with mx.AttrScope(ctx_group="dev2"):
        return mx.sym.FullyConnected(act, num_hidden=3, name="fc2")


def test_group2ctx_places_nodes_and_matches_one_context():
    contexts = {"dev1": mx.cpu(0), "dev2": mx.cpu(1)}
    split = _grouped().simple_bind(mx.cpu(0), data=(2, 5), group2ctx=contexts)
    single = _grouped().simple_bind(mx.cpu(0), data=(2, 5))
    placed = {name: array.context for name, array in split.arg_dict.items()}
    assert placed == {
        "data": mx.cpu(0),
        "fc1_weight": mx.cpu(0),
        "fc1_bias": mx.cpu(0),
        "fc2_weight": mx.cpu(1),
        "fc2_bias": mx.cpu(1),
    }
    assert split.outputs[0].context == mx.cpu(1)
    rng = np.random.default_rng(7)
    for name, array in single.arg_dict.items():
        array[:] = rng.standard_normal(array.shape)
        split.arg_dict[name][:] = array.asnumpy()
    head = rng.standard_normal((2, 3))
    for executor, ctx in ((single, mx.cpu(0)), (split, mx.cpu(1))):
        executor.forward(is_train=True)
        executor.backward(mx.nd.array(head, ctx=ctx))
    np.testing.assert_allclose(split.outputs[0].asnumpy(), single.outputs[0].asnumpy(), rtol=1e-6)
    for name, grad in single.grad_dict.items():
        assert split.grad_dict[name].context == placed[name]
        np.testing.assert_allclose(split.grad_dict[name].asnumpy(), grad.asnumpy(), rtol=1e-6)
