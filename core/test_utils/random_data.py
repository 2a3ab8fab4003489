"""Random inputs for tests: arrays, shapes, coordinates and well-conditioned matrices.

Every draw comes from NumPy's global generator in the order MXNet 1.9.1's
``test_utils`` draws, so a test seeded with ``np.random.seed(n)`` gets the
values it got on MXNet. The sparse generators live in ``sparse_data``.
"""

import numpy as np

from .. import ndarray as nd
from .sparse_data import (
    create_sparse_array,
    create_sparse_array_zd,
    rand_sparse_ndarray,
    shuffle_csr_column_indices,
)
from .tolerances import default_context, default_dtype

__all__ = [
    "assign_each",
    "assign_each2",
    "create_2d_tensor",
    "create_sparse_array",
    "create_sparse_array_zd",
    "create_vector",
    "get_identity_mat",
    "get_identity_mat_batch",
    "new_matrix_with_real_eigvals_2d",
    "new_matrix_with_real_eigvals_nd",
    "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d",
    "new_sym_matrix_with_real_eigvals_nd",
    "rand_coord_2d",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "rand_sparse_ndarray",
    "random_arrays",
    "random_sample",
    "random_uniform_arrays",
    "shuffle_csr_column_indices",
]


def random_arrays(*shapes):
    """Standard-normal NumPy arrays of the default dtype, one per shape (one array alone)."""
    arrays = [
        np.array(np.random.randn(), dtype=default_dtype())
        if len(shape) == 0
        else np.random.randn(*shape).astype(default_dtype())
        for shape in shapes
    ]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None, **unexpected):
    """Uniform NumPy arrays in ``[low, high)``, one per shape (always a list)."""
    if unexpected:
        raise TypeError(f"random_uniform_arrays: unexpected arguments {sorted(unexpected)}")
    dtype = default_dtype() if dtype is None else dtype
    return [np.random.uniform(low, high, size=shape).astype(dtype) for shape in shapes]


def random_sample(population, k):
    """``k`` elements of ``population`` in a random order (a shuffled copy's first ``k``)."""
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} is outside 0..{len(population)}")
    shuffled = population[:]
    np.random.shuffle(shuffled)
    return shuffled[:k]


def rand_ndarray(
    shape,
    stype="default",
    density=None,
    dtype=None,
    modifier_func=None,
    shuffle_csr_indices=False,
    distribution=None,
    ctx=None,
):
    """A random NDArray on ``ctx``: standard-normal, or ``rand_sparse_ndarray``'s when sparse."""
    ctx = ctx if ctx else default_context()
    if stype == "default":
        return nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)
    arr, _ = rand_sparse_ndarray(
        shape,
        stype,
        density=density,
        modifier_func=modifier_func,
        dtype=dtype,
        shuffle_csr_indices=shuffle_csr_indices,
        distribution=distribution,
        ctx=ctx,
    )
    return arr


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape with sides up to ``dim0`` and ``dim1``."""
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape with sides up to ``dim0``, ``dim1`` and ``dim2``."""
    low = 0 if allow_zero_size else 1
    sides = (dim0, dim1, dim2)
    return tuple(np.random.randint(low, side + 1) for side in sides)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` sides, each up to ``dim``."""
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point with ``x`` in ``[x_low, x_high)`` and ``y`` in ``[y_low, y_high)``."""
    x = np.random.randint(x_low, x_high, dtype=np.int64)
    y = np.random.randint(y_low, y_high, dtype=np.int64)
    return x, y


def assign_each(the_input, function):
    """``function`` applied to every element of ``the_input`` (a float64 array; a copy if None)."""
    if function is None:
        return np.array(the_input)
    values = np.asarray(the_input)
    return np.array([function(v) for v in values.ravel()], dtype=np.float64).reshape(values.shape)


def assign_each2(input1, input2, function):
    """``function`` applied to every pair of elements of two equally shaped arrays."""
    if function is None:
        return np.array(input1)
    first, second = np.asarray(input1), np.asarray(input2)
    if first.shape != second.shape:
        raise ValueError(f"assign_each2: shapes differ, {first.shape} and {second.shape}")
    pairs = zip(first.ravel(), second.ravel(), strict=True)
    return np.array([function(a, b) for a, b in pairs], dtype=np.float64).reshape(first.shape)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """An NDArray whose row ``i`` holds ``i`` in every column."""
    column = nd.arange(0, rows, dtype=dtype).reshape((rows, 1))
    return nd.broadcast_to(column, shape=(rows, columns))


def create_vector(size, dtype=np.int64):
    """The NDArray ``0, 1, ..., size - 1``."""
    return nd.arange(0, size, dtype=dtype)


def get_identity_mat(size):
    """The ``size`` x ``size`` identity matrix as a float32 NDArray."""
    return nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """Two identity matrices stacked: shape ``(2, size, size)``."""
    eye = np.eye(size, dtype=np.float32)
    return nd.array(np.stack([eye, eye]))


def new_matrix_with_real_eigvals_2d(n):
    """A well-conditioned ``n`` x ``n`` matrix whose eigenvalues are real (in [-10, 10])."""
    while True:
        scale = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1.0, 1.0, n).reshape(n, 1)
        v = v / np.linalg.norm(v, axis=-2, keepdims=True)
        householder = np.eye(n) - 2 * (v @ v.T)
        basis = householder @ scale
        if np.linalg.cond(basis, 2) < 3:
            break
    eigenvalues = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(basis) @ eigenvalues @ basis


def new_matrix_with_real_eigvals_nd(shape):
    """A batch of ``new_matrix_with_real_eigvals_2d`` matrices of ``shape``."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(
        shape
    )


def new_orthonormal_matrix_2d(n):
    """An ``n`` x ``n`` orthonormal matrix (Q of the QR of a random symmetric matrix)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A symmetric ``n`` x ``n`` matrix with eigenvalues drawn from [-10, 10]."""
    q = new_orthonormal_matrix_2d(n)
    eigenvalues = np.diag(np.random.uniform(-10.0, 10.0, n))
    return q.T @ eigenvalues @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A batch of ``new_sym_matrix_with_real_eigvals_2d`` matrices of ``shape``."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    matrices = [new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]
    return np.array(matrices).reshape(shape)
