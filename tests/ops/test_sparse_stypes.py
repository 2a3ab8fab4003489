"""Storage-type inference: MXNet's rules, the errors where it has no kernel, the fallback.

Expected storage types are MXNet 1.9.1's (recorded in tests/golden/sparse_ops;
the cases here are the refusals and guarantees around them).
"""

import warnings

import numpy as np
import pytest

import rebind as mx
from rebind.base import MXNetError
from rebind.ndarray.imperative_sparse import StorageFallbackWarning
from rebind.ndarray.sparse_convert import DenseTooLargeError
from rebind.ops.sparse_stypes import StorageTypeError, infer_storage


def _csr(values):
    return mx.nd.array(np.asarray(values, dtype="float32")).tostype("csr")


def _params(op_name, **raw):
    return mx.registry.lookup("operators", op_name).parse({k: str(v) for k, v in raw.items()})


@pytest.mark.parametrize(
    "op_name, raw, stypes, expected",
    [
        ("dot", {}, ("csr", "default"), (("default",), "sparse")),
        ("dot", {"transpose_a": True}, ("csr", "default"), (("row_sparse",), "sparse")),
        ("dot", {"transpose_b": True}, ("default", "csr"), (("csr",), "fallback")),
        ("dot", {}, ("default", "csr"), (("csr",), "sparse")),
        ("elemwise_add", {}, ("row_sparse", "row_sparse"), (("row_sparse",), "sparse")),
        ("elemwise_add", {}, ("csr", "row_sparse"), (("default",), "fallback")),
        ("elemwise_mul", {}, ("default", "csr"), (("csr",), "sparse")),
        ("sum", {"axis": 1}, ("csr",), (("default",), "sparse")),
        ("sum", {"axis": 1, "keepdims": True}, ("csr",), (("default",), "fallback")),
        ("abs", {}, ("row_sparse",), (("row_sparse",), "sparse")),
        ("exp", {}, ("csr",), (("default",), "fallback")),
        ("_plus_scalar", {"scalar": 0}, ("csr",), (("csr",), "sparse")),
        ("_plus_scalar", {"scalar": 1}, ("csr",), (("default",), "sparse")),
    ],
)
def test_rules(op_name, raw, stypes, expected):
    assert infer_storage(op_name, _params(op_name, **raw), stypes) == expected


@pytest.mark.parametrize(
    "op_name, raw, stypes",
    [
        ("clip", {"a_min": 0.1, "a_max": 0.5}, ("csr",)),  # the range excludes 0
        ("cast_storage", {"stype": "row_sparse"}, ("csr",)),
        ("cast_storage", {"stype": "csr"}, ("row_sparse",)),
        ("_square_sum", {"axis": 1}, ("csr",)),
        ("Embedding", {"input_dim": 3, "output_dim": 2}, ("csr", "default")),
        ("_sparse_retain", {}, ("default", "default")),
    ],
)
def test_no_kernel_is_an_mxnet_error_naming_the_operator(op_name, raw, stypes):
    with pytest.raises(StorageTypeError, match=f"operator = {op_name}") as caught:
        infer_storage(op_name, _params(op_name, **raw), stypes)
    assert isinstance(caught.value, MXNetError)
    assert "input storage types = [" in str(caught.value)


def test_imperative_call_raises_where_mxnet_has_no_kernel():
    with pytest.raises(MXNetError, match="operator = clip"):
        mx.nd.clip(_csr([[1, 0], [0, 2]]), a_min=0.5, a_max=1.0)


def test_fallback_warns_once_per_message_and_can_be_silenced(monkeypatch):
    x = _csr([[1, 0], [0, 2]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's default: each distinct message once
        for _ in range(3):
            out = mx.nd.exp(x)
    fallbacks = [w for w in caught if issubclass(w.category, StorageFallbackWarning)]
    assert len(fallbacks) == 1 and "operator = exp" in str(fallbacks[0].message)
    np.testing.assert_allclose(out.asnumpy(), np.exp([[1, 0], [0, 2]]), rtol=1e-6)
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.nd.exp(x)
    assert not [w for w in caught if issubclass(w.category, StorageFallbackWarning)]


def _huge_csr():
    """A csr array whose dense form (10**7 x 10**6 float32, 40 TB) fits nowhere."""
    rows, cols = 10**7, 10**6
    indptr = np.zeros(rows + 1, dtype=np.int64)
    indptr[1], indptr[2:] = 1, 2
    return mx.nd.sparse.csr_matrix(
        (np.array([1.5, 2.0], "float32"), np.array([3, 999_999]), indptr), shape=(rows, cols)
    )


def test_fallback_refuses_a_dense_form_that_cannot_fit():
    with pytest.raises(DenseTooLargeError, match="10000000, 1000000"):
        mx.nd.exp(_huge_csr())


def test_sparse_kernels_never_densify_a_huge_input():
    x = _huge_csr()
    w = mx.nd.array(np.arange(2 * 10**6, dtype="float32").reshape(10**6, 2))
    out = mx.nd.sparse.dot(x, w.tostype("row_sparse"), transpose_a=False)
    assert out.shape == (10**7, 2)
    # row 0 holds 1.5 at column 3, row 1 holds 2.0 at column 999999 (w[i] = [2i, 2i + 1])
    np.testing.assert_allclose(out[0].asnumpy(), [9.0, 10.5])
    np.testing.assert_allclose(out[1].asnumpy(), [3999996.0, 3999998.0])
    grad = mx.nd.sparse.dot(x, mx.nd.ones((10**7, 2)), transpose_a=True)
    assert grad.stype == "row_sparse"
    np.testing.assert_array_equal(grad.indices.asnumpy(), [3, 999_999])
    np.testing.assert_allclose(grad.data.asnumpy(), [[1.5, 1.5], [2.0, 2.0]])
    doubled = x * 2
    assert doubled.stype == "csr"


def test_simple_bind_stype_dict_must_cover_arguments_without_stype():
    sym = mx.sym.sparse.dot(mx.sym.Variable("data"), mx.sym.Variable("w"))
    with pytest.raises(MXNetError, match="cannot decide storage type.*\\n.*w: -1"):
        sym.simple_bind(mx.cpu(), stype_dict={"data": "csr"}, data=(2, 3), w=(3, 1))
    exe = sym.simple_bind(
        mx.cpu(), stype_dict={"data": "csr", "w": "default"}, data=(2, 3), w=(3, 1)
    )
    assert exe.arg_dict["data"].stype == "csr" and exe.grad_dict["w"].stype == "row_sparse"


def test_batchnorm_refuses_fix_gamma_on_sparse_inputs():
    data = mx.sym.Variable("data", stype="row_sparse")
    sym = mx.sym.BatchNorm(data, fix_gamma=True)
    with pytest.raises(MXNetError, match="fix_gamma=True is not supported for sparse"):
        sym.simple_bind(mx.cpu(), data=(2, 3))
