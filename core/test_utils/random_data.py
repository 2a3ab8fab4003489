"""Random arrays and shapes for tests, and small dense tensor builders."""

import numpy as np
import numpy.random as rnd

from .. import ndarray as nd
from .tolerances import default_context, default_dtype

_NO_SPARSE = ("rebind has no sparse storage: only stype='default' (dense) arrays exist; "
              "build the data densely with rand_ndarray(shape) instead")


def random_arrays(*shapes):
    """Standard-normal float32 NumPy arrays, one per shape (a lone array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    """Uniform [low, high) arrays of ``dtype`` (float32), always returned as a list."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError("Got unexpected argument/s : " + str(kwargs.keys()))
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """``k`` elements of ``population`` in random order (a shuffled copy's prefix)."""
    assert 0 <= k <= len(population)
    population_copy = population[:]
    np.random.shuffle(population_copy)
    return population_copy[0:k]


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A standard-normal NDArray of ``shape`` on ``ctx``; sparse ``stype`` is unsupported."""
    if stype != "default":
        raise NotImplementedError(f"rand_ndarray(stype={stype!r}): {_NO_SPARSE}")
    ctx = ctx if ctx else default_context()
    return nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """Not available: rebind has no sparse storage."""
    raise NotImplementedError(f"rand_sparse_ndarray(stype={stype!r}): {_NO_SPARSE}")


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=0.5, shuffle_csr_indices=False):
    """Not available: rebind has no sparse storage."""
    raise NotImplementedError(f"create_sparse_array(stype={stype!r}): {_NO_SPARSE}")


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """Not available: rebind has no sparse storage."""
    raise NotImplementedError(f"create_sparse_array_zd(stype={stype!r}): {_NO_SPARSE}")


def shuffle_csr_column_indices(csr):
    """Not available: needs a CSR matrix's indptr/indices, which rebind does not have."""
    raise NotImplementedError(f"shuffle_csr_column_indices: {_NO_SPARSE}")


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape with sides in [1, dim] ([0, dim] when zero sizes are allowed)."""
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape with sides in [1, dim] ([0, dim] when zero sizes are allowed)."""
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random ``num_dim``-d shape with every side in [1, dim] (or [0, dim])."""
    low = 0 if allow_zero_size else 1
    return tuple(rnd.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point with x in [x_low, x_high) and y in [y_low, y_high)."""
    x = np.random.randint(x_low, x_high, dtype=np.int64)
    y = np.random.randint(y_low, y_high, dtype=np.int64)
    return x, y


def create_vector(size, dtype=np.int64):
    """The NDArray 0, 1, ..., size-1."""
    return nd.arange(0, size, dtype=dtype)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """A (rows, columns) NDArray whose row i is all i."""
    column = nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return nd.broadcast_to(column, shape=(rows, columns))


def get_identity_mat(size):
    """The (size, size) float32 identity NDArray."""
    return nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """Two stacked (size, size) identity matrices as one NDArray."""
    eye = np.eye(size, dtype=np.float32)
    return nd.array(np.stack([eye, eye]))
