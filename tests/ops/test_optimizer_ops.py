"""The fused optimizer updates: sgd_update ... _multi_lamb_update, multi_sum_sq, all_finite."""

import json

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.ndarray.imperative import invoke
from tests.conftest import GOLDEN
from tests.ops.harness import assert_close, golden_cases, infer, opdef, replay_golden

FAMILY = json.loads((GOLDEN / "ops_extra" / "optimizer_ops.json").read_text())["cases"]
ALL_IDS = sorted(c["id"] for c in FAMILY)
PLAIN_IDS = sorted(c["id"] for c in FAMILY if not c["out"])


@pytest.mark.parametrize("case_id", PLAIN_IDS)
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _nd(ctx, array):
    return mx.nd.array(array, ctx=ctx, dtype=array.dtype)


@pytest.mark.parametrize("case_id", ALL_IDS)
def test_golden_imperative(case_id, ctx):
    """``mx.nd.<op>(..., out=...)``: outputs, states changed in place, the rest untouched."""
    case = golden_cases()[case_id]
    with np.load(GOLDEN / case["file"]) as npz:
        data = {key: npz[key] for key in npz.files}
    arrays = {name: _nd(ctx, data[f"arg.{name}"]) for name in case["arguments"]}
    kwargs = dict(case["attrs"])
    if case["out"]:
        targets = [arrays[name] for name in case["out"]]
        kwargs["out"] = targets[0] if len(targets) == 1 else targets
    result = invoke(case["op"], list(arrays.values()), kwargs)
    outs = result if isinstance(result, (list, tuple)) else [result]
    assert len(outs) == len(case["out_shapes"]), case_id
    for i, out in enumerate(outs):
        assert_close(out.asnumpy(), data[f"out.{i}"], f"{case_id}: output {i}")
    for name, array in arrays.items():
        want = data.get(f"arg_after.{name}", data[f"arg.{name}"])
        assert_close(array.asnumpy(), want, f"{case_id}: {name} after the call")


# -- one optimizer step equals its update operator ------------------------------------


def _arrays(seed, shape=(4, 5), dtype="float32"):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shape).astype(dtype) for _ in range(2)]


def _step(name, weight, grad, **kwargs):
    """One update of ``mx.optimizer.<name>``: (new weight, states as NumPy arrays)."""
    opt = mx.optimizer.create(name, **kwargs)
    w, g = mx.nd.array(weight, dtype=weight.dtype), mx.nd.array(grad, dtype=grad.dtype)
    state = opt.create_state_multi_precision(0, w)
    opt.update_multi_precision(0, w, g, state)
    states = state if isinstance(state, (list, tuple)) else [state]
    return w.asnumpy(), [s.asnumpy() for s in states if s is not None]


def _op(op, weight, grad, states, **attrs):
    """``mx.nd.<op>(weight, grad, *states, out=weight)`` from zero states: (weight, states)."""
    w, g = mx.nd.array(weight, dtype=weight.dtype), mx.nd.array(grad, dtype=grad.dtype)
    nd_states = [mx.nd.zeros(weight.shape, dtype=dtype) for dtype in states]
    getattr(mx.nd, op)(w, g, *nd_states, out=w, **attrs)
    return w.asnumpy(), [s.asnumpy() for s in nd_states]


SETTINGS = {"learning_rate": 0.1, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3}
ATTRS = {"lr": 0.1, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3}


@pytest.mark.parametrize(
    "name, op, options, attrs, states",
    [
        ("sgd", "sgd_update", {}, {}, []),
        ("sgd", "sgd_mom_update", {"momentum": 0.9}, {"momentum": 0.9}, ["float32"]),
        (
            "nag",
            "nag_mom_update",
            {"momentum": 0.9, "wd": 0.0},
            {"momentum": 0.9, "wd": 0.0},
            ["float32"],
        ),  # fmt: skip
        (
            "signum",
            "signum_update",
            {"momentum": 0.9, "wd_lh": 0.02},
            {"momentum": 0.9, "wd_lh": 0.02},
            ["float32"],
        ),  # fmt: skip
        ("rmsprop", "rmsprop_update", {"gamma1": 0.95}, {"gamma1": 0.95}, ["float32"]),
        (
            "rmsprop",
            "rmspropalex_update",
            {"centered": True, "gamma1": 0.95},
            {"gamma1": 0.95},
            ["float32"] * 3,
        ),  # fmt: skip
        ("ftrl", "ftrl_update", {}, {}, ["float32"] * 2),
    ],
)
def test_optimizer_step_equals_update_op(name, op, options, attrs, states):
    weight, grad = _arrays(1)
    by_optimizer = _step(name, weight, grad, **{**SETTINGS, **options})
    by_op = _op(op, weight, grad, states, **{**ATTRS, **attrs})
    np.testing.assert_array_equal(by_op[0], by_optimizer[0])
    for got, want in zip(by_op[1], by_optimizer[1], strict=True):
        np.testing.assert_array_equal(got, want)


def test_adam_step_equals_adam_update_with_corrected_rate():
    weight, grad = _arrays(2)
    new_weight, (mean, var) = _step("adam", weight, grad, **SETTINGS)
    lr = 0.1 * np.sqrt(1 - 0.999) / (1 - 0.9)  # MXNet's Adam folds the bias correction into lr
    by_op = _op("adam_update", weight, grad, ["float32"] * 2, **{**ATTRS, "lr": lr})
    np.testing.assert_array_equal(by_op[0], new_weight)
    np.testing.assert_array_equal(by_op[1][0], mean)
    np.testing.assert_array_equal(by_op[1][1], var)


def test_ftml_step_equals_ftml_update():
    weight, grad = _arrays(3)
    new_weight, _ = _step("ftml", weight, grad, **SETTINGS)
    attrs = {"lr": 0.1, "wd": 0.01, "rescale_grad": 0.5, "clip_grad": 0.3, "t": 1}
    by_op = _op("ftml_update", weight, grad, ["float32"] * 3, **attrs)
    np.testing.assert_array_equal(by_op[0], new_weight)


def test_lamb_step_equals_its_two_phases():
    weight, grad = _arrays(4)
    new_weight, _ = _step("lamb", weight, grad, **SETTINGS, lower_bound=0.5)
    w, g = mx.nd.array(weight), mx.nd.array(grad)
    mean, var = mx.nd.zeros(weight.shape), mx.nd.zeros(weight.shape)
    attrs = {"wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3, "t": 1}
    step = mx.nd.lamb_update_phase1(w, g, mean, var, **attrs)
    r1 = mx.nd.array([np.sqrt(np.sum(np.square(weight)))])
    r2 = mx.nd.array([np.sqrt(np.sum(np.square(step.asnumpy())))])
    mx.nd.lamb_update_phase2(w, step, r1, r2, lr=0.1, lower_bound=0.5, out=w)
    np.testing.assert_array_equal(w.asnumpy(), new_weight)


def test_mp_sgd_mom_step_equals_multi_precision_sgd():
    weight, grad = _arrays(5, dtype="float16")
    new_weight, states = _step("sgd", weight, grad, momentum=0.9, multi_precision=True, **SETTINGS)
    w, g = mx.nd.array(weight, dtype="float16"), mx.nd.array(grad, dtype="float16")
    mom, master = mx.nd.zeros(weight.shape), mx.nd.array(weight.astype("float32"))
    mx.nd.mp_sgd_mom_update(w, g, mom, master, out=w, momentum=0.9, **ATTRS)
    np.testing.assert_array_equal(w.asnumpy(), new_weight)
    np.testing.assert_array_equal(master.asnumpy(), states[1])  # sgd keeps (mom, master)


# -- imperative usage -------------------------------------------------------------------


def test_out_weight_writes_back_and_states_change_in_place():
    weight, grad = _arrays(6)
    w, g, mom = mx.nd.array(weight), mx.nd.array(grad), mx.nd.zeros(weight.shape)
    result = mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9)
    np.testing.assert_array_equal(w.asnumpy(), weight)  # without out=, the weight stays
    expected_mom = np.float32(-0.1) * grad
    np.testing.assert_allclose(mom.asnumpy(), expected_mom, rtol=1e-6)
    np.testing.assert_allclose(result.asnumpy(), weight + expected_mom, rtol=1e-6)
    mx.nd.sgd_mom_update(w, g, mom, out=w, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(mom.asnumpy(), 1.9 * expected_mom, rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), weight + 1.9 * expected_mom, rtol=1e-6)


def test_multi_updates_return_one_weight_each():
    weights = [mx.nd.ones((2, 2)), mx.nd.ones((3,)), mx.nd.ones((1, 4))]
    grads = [mx.nd.ones(w.shape) for w in weights]
    data = [a for pair in zip(weights, grads, strict=True) for a in pair]
    outs = mx.nd.multi_sgd_update(*data, lrs=(0.1, 0.2, 0.3), wds=(0, 0, 0), num_weights=3)
    assert len(outs) == 3
    for out, lr, w in zip(outs, (0.1, 0.2, 0.3), weights, strict=True):
        np.testing.assert_allclose(out.asnumpy(), np.full(w.shape, 1 - lr), rtol=1e-6)


def test_adamw_skips_the_update_when_rescale_grad_is_not_finite():
    weight, grad = _arrays(7)
    w, g = mx.nd.array(weight), mx.nd.array(grad)
    mean, var = mx.nd.zeros(weight.shape), mx.nd.zeros(weight.shape)
    for scale in (np.inf, 0.0):
        out = mx.nd._adamw_update(w, g, mean, var, mx.nd.array([scale]), lr=0.1, eta=1.0)
        np.testing.assert_array_equal(out.asnumpy(), weight)
        assert not mean.asnumpy().any() and not var.asnumpy().any()


def test_reset_arrays_zeroes_in_place():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((4,), dtype="float16")
    mx.nd.reset_arrays(a, b, num_arrays=2)
    assert not a.asnumpy().any() and not b.asnumpy().any()


def test_multi_sum_sq_and_all_finite():
    a, b = np.arange(6.0).reshape(2, 3), np.array([3.0, -4.0])
    sums = mx.nd.multi_sum_sq(mx.nd.array(a), mx.nd.array(b), num_arrays=2)
    np.testing.assert_allclose(sums.asnumpy(), [55.0, 25.0])
    assert mx.nd.all_finite(mx.nd.array(a)).asnumpy().tolist() == [1.0]
    assert mx.nd.all_finite(mx.nd.array([1.0, np.nan])).asnumpy().tolist() == [0.0]


# -- inference --------------------------------------------------------------------------


def test_shape_inference_fills_states_and_rejects_mismatch():
    in_shapes, out_shapes, _ = infer("adam_update", {"lr": "0.1"}, [(3, 4), None, None, None])
    assert in_shapes == [(3, 4)] * 4 and out_shapes == [(3, 4)]
    with pytest.raises(ShapeError, match="mom"):
        infer("sgd_mom_update", {"lr": "0.1"}, [(3, 4), (3, 4), (4, 3)])


def test_multi_shape_inference_per_weight_and_named_inputs():
    attrs = {"lrs": "(0.1, 0.2)", "wds": "(0, 0)", "num_weights": "2"}
    _, outs, _ = infer("multi_sgd_update", attrs, [(2, 2), None, (5,), (5,)])
    assert outs == [(2, 2), (5,)]
    with pytest.raises(ShapeError, match="grad_1"):
        infer("multi_sgd_update", attrs, [(2, 2), None, (5,), (6,)])


def test_mp_type_inference_keeps_master_copies_float32():
    op = opdef("mp_sgd_mom_update")
    params = op.parse({"lr": "0.1"})
    in_types, out_types, _ = op.infer_types(params, ["float16", None, None, None])
    assert in_types == ["float16", "float16", "float32", "float32"]
    assert out_types == ["float16"]
