"""Update operators called directly on row_sparse arrays, replayed against MXNet 1.9.1.

Golden: tests/golden/sparse_update_ops/cases.json, recorded by
tests/recording/record_sparse_update_ops.py (see its docstring for the cases:
lazy and standard kernels, weight decay, clipping, rescaling, momentum and
Adam/FTRL/AdaGrad states, rows absent and present, a gradient holding no row,
``out=weight`` / no ``out`` / another array, and MXNet's errors).
"""

import json
import warnings
from pathlib import Path

import attrs
import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.base import MXNetError
from rebind.ndarray.imperative_sparse import StorageFallbackWarning

GOLDEN = Path(__file__).parents[1] / "golden" / "sparse_update_ops" / "cases.json"
RECORD = json.loads(GOLDEN.read_text())
SHAPE = tuple(RECORD["shape"])
CASES = RECORD["cases"]

FUNCTIONS = {
    "sgd_update": lambda: mx.nd.sgd_update,
    "sgd_mom_update": lambda: mx.nd.sgd_mom_update,
    "adam_update": lambda: mx.nd.adam_update,
    "ftrl_update": lambda: mx.nd.ftrl_update,
    "_sparse_adagrad_update": lambda: mx.nd.sparse.adagrad_update,
    "_contrib_group_adagrad_update": lambda: mx.nd.contrib.group_adagrad_update,
    "mp_sgd_update": lambda: mx.nd.mp_sgd_update,
    "nag_mom_update": lambda: mx.nd.nag_mom_update,
}
# MXNet's error (a part of its message) -> what rebind's message says
ERRORS = {
    "kWriteInplace is expected": "kWriteInplace is expected",
    "with all rows containing non-zeros": "with all rows containing non-zeros",
    "Operator not implemented": "Operator not implemented",
    "Inconsistent storage types detected in state 3": "inconsistent storage types .* state 3",
    # MXNet's standard Adam kernel reads row_sparse states that hold no row
    "mean.shape_.Size() > 0": "AdamStdUpdate for RowSparse states .* all rows",
    "is not implemented for CPU": "_contrib_group_adagrad_update is not implemented",
}
# lazy kernels that return before checking their output on a gradient without rows
EARLY_RETURN = {"sgd_mom_update", "adam_update", "ftrl_update", "_sparse_adagrad_update"}


def case_id(index_case):
    i, c = index_case
    return f"{i}-{c['op']}-w_{c['weight_stype']}-s_{'_'.join(c['state_stypes'])}-{c['out']}"


def array(values, stype, dtype, ctx):
    """As the recorder makes them: row_sparse holds every row; empty none; partial rows 0, 1, 3."""
    values = np.asarray(values, dtype=dtype)
    if stype == "empty":
        return mx.nd.sparse.zeros("row_sparse", values.shape, ctx=ctx, dtype=dtype)
    if stype in ("row_sparse", "partial"):
        rows = np.array([0, 1, 3] if stype == "partial" else range(values.shape[0]))
        return mx.nd.sparse.row_sparse_array(
            (values[rows], rows), shape=values.shape, ctx=ctx, dtype=dtype
        )
    return mx.nd.array(values, ctx=ctx, dtype=dtype)


def gradient(case, dtype, ctx):
    rows = np.asarray(case["rows"], dtype="int64")
    values = np.asarray(case["grad"], dtype=dtype).reshape((len(rows),) + SHAPE[1:])
    if case["grad_stype"] == "default":
        dense = np.zeros(SHAPE, dtype=dtype)
        dense[rows] = values
        return mx.nd.array(dense, ctx=ctx, dtype=dtype)
    return mx.nd.sparse.row_sparse_array((values, rows), shape=SHAPE, ctx=ctx, dtype=dtype)


def make_call(case, ctx):
    """(weight, states, call) of a golden case on ``ctx``."""
    dtype = "float16" if case["op"] == "mp_sgd_update" else "float32"
    state_dtype = "float32" if case["op"] == "mp_sgd_update" else dtype
    weight = array(case["weight"], case["weight_stype"], dtype, ctx)
    states = [
        array(v, s, state_dtype, ctx)
        for v, s in zip(case["states"], case["state_stypes"], strict=True)
    ]
    grad = gradient(case, dtype, ctx)
    kwargs = dict(case["params"])
    if case["out"] == "weight":
        kwargs["out"] = weight
    elif case["out"] == "other":
        kwargs["out"] = mx.nd.zeros(SHAPE, ctx=ctx, dtype=dtype)
    function = FUNCTIONS[case["op"]]()
    return weight, states, lambda: function(weight, grad, *states, **kwargs)


def check_array(got, expected, tol):
    assert got.stype == expected["stype"]
    if expected["rows"] is not None:
        assert got.indices.asnumpy().tolist() == expected["rows"]
    np.testing.assert_allclose(got.asnumpy().astype("f8"), expected["values"], **tol)


def tolerance(case):
    if case["op"] == "mp_sgd_update":
        return {"rtol": 2e-3, "atol": 2e-3}
    return {"rtol": 1e-5, "atol": 1e-6}


@pytest.mark.parametrize("index_case", list(enumerate(CASES)), ids=case_id)
def test_update_op_matches_mxnet(index_case, ctx):
    _, case = index_case
    weight, states, call = make_call(case, ctx)
    if "error" in case:
        pattern = next(v for k, v in ERRORS.items() if k in case["error"])
        with pytest.raises(MXNetError, match=pattern):
            call()
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    if case["fallback_warning"]:  # (MXNet logs each distinct fallback once a process)
        assert any(issubclass(w.category, StorageFallbackWarning) for w in caught)
    tol = tolerance(case)
    assert (result is weight) == case["result_is_weight"]
    check_array(weight, case["after_weight"], tol)
    for got, expected in zip(states, case["after_states"], strict=True):
        check_array(got, expected, tol)
    if case["out"] == "none" and not case["rows"] and case["op"] in EARLY_RETURN:
        # MXNet returns an array its kernel never wrote (all zeros here); the update
        # of a weight by a gradient without rows is the weight itself
        assert case["result"]["rows"] == []
        np.testing.assert_array_equal(result.asnumpy(), weight.asnumpy())
        return
    check_array(result, case["result"], tol)


def test_lazy_sgd_decays_only_the_gradient_rows(ctx):
    # by definition: the lazy kernel applies weight decay to the rows present only
    start = np.arange(15, dtype="float32").reshape(5, 3)
    weight = mx.nd.array(start, ctx=ctx).tostype("row_sparse")
    grad = mx.nd.sparse.row_sparse_array((np.ones((1, 3), "float32"), [2]), shape=(5, 3), ctx=ctx)
    mx.nd.sgd_update(weight, grad, lr=0.5, wd=0.1, out=weight)
    got = weight.asnumpy()
    np.testing.assert_array_equal(got[[0, 1, 3, 4]], start[[0, 1, 3, 4]])
    np.testing.assert_allclose(got[2], (1 - 0.05) * start[2] - 0.5, rtol=1e-6)


def test_standard_sgd_decays_every_row(ctx):
    start = np.arange(15, dtype="float32").reshape(5, 3)
    weight = mx.nd.array(start, ctx=ctx)
    empty = mx.nd.sparse.zeros("row_sparse", (5, 3), ctx=ctx)
    mx.nd.sgd_update(weight, empty, lr=0.5, wd=0.1, lazy_update=False, out=weight)
    np.testing.assert_allclose(weight.asnumpy(), 0.95 * start, rtol=1e-6)


def test_sparse_namespace_runs_the_same_operators(ctx):
    # mx.nd.sparse.<op> is operator _sparse_<op>, an alias of <op> (MXNet's sparse alias)
    weight = mx.nd.ones((2, 2), ctx=ctx).tostype("row_sparse")
    grad = mx.nd.sparse.row_sparse_array((np.ones((1, 2), "float32"), [1]), shape=(2, 2), ctx=ctx)
    mean, var = mx.nd.zeros((2, 2), ctx=ctx), mx.nd.zeros((2, 2), ctx=ctx)
    result = mx.nd.sparse.adam_update(weight, grad, mean, var, lr=0.1, out=weight)
    assert result is weight and weight.stype == "row_sparse"
    np.testing.assert_array_equal(weight.asnumpy()[0], [1, 1])
    assert (weight.asnumpy()[1] < 1).all()


@pytest.mark.parametrize("op_name", sorted(RECORD["signatures"]))
def test_operator_arguments_match_mxnet(op_name):
    op = registry.lookup("operators", op_name)
    params = op.parse({"lr": "0.1"})
    names = [*op.arguments(params), *(f.name for f in attrs.fields(op.params))]
    assert names == RECORD["signatures"][op_name]


def test_symbol_namespaces_compose_the_adagrad_operators():
    # MXNet files them under mx.sym.sparse / mx.sym.contrib, as in mx.nd
    w, g, h = (mx.sym.var(n) for n in "wgh")
    sparse = mx.sym.sparse.adagrad_update(w, g, h, lr=0.1)
    group = mx.sym.contrib.group_adagrad_update(w, g, h, lr=0.1)
    assert sparse.infer_shape(w=(4, 3), g=(4, 3), h=(4, 3))[1] == [(4, 3)]
    assert group.infer_shape(w=(4, 3), g=(4, 3), h=(4, 1))[1] == [(4, 3)]
    with pytest.raises(ValueError, match="one value per weight row"):
        group.infer_shape(w=(4, 3), g=(4, 3), h=(5, 1))
