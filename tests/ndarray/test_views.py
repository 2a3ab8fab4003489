"""NDArray methods that copy or view (flatten, expand_dims, squeeze), broadcast_to, ufuncs.

Expected values are by definition (NumPy's shapes) or as MXNet 1.9.1 gives them
(noted where so); its test_ndarray.py checks the same behaviours.
"""

import itertools

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError


def _arange(ctx, shape):
    return mx.nd.array(np.arange(np.prod(shape)).reshape(shape), ctx=ctx)


@pytest.mark.parametrize(
    ("method", "kwargs", "shape"),
    [
        ("flatten", {}, (2, 3, 4)),
        ("expand_dims", {"axis": 1}, (2, 3)),
        ("expand_dims", {"axis": -1}, (2, 3)),
        ("squeeze", {}, (1, 3, 1)),
        ("squeeze", {"axis": (0, 2)}, (1, 3, 1)),
    ],
)
def test_copy_by_default_view_when_inplace(ctx, method, kwargs, shape):
    data = _arange(ctx, shape)
    expected = {
        "flatten": lambda a: a.reshape(a.shape[0], -1),
        "expand_dims": lambda a: np.expand_dims(a, kwargs.get("axis")),
        "squeeze": lambda a: np.squeeze(a, kwargs.get("axis")),
    }[method](data.asnumpy())
    copy = getattr(data, method)(**kwargs)
    view = getattr(data, method)(inplace=True, **kwargs)
    np.testing.assert_array_equal(copy.asnumpy(), expected)
    np.testing.assert_array_equal(view.asnumpy(), expected)
    data[:] = -1
    np.testing.assert_array_equal(copy.asnumpy(), expected)  # untouched: a copy
    assert (view.asnumpy() == -1).all()  # follows: a view


def test_operator_calls_never_return_views_of_their_inputs(ctx):
    """MXNet's imperative calls write new arrays: mx.nd.flatten(x) is a copy, as in 1.9.1."""
    data = _arange(ctx, (2, 3))
    outputs = [mx.nd.flatten(data), mx.nd.expand_dims(data, axis=0), mx.nd.reshape(data, (3, 2))]
    data[:] = -1
    for out in outputs:
        np.testing.assert_array_equal(out.asnumpy().reshape(-1), np.arange(6))


def test_squeeze_inplace_keeps_one_axis_and_checks_axes(ctx):
    assert mx.nd.ones((1, 1), ctx=ctx).squeeze(inplace=True).shape == (1,)
    data = mx.nd.ones((1, 3), ctx=ctx)
    with pytest.raises(ShapeError, match="axis 1 has length 3"):
        data.squeeze(axis=1, inplace=True)
    with pytest.raises(ShapeError, match="out of range"):
        data.squeeze(axis=2, inplace=True)
    with pytest.raises(ShapeError, match="twice"):
        data.squeeze(axis=(0, -2), inplace=True)


def test_expand_dims_inplace_refuses_an_axis_out_of_range(ctx):
    with pytest.raises(ShapeError, match=r"axis 3 is out of range for a 2-d array"):
        mx.nd.ones((2, 3), ctx=ctx).expand_dims(axis=3, inplace=True)


@pytest.mark.parametrize(
    "shape", [np.array([2, 3, 4]), (np.int64(2), np.int64(3), np.int64(4)), [2, 3, 4]]
)
def test_broadcast_to_takes_any_sequence_of_ints(ctx, shape):
    data = mx.nd.array([[1], [2], [3]], ctx=ctx)
    out = data.broadcast_to(shape)
    np.testing.assert_array_equal(out.asnumpy(), np.broadcast_to([[1], [2], [3]], (2, 3, 4)))


def test_broadcast_to_refuses_axes_that_are_not_one(ctx):
    with pytest.raises(ShapeError, match=r"\(3, 2\) and requested shape \(3, 3\)"):
        mx.nd.ones((3, 2), ctx=ctx).broadcast_to((3, 3))
    with pytest.raises(ShapeError):
        mx.nd.ones((3, 2), ctx=ctx).broadcast_to((2,))


def test_slice_is_contiguous_agrees_with_numpy():
    """The rule MXNet's helper states, checked against NumPy's own contiguity flag."""
    shape = (4, 5, 6)
    slices = [slice(None), slice(2), slice(1, 3), slice(None, None, 2), slice(0, 1)]
    slices += [slice(None, None, -1), slice(3, None, -2), slice(2, 2)]
    values = np.arange(np.prod(shape)).reshape(shape)
    is_contiguous = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    for key in itertools.product(slices, repeat=3):
        assert is_contiguous(key, shape) == values[key].flags.c_contiguous, key


def test_numpy_functions_see_the_values_and_operators_stay_ndarrays(ctx):
    data = mx.nd.array([50000001, 3], ctx=ctx, dtype="int32")
    assert np.all(data == data) and not np.all(data == 3)
    np.testing.assert_array_equal(np.exp(mx.nd.zeros((2,), ctx=ctx)), [1.0, 1.0])
    host = np.array([10.0, 20.0], dtype=np.float32)
    values = mx.nd.array([1, 2], ctx=ctx)
    for result, expected in [
        (host + values, [11, 22]),
        (host - values, [9, 18]),
        (host / values, [10, 10]),
        (host > values, [1, 1]),
        (host <= values, [0, 0]),
        (np.float32(3) * values, [3, 6]),
    ]:
        assert isinstance(result, mx.nd.NDArray)
        np.testing.assert_array_equal(result.asnumpy(), expected)
