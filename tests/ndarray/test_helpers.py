"""Tests for mx.nd's non-operator functions (rebind.ndarray.helpers and .interop)."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import DTypeMismatchError, ShapeError

SEED = 11

# name -> NumPy reference on arrays of one dtype (results cast back to that dtype)
REFERENCE = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "true_divide": np.divide,
    "modulo": np.mod,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "lesser": np.less,
    "lesser_equal": np.less_equal,
    "logical_and": lambda a, b: np.logical_and(a != 0, b != 0),
    "logical_or": lambda a, b: np.logical_or(a != 0, b != 0),
    "logical_xor": lambda a, b: np.logical_xor(a != 0, b != 0),
}


def values(shape, offset=0):
    print(f"numpy seed={SEED + offset}")
    rng = np.random.default_rng(SEED + offset)
    out = rng.uniform(0.5, 3, size=shape).astype(np.float32)
    out[rng.uniform(size=shape) < 0.2] = 0  # zeros for the logical functions
    return out


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_two_arrays_broadcast_and_keep_dtype(ctx, name):
    lhs, rhs = values((2, 1, 3)), values((4, 1), offset=1) + 0.5
    out = getattr(mx.nd, name)(mx.nd.array(lhs, ctx=ctx), mx.nd.array(rhs, ctx=ctx))
    expected = REFERENCE[name](lhs, rhs).astype(np.float32)
    assert out.dtype is np.float32 and out.context == ctx and out.shape == (2, 4, 3)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_array_and_scalar_in_both_orders(ctx, name):
    data = values((3, 2)) + 0.25  # no zeros: the scalar is divided by them too
    array = mx.nd.array(data, ctx=ctx)
    function, reference = getattr(mx.nd, name), REFERENCE[name]
    scalar = np.float32(1.5)
    np.testing.assert_allclose(
        function(array, 1.5).asnumpy(), reference(data, scalar).astype(np.float32), rtol=1e-6
    )
    np.testing.assert_allclose(
        function(1.5, array).asnumpy(), reference(scalar, data).astype(np.float32), rtol=1e-6
    )


def test_comparisons_give_zero_one_in_the_array_dtype(ctx):
    data = np.array([[-3, 1], [2, 5]], dtype=np.int32)
    out = mx.nd.lesser_equal(mx.nd.array(data, ctx=ctx, dtype=np.int32), 2)
    assert out.dtype is np.int32
    np.testing.assert_array_equal(out.asnumpy(), (data <= 2).astype(np.int32))


def test_integer_arrays_take_the_scalar_in_their_dtype(ctx):
    # MXNet 1.9.1: int32 [-3, 1, 2, 5] + 2.5 -> [-1, 3, 4, 7]; divide truncates toward zero
    data = np.array([-3, 1, 2, 5], dtype=np.int32)
    array = mx.nd.array(data, ctx=ctx, dtype=np.int32)
    np.testing.assert_array_equal(mx.nd.add(array, 2.5).asnumpy(), data + np.int32(2))
    np.testing.assert_array_equal(mx.nd.maximum(array, 2.5).asnumpy(), np.maximum(data, 2))
    np.testing.assert_array_equal(mx.nd.divide(array, 2).asnumpy(), np.trunc(data / 2))
    np.testing.assert_array_equal(mx.nd.modulo(array, -2).asnumpy(), np.mod(data, -2))


@pytest.mark.parametrize(
    ("name", "lhs", "rhs", "expected"),
    [
        ("add", 2, 3, 5),
        ("maximum", 2, 3, 3),
        ("minimum", 2, 3, 2),
        ("equal", 2, 3, 0),
        ("lesser", 2, 3, 1),
        ("power", 3, 2, 9),
        ("logical_xor", 0, 4, 1),
    ],
)
def test_two_scalars_give_a_python_number(name, lhs, rhs, expected):
    result = getattr(mx.nd, name)(lhs, rhs)
    assert result == expected and isinstance(result, int)


def test_mixed_dtypes_and_unbroadcastable_shapes_are_refused(ctx):
    floats = mx.nd.ones((2, 3), ctx=ctx)
    with pytest.raises(DTypeMismatchError, match="astype"):
        mx.nd.add(floats, mx.nd.ones((2, 3), ctx=ctx, dtype=np.int32))
    with pytest.raises(ShapeError, match=r"\(2, 3\) and \(4,\)"):
        mx.nd.multiply(floats, mx.nd.ones((4,), ctx=ctx))
    with pytest.raises(TypeError, match="NDArrays or numbers"):
        mx.nd.add("a", 1)


@pytest.mark.parametrize(("source", "destination"), [(0, -1), ([0, 1], [2, 0]), (2, 0)])
def test_moveaxis_matches_numpy_and_copies(ctx, source, destination):
    data = values((2, 3, 4))
    array = mx.nd.array(data, ctx=ctx)
    out = mx.nd.moveaxis(array, source, destination)
    np.testing.assert_array_equal(out.asnumpy(), np.moveaxis(data, source, destination))
    out[:] = 7
    np.testing.assert_array_equal(array.asnumpy(), data)
    with pytest.raises(ShapeError, match="moveaxis"):
        mx.nd.moveaxis(array, 3, 0)


def test_onehot_encode_fills_out(ctx):
    out = mx.nd.full((3, 4), 9, ctx=ctx)
    result = mx.nd.onehot_encode(mx.nd.array([0, 3, 1], ctx=ctx), out)
    assert result is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4, dtype=np.float32)[[0, 3, 1]])
    with pytest.raises(ShapeError, match="onehot_encode"):
        mx.nd.onehot_encode(mx.nd.array([0, 1], ctx=ctx), out)


def test_histogram_with_count_and_with_edges(ctx):
    data = values((50,))
    counts, edges = mx.nd.histogram(mx.nd.array(data, ctx=ctx), bins=4, range=(0, 3))
    expected_counts, expected_edges = np.histogram(data, bins=4, range=(0, 3))
    assert counts.dtype is np.int64 and edges.dtype is np.float32
    np.testing.assert_array_equal(counts.asnumpy(), expected_counts)
    np.testing.assert_allclose(edges.asnumpy(), expected_edges)
    given = np.array([0, 1, 2.5], dtype=np.float32)
    result = mx.nd.histogram(mx.nd.array(data, ctx=ctx), bins=mx.nd.array(given, ctx=ctx))
    assert isinstance(result, list)
    np.testing.assert_array_equal(result[0].asnumpy(), np.histogram(data, bins=given)[0])
    assert isinstance(mx.nd.histogram(mx.nd.array(data, ctx=ctx), bins=3), tuple)


def test_split_v2_sections_indices_and_squeeze(ctx):
    data = values((4, 6))
    array = mx.nd.array(data, ctx=ctx)
    pieces = mx.nd.split_v2(array, 3, axis=1)
    for piece, expected in zip(pieces, np.split(data, 3, axis=1), strict=True):
        np.testing.assert_array_equal(piece.asnumpy(), expected)
    pieces = mx.nd.split_v2(array, (1, 3), axis=0)
    assert [p.shape for p in pieces] == [(1, 6), (2, 6), (1, 6)]
    squeezed = mx.nd.split_v2(array, 4, axis=0, squeeze_axis=True)
    assert [p.shape for p in squeezed] == [(6,)] * 4
    np.testing.assert_array_equal(squeezed[2].asnumpy(), data[2])
    assert isinstance(mx.nd.split_v2(array, 1), mx.nd.NDArray)
    with pytest.raises(ValueError, match="tuple of ints"):
        mx.nd.split_v2(array, [1])
    with pytest.raises(ShapeError, match="equal sections"):
        mx.nd.split_v2(array, 4, axis=1)
    with pytest.raises(ShapeError, match="length 1"):  # MXNet: "expected axis size of 1"
        mx.nd.split_v2(array, 2, axis=0, squeeze_axis=True)


def test_linspace_and_eye_match_numpy(ctx):
    out = mx.nd.linspace(-1, 2, 7, ctx=ctx)
    assert out.dtype is np.float32 and out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), np.linspace(-1, 2, 7))
    np.testing.assert_allclose(
        mx.nd.linspace(0, 1, 4, endpoint=False, ctx=ctx).asnumpy(), [0, 0.25, 0.5, 0.75]
    )
    np.testing.assert_array_equal(mx.nd.eye(3, 4, 1, ctx=ctx).asnumpy(), np.eye(3, 4, 1))
    square = mx.nd.eye(2, ctx=ctx, dtype="int32")
    assert square.dtype is np.int32
    np.testing.assert_array_equal(square.asnumpy(), np.eye(2))
    with pytest.raises(NotImplementedError, match="stype='csr'"):
        mx.nd.eye(2, stype="csr")


def test_from_numpy_shares_memory_or_copies():
    host = np.arange(6, dtype=np.float64).reshape(2, 3)
    shared = mx.nd.from_numpy(host)
    assert shared.dtype is np.float64 and shared.context == mx.cpu(0)
    copied = mx.nd.from_numpy(host, zero_copy=False)
    shared[0, 0] = 42
    assert host[0, 0] == 42 and copied.asnumpy()[0, 0] == 0
    with pytest.raises(ValueError, match="C-contiguous"):
        mx.nd.from_numpy(host.T)


def test_from_numpy_zero_copy_leaves_the_numpy_array_read_only():
    """As MXNet 1.9.1 (its test_zero_from_numpy): the NDArray owns the memory now."""
    host = np.arange(6, dtype=np.float32).reshape(3, 2)
    first = mx.nd.from_numpy(host)
    with pytest.raises(ValueError, match="read-only"):
        host[2, 1] = 0
    again = mx.nd.from_numpy(host)  # of an array already read-only: still writable
    again[2, 1] = 100
    assert host[2, 1] == 100 and first.asnumpy()[2, 1] == 100


def test_dlpack_round_trip_shares_memory(ctx):
    array = mx.nd.array(values((2, 3)), ctx=ctx)
    for capsule in (mx.nd.to_dlpack_for_read(array), array.to_dlpack_for_write()):
        view = mx.nd.from_dlpack(capsule)
        assert view.context.device_type == ctx.device_type
        np.testing.assert_array_equal(view.asnumpy(), array.asnumpy())
    view[0, 0] = -5  # through the write capsule
    assert array.asnumpy()[0, 0] == -5
    host = np.ones((2, 2), dtype=np.float32)
    np.testing.assert_array_equal(mx.nd.from_dlpack(host).asnumpy(), host)
    consumed = mx.nd.to_dlpack_for_read(array)
    mx.nd.from_dlpack(consumed)
    with pytest.raises(TypeError, match="consumed already"):
        mx.nd.from_dlpack(consumed)


def test_ndarray_extra_methods(ctx):
    data = values((2, 3))
    array = mx.nd.array(data, ctx=ctx)
    assert array.as_nd_ndarray() is array and array.writable and array.grad is None
    dense = array.tostype("default")
    assert dense is not array
    np.testing.assert_array_equal(dense.asnumpy(), data)
    as_csr = array.tostype("csr")
    assert as_csr.stype == "csr" and as_csr.context == ctx
    np.testing.assert_array_equal(as_csr.asnumpy(), data)
    detached = array.detach()
    detached[0, 0] = 11
    assert array.asnumpy()[0, 0] == 11
    wide = mx.nd.array(data[:1], ctx=ctx).broadcast_like(array)
    np.testing.assert_array_equal(wide.asnumpy(), np.broadcast_to(data[:1], (2, 3)))
    with pytest.raises(NotImplementedError, match="autograd"):
        array.attach_grad()
    with pytest.raises(NotImplementedError, match="autograd"):
        array.backward()


def test_slice_assign_writes_in_place(ctx):
    data = values((4, 5))
    array = mx.nd.array(data, ctx=ctx)
    patch = np.full((2, 2), -1, dtype=np.float32)
    assert array.slice_assign(mx.nd.array(patch, ctx=ctx), (1, 0), (3, 4), (None, 2)) is array
    expected = data.copy()
    expected[1:3, 0:4:2] = patch
    array.slice_assign_scalar(8, (0, 4), (1, 5), ())
    expected[0:1, 4:5] = 8
    np.testing.assert_array_equal(array.asnumpy(), expected)


def test_refusals_say_why():
    with pytest.raises(NotImplementedError, match="use mx.image.imdecode"):
        mx.nd.imdecode(b"\x89PNG")
    with pytest.raises(NotImplementedError, match="Gluon"):
        mx.nd.CachedOp(mx.sym.Variable("x"))


def test_utils_and_random_aliases():
    assert mx.nd.utils.zeros is mx.nd.zeros and mx.nd.utils.save is mx.nd.save
    assert mx.nd.random.current_context is mx.current_context


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_contrib_isinf_isfinite_isnan(ctx, dtype):
    """MXNet's Python-level mx.nd.contrib functions: 0/1 in the data's dtype."""
    values = np.array([1.0, np.inf, -np.inf, np.nan, -2.0], dtype=dtype)
    data = mx.nd.array(values, ctx=ctx, dtype=dtype)
    for name, expected in [("isinf", np.isinf), ("isfinite", np.isfinite), ("isnan", np.isnan)]:
        out = getattr(mx.nd.contrib, name)(data)
        assert out.dtype is np.dtype(dtype).type
        np.testing.assert_array_equal(out.asnumpy(), expected(values).astype(dtype))


def test_contrib_isinf_isfinite_isnan_of_integers(ctx):
    data = mx.nd.array([1, -5], ctx=ctx, dtype="int32")
    np.testing.assert_array_equal(mx.nd.contrib.isinf(data).asnumpy(), [0, 0])
    np.testing.assert_array_equal(mx.nd.contrib.isnan(data).asnumpy(), [0, 0])
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(data).asnumpy(), [1, 1])
