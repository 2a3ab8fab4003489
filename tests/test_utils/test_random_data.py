"""Random arrays and shapes; sparse requests raise NotImplementedError."""

import numpy as np
import pytest

import rebind as mx
from rebind import test_utils as tu


def test_random_arrays_dtype_and_count():
    one = tu.random_arrays((2, 3))
    assert one.shape == (2, 3) and one.dtype == np.float32
    scalar, mat = tu.random_arrays((), (4,))
    assert scalar.shape == () and mat.shape == (4,)
    low_high = tu.random_uniform_arrays((50,), low=2.0, high=3.0)
    assert len(low_high) == 1 and 2.0 <= low_high[0].min() and low_high[0].max() < 3.0
    with pytest.raises(TypeError):
        tu.random_uniform_arrays((2,), bogus=1)


def test_rand_ndarray_dense_and_sparse(ctx):
    arr = tu.rand_ndarray((3, 4), ctx=ctx, dtype="float64")
    assert arr.shape == (3, 4) and arr.dtype == np.float64 and arr.context == ctx
    with pytest.raises(NotImplementedError, match="no sparse storage"):
        tu.rand_ndarray((3, 4), stype="csr")
    with pytest.raises(NotImplementedError, match="no sparse storage"):
        tu.shuffle_csr_column_indices(None)


def test_rand_shapes_within_bounds():
    np.random.seed(0)
    for _ in range(20):
        d0, d1 = tu.rand_shape_2d(3, 4)
        assert 1 <= d0 <= 3 and 1 <= d1 <= 4
        assert all(1 <= d <= 2 for d in tu.rand_shape_3d(2, 2, 2))
        shape = tu.rand_shape_nd(4, dim=3, allow_zero_size=True)
        assert len(shape) == 4 and all(0 <= d <= 3 for d in shape)


def test_random_sample_and_tensors():
    picked = tu.random_sample(list(range(10)), 4)
    assert len(set(picked)) == 4 and set(picked) <= set(range(10))
    assert tu.create_vector(4).asnumpy().tolist() == [0, 1, 2, 3]
    assert tu.create_2d_tensor(2, 3).asnumpy().tolist() == [[0, 0, 0], [1, 1, 1]]
    np.testing.assert_array_equal(tu.get_identity_mat(3).asnumpy(), np.eye(3))
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)


def test_same_array_detects_shared_memory():
    a = mx.nd.ones((2,))
    assert not tu.same_array(a, a.copy())
    assert tu.same_array(a, a)
