"""assert_almost_equal and friends: tolerances by dtype, messages, NaN handling."""

import json
import os

import numpy as np
import pytest

import rebind as mx
from rebind import test_utils as tu

with open(os.path.join(os.path.dirname(__file__), "data", "mxnet_test_utils.json")) as _f:
    MX = json.load(_f)


def _message(a, b, **kwargs):
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, **kwargs)
    return str(info.value)


def test_message_names_worst_element_as_mxnet():
    got = _message(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 3.0]), names=("p", "q"))
    assert got == MX["message_1d"]


def test_message_2d_float32_uses_float32_tolerances():
    a = np.zeros((2, 3), np.float32)
    b = np.array([[0, 0, 0.5], [0, 2, 0]], np.float32)
    # the array reprs below " ACTUAL:" differ only by NumPy 2's "shape=" in summaries
    assert _message(a, b).split(" ACTUAL:")[0] == MX["message_2d_f32"].split(" ACTUAL:")[0]
    # printing options are restored afterwards (MXNet leaves them changed)
    assert np.get_printoptions()["threshold"] == 1000


def test_ndarray_inputs_and_mixed_inputs(ctx):
    a = mx.nd.array([[1, 2], [3, 4]], ctx=ctx)
    tu.assert_almost_equal(a, np.array([[1, 2], [3, 4.00001]], np.float32))
    with pytest.raises(AssertionError, match=r"Location of maximum error: \(1, 0\)"):
        tu.assert_almost_equal(a, mx.nd.array([[1, 2], [3.5, 4]], ctx=ctx))


def test_explicit_tolerances_and_dict_tolerances():
    a, b = np.float32([1.0]), np.float32([1.05])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, b)
    tu.assert_almost_equal(a, b, rtol=0.1, atol=0)
    tu.assert_almost_equal(a, b, rtol={np.dtype(np.float32): 0.1})


def test_equal_nan_and_ignore_nan():
    a, b = np.array([1.0, np.nan]), np.array([1.0, np.nan])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, b)
    tu.assert_almost_equal(a, b, equal_nan=True)
    tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([1.0, 5.0]))
    tu.assert_allclose(a, b)  # equal_nan defaults to True here


def test_use_broadcast_false_checks_shapes():
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))
    with pytest.raises(AssertionError, match=r"a.shape = \(2, 3\) and b.shape = \(3,\)"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)


def test_mismatches_limits_the_count():
    a, b = np.zeros(20), np.arange(1.0, 21.0)
    full = _message(a, b, rtol=0, atol=0.5, mismatches=(3, 0))
    assert "(mismatch 100.000000%)" in full
    capped = _message(a, b, rtol=0, atol=0.5, mismatches=(3, 5))
    assert "(mismatch at least 30.000000%)" in capped
    assert "Location of maximum error: (19,)" in capped


def test_bool_arrays_compare_exactly():
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))


def test_almost_equal_with_err_allows_a_fraction():
    a, b = np.zeros(10), np.zeros(10)
    b[3] = 1
    tu.assert_almost_equal_with_err(a, b, etol=0.2)
    with pytest.raises(AssertionError, match=r"Location of maximum error: \(3,\)"):
        tu.assert_almost_equal_with_err(a, b, etol=0.05)


def test_almost_equal_defaults_to_float64_table():
    assert (
        tu.almost_equal(np.float32([1.0]), np.float32([1.00001])) is MX["almost_equal_default_f32"]
    )


def test_same_and_assert_exception():
    assert tu.same(np.arange(3), np.arange(3)) and not tu.same(np.arange(3), np.arange(1, 4))
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError):
        tu.assert_exception(int, ValueError, "3")


def test_np_reduce_and_collapse_sum_like_match_mxnet():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert tu.np_reduce(x, (0, 2), True, np.sum).tolist() == MX["np_reduce"]
    assert tu.collapse_sum_like(x, (3, 1)).tolist() == MX["collapse_sum_like"]


def test_compare_ndarray_tuple_recurses():
    tu.compare_ndarray_tuple((np.ones(2), (np.zeros(2),)), (np.ones(2), (np.zeros(2),)))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((np.ones(2), (np.zeros(2),)), (np.ones(2), (np.ones(2),)))


def test_same_symbol_structure():
    x = mx.sym.Variable("x")
    assert tu.same_symbol_structure(mx.sym.relu(x), mx.sym.relu(mx.sym.Variable("y")))
    assert not tu.same_symbol_structure(mx.sym.relu(x), mx.sym.sigmoid(x))


def test_star_import_matches_mxnet_public_functions():
    ns = {}
    exec("from rebind.test_utils import *", ns)
    # every public name MXNet's star-import gives is given here too, except the few MXNet
    # internals and optional third-party modules below
    leaked = {
        "Features",
        "get_cuda_compute_capability",
        "getenv",
        "requests",
        "setenv",
        "ss",
        "use_np",
        "np_symbol",
        # MXNet-only: gluon, TVM, im2rec, model zoo and linear-algebra generators
        "check_gluon_hybridize_consistency",
        "has_tvm_ops",
        "is_op_runnable",
        "get_im2rec_path",
        "download_model",
        "assign_each",
        "assign_each2",
        "new_matrix_with_real_eigvals_2d",
        "new_matrix_with_real_eigvals_nd",
        "new_orthonormal_matrix_2d",
        "new_sym_matrix_with_real_eigvals_2d",
        "new_sym_matrix_with_real_eigvals_nd",
    }
    missing = set(MX["star_names"]) - leaked - set(ns)
    assert missing == set()
    assert ns["np"] is np and ns["mx"] is mx and ns["os"] is os
    assert ns["array"] is mx.nd.array and ns["Symbol"] is mx.sym.Symbol
