"""mx.test_utils' random helpers draw what MXNet 1.9.1 draws after np.random.seed(n)."""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind import test_utils as tu

from .draw_cases import calls

RECORDED = json.loads((Path(__file__).parent / "data" / "draws.json").read_text())

CALLS = calls(tu, np)


@pytest.mark.parametrize("key", sorted(RECORDED))
def test_same_draws_as_mxnet(key):
    name, seed = key.split("/")
    np.random.seed(int(seed))
    got = CALLS[name]()
    expected = RECORDED[key]
    if name == "random_arrays":  # arrays of different shapes: compare one by one
        for mine, theirs in zip(got, expected, strict=True):
            np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-6)
        return
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_random_arrays_dtype_and_single_shape():
    single = tu.random_arrays((4, 5))
    assert isinstance(single, np.ndarray) and single.shape == (4, 5)
    assert single.dtype == np.float32


def test_random_uniform_arrays_rejects_unknown_keywords():
    with pytest.raises(TypeError, match="scale"):
        tu.random_uniform_arrays((2,), scale=3)


def test_random_sample_bounds():
    with pytest.raises(ValueError, match="k=11"):
        tu.random_sample(list(range(10)), 11)


def test_rand_ndarray_context_and_dtype(ctx):
    array = tu.rand_ndarray((2, 3), dtype=np.float64, ctx=ctx)
    assert array.context == ctx and array.dtype == np.float64 and array.shape == (2, 3)


def test_matrices_have_the_promised_spectrum():
    np.random.seed(3)
    general = tu.new_matrix_with_real_eigvals_nd((2, 4, 4))
    assert general.shape == (2, 4, 4)
    for matrix in general:
        assert np.allclose(np.linalg.eigvals(matrix).imag, 0, atol=1e-8)
    q = tu.new_orthonormal_matrix_2d(5)
    assert np.allclose(q.T @ q, np.eye(5), atol=1e-10)
    symmetric = tu.new_sym_matrix_with_real_eigvals_2d(4)
    assert np.allclose(symmetric, symmetric.T, atol=1e-10)
    assert np.all(np.abs(np.linalg.eigvalsh(symmetric)) <= 10 + 1e-9)


def test_create_vector_and_identity():
    assert tu.create_vector(4).asnumpy().tolist() == [0, 1, 2, 3]
    assert np.array_equal(tu.get_identity_mat(3).asnumpy(), np.eye(3))
    assert isinstance(tu.create_vector(2), mx.nd.NDArray)
