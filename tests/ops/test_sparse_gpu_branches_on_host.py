"""The sparse kernels' GPU branches, run on the host.

On a GPU the kernels build ``cupyx.scipy.sparse`` matrices, whose index arrays
must be int32. Here the array namespace is NumPy under CuPy's module name and
SciPy stands in for cupyx, so the branches the GPU takes (the int32 index
conversions) run and must give the CPU branches' results.
"""

import types

import numpy as np
import pytest
import scipy.sparse

from rebind.ops import sparse_dot, sparse_parts
from rebind.ops.sparse_parts import Parts, from_dense


class _Context:
    def __init__(self, xp):
        self.xp = xp


def _cupy_named_numpy():
    module = types.ModuleType("cupy")
    module.__dict__.update({k: v for k, v in np.__dict__.items() if not k.startswith("__")})
    return module


@pytest.fixture
def gpu_branches(monkeypatch):
    monkeypatch.setattr(sparse_parts, "scipy_sparse", lambda xp: scipy.sparse)
    monkeypatch.setattr(sparse_dot, "scipy_sparse", lambda xp: scipy.sparse)
    return _Context(_cupy_named_numpy())


class _Params:
    def __init__(self, transpose_a=False, transpose_b=False):
        self.transpose_a, self.transpose_b = transpose_a, transpose_b


def _operands(rng):
    x = rng.uniform(-1, 1, (6, 9)).astype("float32")
    x[rng.uniform(size=x.shape) < 0.6] = 0
    w = rng.uniform(-1, 1, (9, 3)).astype("float32")
    w[[1, 4]] = 0
    return x, w


@pytest.mark.parametrize("rhs_stype", ["default", "row_sparse"])
def test_products_match_the_host_branches(gpu_branches, rhs_stype):
    x, w = _operands(np.random.RandomState(0))
    lhs = from_dense(np, x, "csr")
    rhs = from_dense(np, w, rhs_stype)
    out = sparse_dot.dot_kernel(gpu_branches, None, _Params(), [lhs, rhs], ["default"])[0]
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-7)
    head = np.ones((6, 3), "float32")
    grad = sparse_dot.dot_kernel(
        gpu_branches, None, _Params(transpose_a=True), [lhs, head], ["row_sparse"]
    )[0]
    assert isinstance(grad, Parts)
    np.testing.assert_allclose(sparse_parts.to_dense(np, grad), x.T @ head, rtol=1e-5, atol=1e-7)
    dense = np.random.RandomState(1).uniform(-1, 1, (4, 6)).astype("float32")
    out = sparse_dot.dot_kernel(gpu_branches, None, _Params(), [dense, lhs], ["csr"])[0]
    np.testing.assert_allclose(sparse_parts.to_dense(np, out), dense @ x, rtol=1e-5, atol=1e-7)
