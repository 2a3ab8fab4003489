"""Shared checks for operators: golden replay, finite differences, inference.

Every op family's tests use these three helpers, on every backend present:

* ``replay_golden(case_id, ctx)``: runs one case recorded from MXNet 1.9.1
  through the OpDef directly (shape and type inference, forward in train and
  inference mode, aux updates, backward) and compares with the recording.
* ``check_numeric_gradient(op, attrs, inputs, ctx, ...)``: the analytic
  backward against central differences in float64.
* ``infer(op, attrs, in_shapes)``: shape inference, for tests of partial
  shapes and of the errors on bad input.
"""

import json
from functools import cache

import numpy as np

from rebind import registry
from rebind.ops import OpContext
from tests.conftest import GOLDEN

TOLERANCES = {  # dtype -> (rtol, atol)
    "float16": (2e-2, 2e-3),
    "float32": (1e-4, 1e-5),
    "float64": (1e-6, 1e-8),
}


@cache
def golden_cases():
    """Every op case, by id: the shared manifest's and those of ``golden/ops_extra/*.json``.

    The second set is recorded by ``tests/recording/record_ops.py`` from the
    case definitions in ``tests/ops/cases/`` (the operators of issue 13).
    """
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    cases = {case["id"]: case for case in manifest["categories"]["ops"]["cases"]}
    for path in sorted((GOLDEN / "ops_extra").glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            if case["id"] in cases:
                raise AssertionError(f"golden case id {case['id']!r} of {path.name} is taken")
            cases[case["id"]] = case
    return cases


def case_ids(*ops):
    """The ids of the golden cases of the named operators (for parametrize)."""
    return sorted(cid for cid, case in golden_cases().items() if case["op"] in ops)


def opdef(name):
    return registry.lookup("operators", name)


def _arrays(case):
    with np.load(GOLDEN / case["file"]) as npz:
        return {key: npz[key] for key in npz.files}


def _on(ctx, array):
    return ctx.backend.asarray(array, array.dtype, ctx.device_id)


def _host(ctx, array):
    return np.asarray(ctx.backend.to_host(array))


def assert_close(actual, expected, what, tolerance=None):
    """Compare with the tolerance of the expected dtype (or the one given)."""
    expected = np.asarray(expected)
    rtol, atol = tolerance or TOLERANCES.get(expected.dtype.name, (0, 0))
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(
            actual.astype(np.float64),
            expected.astype(np.float64),
            rtol=rtol,
            atol=atol,
            err_msg=what,
        )
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def replay_golden(case_id, ctx, tolerance=None, skip=()):
    """Run golden case ``case_id`` on ``ctx`` and compare every recorded array.

    Args:
        tolerance: (rtol, atol) replacing the dtype default, for ops whose
            float32 results legitimately drift more (long reductions).
        skip: parts not to compare, among "train", "infer", "backward" (for
            random ops whose values cannot match MXNet's generator).
    """
    case, data = golden_cases()[case_id], _arrays(golden_cases()[case_id])
    op = opdef(case["op"])
    params = op.parse(case["attrs"])
    args = [data[f"arg.{name}"] for name in case["arguments"]]
    aux_names = case["aux_states"]
    _check_inference(op, params, case, args, [data[f"aux.{n}"] for n in aux_names])
    if case.get("random"):
        _check_random_draw(op, params, case, args, ctx)
        return
    if "train" in case["modes"] and "train" not in skip:
        _check_train(op, params, case, data, args, ctx, tolerance, skip)
    if "infer" in case["modes"] and "infer" not in skip:
        expected = [data.get(f"out_infer.{i}", data.get(f"out.{i}")) for i in _out_range(case)]
        aux = [_on(ctx, data[f"aux.{n}"]) for n in aux_names]
        outs, _ = op.forward(
            OpContext(False, ctx.backend, ctx.device_id), params, [_on(ctx, a) for a in args], aux
        )
        for i, (out, want) in enumerate(zip(outs, expected, strict=False)):
            if want is not None:
                assert_close(_host(ctx, out), want, f"{case_id}: inference output {i}", tolerance)


def _settled_out_shapes(case):
    """The output shapes an executor would give the op (creators read them)."""
    return tuple(tuple(s) for s in case["out_shapes"])


def _check_random_draw(op, params, case, args, ctx):
    """A sampler's draw has the recorded shapes and dtypes (its values are MXNet's stream's)."""
    outs, _ = op.forward(
        OpContext(
            True, ctx.backend, ctx.device_id, out_shapes=tuple(map(tuple, case["out_shapes"]))
        ),
        params,
        [_on(ctx, a) for a in args],
        [],
    )
    for i, out in enumerate(outs[: len(case["outputs"])]):
        assert tuple(out.shape) == tuple(case["out_shapes"][i]), f"{case['id']}: output {i} shape"
        assert np.dtype(out.dtype).name == case["out_dtypes"][i], f"{case['id']}: output {i} dtype"


def _out_range(case):
    return range(len(case["outputs"]))


def _recorded_outputs(op, params, case):
    """Indices of the op's outputs that the case recorded (some record only sym[0])."""
    names = [f"{case['node_name']}_{suffix}" for suffix in op.outputs(params)]
    if len(case["outputs"]) < len(names) and all(n in names for n in case["outputs"]):
        return [names.index(n) for n in case["outputs"]]
    return list(range(len(names)))


def _check_inference(op, params, case, args, aux):
    # an op writing into out= arrays alone (_set_value) learns its shape from them
    given = [list(s) for s in case["out_shapes"]] if case.get("targets") else None
    in_shapes, out_shapes, aux_shapes = op.infer_shapes(
        params, [a.shape for a in args], given, aux_shapes=[a.shape for a in aux]
    )
    recorded = _recorded_outputs(op, params, case)
    out_shapes = [out_shapes[i] for i in recorded]
    assert [tuple(s) for s in out_shapes] == [tuple(s) for s in case["out_shapes"]], case["id"]
    assert [tuple(s) for s in in_shapes] == [a.shape for a in args], case["id"]
    _, out_types, _ = op.infer_types(
        params, [a.dtype.name for a in args], aux_types=[a.dtype.name for a in aux]
    )
    assert [out_types[i] for i in recorded] == case["out_dtypes"], case["id"]


def _check_train(op, params, case, data, args, ctx, tolerance, skip):
    cid, aux_names = case["id"], case["aux_states"]
    aux = [_on(ctx, data[f"aux.{n}"]) for n in aux_names]
    inputs = [_on(ctx, a) for a in args]
    op_ctx = OpContext(True, ctx.backend, ctx.device_id, out_shapes=_settled_out_shapes(case))
    outs, saved = op.forward(op_ctx, params, inputs, aux)
    for i in _out_range(case):
        assert_close(_host(ctx, outs[i]), data[f"out.{i}"], f"{cid}: train output {i}", tolerance)
    for name, array in zip(case["arguments"], inputs, strict=True):
        if name in case.get("out", ()):
            continue  # MXNet wrote the output over this input (out=); the output is checked
        # update operators change their states in place (MXNet's mutable inputs)
        want = data.get(f"arg_after.{name}", data[f"arg.{name}"])
        assert_close(_host(ctx, array), want, f"{cid}: input {name} after forward", tolerance)
    for name, array in zip(aux_names, aux, strict=True):
        if f"aux_after_fwd.{name}" in data:
            assert_close(
                _host(ctx, array),
                data[f"aux_after_fwd.{name}"],
                f"{cid}: aux {name} after forward",
                tolerance,
            )
    if not case.get("backward") or "backward" in skip:
        return
    heads = [
        _on(ctx, data[f"head_grad.{i}"])
        if f"head_grad.{i}" in data
        else ctx.backend.xp.zeros_like(outs[i])
        for i in range(len(outs))
    ]
    need = [case["grad_req"].get(name, "null") != "null" for name in case["arguments"]]
    grads = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, heads, need)
    for name, needed, grad in zip(case["arguments"], need, grads, strict=True):
        if needed and f"grad.{name}" in data:
            assert grad is not None, f"{cid}: no gradient for {name}"
            assert_close(
                _host(ctx, grad), data[f"grad.{name}"], f"{cid}: gradient of {name}", tolerance
            )
    for name, array in zip(aux_names, aux, strict=True):
        if f"aux_after.{name}" in data:
            assert_close(
                _host(ctx, array),
                data[f"aux_after.{name}"],
                f"{cid}: aux {name} after backward",
                tolerance,
            )


def infer(op_name, attrs, in_shapes, out_shapes=None, aux_shapes=None):
    """Shape inference of one op: (in_shapes, out_shapes, aux_shapes)."""
    op = opdef(op_name)
    return op.infer_shapes(op.parse(attrs), in_shapes, out_shapes, aux_shapes, node="node0")


def check_numeric_gradient(
    op_name,
    attrs,
    inputs,
    ctx,
    aux=None,
    grad_args=None,
    loss=None,
    is_train=True,
    eps=1e-6,
    rtol=1e-5,
    atol=1e-7,
    seed=0,
):
    """Compare the op's backward with central differences of a scalar loss, in float64.

    Args:
        inputs: NumPy arrays, one per argument (cast to float64 when floating).
        grad_args: indices of the arguments to check (default: every float one).
        loss: ``loss(outputs, heads) -> float`` built from host arrays; the
            default is ``sum(out * head)`` with random heads, whose gradient is
            what ``backward`` returns for non-loss ops. Loss ops (SoftmaxOutput,
            regression outputs) pass the loss they are the gradient of.
        is_train: the mode of the forward pass (False for ops that differ).
    """
    op = opdef(op_name)
    params = op.parse(attrs)
    rng = np.random.default_rng(seed)
    inputs = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs]
    aux = [a.astype(np.float64) for a in (aux or [])]
    if grad_args is None:
        grad_args = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    op_ctx = OpContext(is_train, ctx.backend, ctx.device_id)

    def run(values):
        aux_copy = [_on(ctx, a.copy()) for a in aux]
        outs, saved = op.forward(op_ctx, params, [_on(ctx, v) for v in values], aux_copy)
        return outs, saved

    outs, saved = run(inputs)
    heads_host = [rng.standard_normal(_host(ctx, o).shape) for o in outs]
    if loss is None:

        def loss(outputs, heads):
            return sum(float(np.sum(o * h)) for o, h in zip(outputs, heads, strict=True))

    need = [i in grad_args for i in range(len(inputs))]
    grads = op.backward(op_ctx, params, saved, [_on(ctx, h) for h in heads_host], need)
    for index in grad_args:
        analytic = _host(ctx, grads[index])
        numeric = _numeric(run, loss, inputs, index, heads_host, ctx, eps)
        np.testing.assert_allclose(
            analytic,
            numeric,
            rtol=rtol,
            atol=atol,
            err_msg=f"{op_name}{attrs}: gradient of argument {index} (seed {seed})",
        )


def _numeric(run, loss, inputs, index, heads, ctx, eps):
    values = [a.copy() for a in inputs]
    flat = values[index].reshape(-1)
    numeric = np.zeros(flat.shape)
    for k in range(flat.size):
        original = flat[k]
        flat[k] = original + eps
        plus = loss([_host(ctx, o) for o in run(values)[0]], heads)
        flat[k] = original - eps
        minus = loss([_host(ctx, o) for o in run(values)[0]], heads)
        flat[k] = original
        numeric[k] = (plus - minus) / (2 * eps)
    return numeric.reshape(inputs[index].shape)
