"""``mx.nd.<op>`` and NDArray methods run the same kernels as the executor."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ContextMismatchError
from tests.conftest import GOLDEN
from tests.ops.harness import assert_close, golden_cases

INFER_CASES = sorted(
    cid
    for cid, case in golden_cases().items()
    if "infer" in case["modes"] and not case.get("random")
)
# cases MXNet could only record through mx.nd (the optimizer updates): the call
# as users write it, out= included, and the states it changes in place
IMPERATIVE_CASES = sorted(cid for cid, case in golden_cases().items() if case.get("imperative"))
# MXNet's MKLDNN inference kernel normalises this case over the last axis while
# every other kernel (and its own training pass) uses the flattened view; rebind
# follows the latter in both modes (README, "Differences from MXNet").
USE_TRAIN_OUTPUT = {"softmaxoutput_4d_no_multi_output"}


@pytest.mark.parametrize("case_id", INFER_CASES)
def test_golden_case_through_imperative_call(case_id, ctx):
    case = golden_cases()[case_id]
    with np.load(GOLDEN / case["file"]) as npz:
        data = {key: npz[key] for key in npz.files}
    inputs = [
        mx.nd.array(data[f"arg.{n}"], ctx=ctx, dtype=data[f"arg.{n}"].dtype)
        for n in case["arguments"]
    ]
    aux = [
        mx.nd.array(data[f"aux.{n}"], ctx=ctx, dtype=data[f"aux.{n}"].dtype)
        for n in case["aux_states"]
    ]
    function = getattr(mx.nd, case["op"])
    # an op without inputs (arange, ones, full) creates on the current context
    with ctx:
        result = function(*inputs, *aux, **case["attrs"])
    outputs = result if isinstance(result, list) else [result]
    for i in range(len(case["out_shapes"])):
        expected = data.get(f"out_infer.{i}", data.get(f"out.{i}"))
        if case_id in USE_TRAIN_OUTPUT:
            expected = data[f"out.{i}"]
        assert outputs[i].context == ctx
        assert_close(outputs[i].asnumpy(), expected, f"{case_id}: output {i}")


@pytest.mark.parametrize("case_id", IMPERATIVE_CASES)
def test_imperative_golden_case_as_users_call_it(case_id, ctx):
    case = golden_cases()[case_id]
    with np.load(GOLDEN / case["file"]) as npz:
        data = {key: npz[key] for key in npz.files}
    arrays = {
        n: mx.nd.array(data[f"arg.{n}"], ctx=ctx, dtype=data[f"arg.{n}"].dtype)
        for n in case["arguments"]
    }
    kwargs = dict(case["attrs"])
    named = dict(arrays)
    for name in case.get("targets", []):
        named[name] = mx.nd.array(data[f"target.{name}"], ctx=ctx)
    if case["out"]:
        targets = [named[n] for n in case["out"]]
        kwargs["out"] = targets[0] if len(targets) == 1 else targets
    func = mx.nd  # a dotted sym_func ("_internal._adamw_update") names a submodule's function
    for part in case["sym_func"].split("."):
        func = getattr(func, part)
    result = func(*arrays.values(), **kwargs)
    outputs = result if isinstance(result, list) else [result]
    for i in range(len(case["out_shapes"])):
        if case["random"]:  # MXNet's draws: only their shape and dtype can match
            assert outputs[i].shape == data[f"out.{i}"].shape
            assert outputs[i].dtype == data[f"out.{i}"].dtype
            continue
        assert_close(outputs[i].asnumpy(), data[f"out.{i}"], f"{case_id}: output {i}")
    for name, array in arrays.items():
        want = data.get(f"arg_after.{name}", data[f"arg.{name}"])
        assert_close(array.asnumpy(), want, f"{case_id}: {name} after the call")


def test_positional_parameters_follow_the_op_declaration(ctx):
    x = mx.nd.array([[1, -2, 3], [4, 5, -6]], ctx=ctx)
    np.testing.assert_array_equal(x.clip(0, 2).asnumpy(), np.clip(x.asnumpy(), 0, 2))
    np.testing.assert_array_equal(mx.nd.sum(x, 1).asnumpy(), x.asnumpy().sum(axis=1))
    with pytest.raises(TypeError, match="given twice"):
        x.clip(0, a_min=1)


def test_methods_and_functions_agree(ctx):
    rng = np.random.default_rng(0)
    host = rng.standard_normal((3, 4)).astype(np.float32)
    x = mx.nd.array(host, ctx=ctx)
    np.testing.assert_allclose(x.sum(axis=0).asnumpy(), host.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(x.mean().asnumpy(), [host.mean()], rtol=1e-6)
    np.testing.assert_array_equal(x.argmax(axis=1).asnumpy(), host.argmax(axis=1))
    np.testing.assert_allclose(x.exp().asnumpy(), np.exp(host), rtol=1e-6)
    assert x.expand_dims(axis=0).shape == (1, 3, 4)
    assert x.transpose().shape == (4, 3)


def test_named_inputs_and_out(ctx):
    x = mx.nd.ones((2, 3), ctx=ctx)
    w = mx.nd.ones((4, 3), ctx=ctx)
    out = mx.nd.zeros((2, 4), ctx=ctx)
    result = mx.nd.FullyConnected(data=x, weight=w, num_hidden=4, no_bias=True, out=out)
    assert result is out
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 4), 3.0))


def test_multi_output_op_returns_a_list(ctx):
    parts = mx.nd.split(mx.nd.array(np.arange(6).reshape(2, 3), ctx=ctx), num_outputs=3)
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 1)] * 3


def test_errors_name_the_problem(ctx):
    x = mx.nd.ones((2, 3), ctx=ctx)
    with pytest.raises(ValueError, match="unknown input 'wieght'"):
        mx.nd.FullyConnected(data=x, wieght=x, num_hidden=2)
    with pytest.raises(ValueError, match="takes inputs"):
        mx.nd.FullyConnected(x, num_hidden=2)
    with pytest.raises(ContextMismatchError):
        mx.nd.elemwise_add(x, mx.nd.ones((2, 3), ctx=mx.cpu(5)))
    with pytest.raises(AttributeError, match="Did you mean 'FullyConnected'"):
        mx.nd.FullyConected  # noqa: B018 - the look-up is the test


def test_out_gives_creators_their_shape(ctx):
    # MXNet's _set_value (behind NDArray.__setitem__ with a scalar) takes its shape from out=
    target = mx.nd.zeros((2, 3), ctx=ctx)
    result = mx.nd._internal._set_value(src=2.5, out=target)
    assert result is target
    np.testing.assert_array_equal(target.asnumpy(), np.full((2, 3), 2.5, np.float32))


@pytest.mark.parametrize(
    ("call", "values"),
    [
        (lambda ctx: mx.nd.arange(1, 7, 2, ctx=ctx), [1, 3, 5]),
        (lambda ctx: mx.nd._arange(start=0, stop=3, repeat=2, ctx=ctx), [0, 0, 1, 1, 2, 2]),
        (lambda ctx: mx.nd.full((3,), 2.5, ctx=ctx), [2.5, 2.5, 2.5]),
        (lambda ctx: mx.nd._full(shape=(2,), value=4, ctx=ctx), [4, 4]),
        (lambda ctx: mx.nd.ones((2,), ctx=ctx), [1, 1]),
        (lambda ctx: mx.nd._zeros(shape=(2,), ctx=ctx), [0, 0]),
        (lambda ctx: mx.nd.linspace(0, 1, 3, ctx=ctx), [0, 0.5, 1]),
    ],
    ids=["arange", "_arange", "full", "_full", "ones", "_zeros", "linspace"],
)
def test_creation_ops_create_on_the_context_given(call, values, ctx):
    other = mx.cpu(1) if ctx.device_type == "cpu" else mx.cpu(0)
    with other:  # the current context must not win over ctx=
        made = call(ctx)
    assert made.context == ctx
    np.testing.assert_array_equal(made.asnumpy(), np.array(values, dtype=made.dtype))
    with ctx:  # and without ctx=, the current context is used
        assert mx.nd.ones((1,)).context == ctx
