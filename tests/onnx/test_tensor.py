"""ONNX export of the shape, slicing, tiling and broadcasting operators, run in
ONNX Runtime against rebind (converters/tensor.py and tensor_slice.py).

Reshape's codes are checked with a fixed and with a dynamic batch; a dynamic
export is also run at a second batch size, where any baked-in batch dimension
would show.
"""

import numpy as np
import pytest

import rebind as mx

from .harness import check_export, rebind_outputs, run_onnx

RNG = np.random.default_rng(0)


def data(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def check(sym, inputs, tmp_path, dynamic=False, **kwargs):
    """check_export; a dynamic export is also run at twice the batch (axis 0 of every input)."""
    check_export(sym, {}, {}, inputs, tmp_path, dynamic=dynamic, **kwargs)
    if dynamic:
        other = {
            name: np.concatenate([value, value[::-1]], axis=0) for name, value in inputs.items()
        }
        expected = rebind_outputs(sym, {}, {}, other)
        got = run_onnx(tmp_path / "model.onnx", other)
        for a, b in zip(got, expected, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


X = mx.sym.var("data")


# -- Reshape -------------------------------------------------------------------------

RESHAPE_SPECS = [
    ((0, -1), False),
    ((-1,), False),
    ((0, 12, 5), False),
    ((-2,), False),
    ((0, -2), False),
    ((-3, -2), False),
    ((0, -3, 5), False),
    ((0, -4, 1, -1, 0, 0), False),
    ((0, 0, -4, 2, -1, 0), False),
    ((-4, 2, -1, -3, 0), False),
    ((0, 0, -3), False),
    ((-3, -3), False),
    ((0, 3, -1), False),
    ((-1, 0), True),
    ((0, -1), True),
    ((-1, 5), True),
    ((-1, -3), True),
    ((-2, -3), True),
]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize(("spec", "reverse"), RESHAPE_SPECS)
def test_reshape_codes(spec, reverse, dynamic, tmp_path):
    sym = mx.sym.Reshape(X, shape=spec, reverse=reverse)
    check(sym, {"data": data(2, 3, 4, 5)}, tmp_path, dynamic=dynamic)


def test_reshape_fixed_shape_and_alias(tmp_path):
    check(mx.sym.reshape(X, shape=(4, 30)), {"data": data(2, 3, 4, 5)}, tmp_path)


@pytest.mark.parametrize("dynamic", [False, True])
def test_reshape_legacy_target_shape(dynamic, tmp_path):
    sym = mx.sym.Reshape(X, target_shape=(0, 3, 20), keep_highest=True)
    check(sym, {"data": data(2, 3, 4, 5)}, tmp_path, dynamic=dynamic)
    sym = mx.sym.Reshape(X, target_shape=(6, 0))
    check(sym, {"data": data(2, 3, 4, 5)}, tmp_path)


@pytest.mark.parametrize("dynamic", [False, True])
def test_flatten_and_axis_permutations(dynamic, tmp_path):
    inputs = {"data": data(2, 3, 4)}
    for sym in (
        mx.sym.Flatten(X),
        mx.sym.transpose(X),
        mx.sym.transpose(X, axes=(0, 2, 1)),
        mx.sym.transpose(X, axes=(-1, 0, 1)),
        mx.sym.SwapAxis(X, dim1=1, dim2=2),
        mx.sym.swapaxes(X, dim1=0, dim2=-1),
    ):
        check(sym, inputs, tmp_path, dynamic=dynamic)


def test_expand_dims_and_squeeze(tmp_path):
    inputs = {"data": data(2, 1, 3, 1)}
    for sym in (
        mx.sym.expand_dims(X, axis=0),
        mx.sym.expand_dims(X, axis=-1),
        mx.sym.expand_dims(X, axis=2),
        mx.sym.squeeze(X),
        mx.sym.squeeze(X, axis=1),
        mx.sym.squeeze(X, axis=(1, -1)),
    ):
        check(sym, inputs, tmp_path, dynamic=True)
    check(mx.sym.squeeze(X), {"data": data(1, 1)}, tmp_path)  # never 0-d: (1,)


def test_reshape_like(tmp_path):
    like = mx.sym.var("like")
    inputs = {"data": data(2, 6, 5), "like": data(2, 3, 2, 1)}
    check(
        mx.sym.reshape_like(X, like, lhs_begin=1, lhs_end=2, rhs_begin=1, rhs_end=3),
        inputs,
        tmp_path,
        dynamic=True,
    )
    inputs = {"data": data(2, 6), "like": data(3, 4)}
    check(mx.sym.reshape_like(X, like), inputs, tmp_path)


def test_shape_and_size_array(tmp_path):
    inputs = {"data": data(2, 3, 4)}
    check(mx.sym.shape_array(X), inputs, tmp_path, dynamic=True)
    check(mx.sym.size_array(X), inputs, tmp_path, dynamic=True)


# -- joining and splitting ---------------------------------------------------------------


@pytest.mark.parametrize("dynamic", [False, True])
def test_concat_and_stack(dynamic, tmp_path):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    inputs = {"a": data(2, 3, 4), "b": data(2, 2, 4)}
    check(mx.sym.Concat(a, b, dim=1), inputs, tmp_path, dynamic=dynamic)
    check(mx.sym.concat(a, b, dim=-2), inputs, tmp_path, dynamic=dynamic)
    inputs = {"a": data(2, 3), "b": data(2, 3)}
    check(mx.sym.Concat(a, b, dim=0), inputs, tmp_path)
    check(mx.sym.stack(a, b, axis=1), inputs, tmp_path, dynamic=dynamic)
    check(mx.sym.stack(a, b, axis=-1), inputs, tmp_path)


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_slice_channel(opset, tmp_path):
    inputs = {"data": data(2, 6, 3)}
    check(mx.sym.SliceChannel(X, num_outputs=3), inputs, tmp_path, opset_version=opset)
    sym = mx.sym.split(X, num_outputs=3, axis=-1, squeeze_axis=True)
    check(sym, inputs, tmp_path, dynamic=True, opset_version=opset)
    sym = mx.sym.split(X, num_outputs=2, axis=0, squeeze_axis=True)
    check(sym, inputs, tmp_path, opset_version=opset)


# -- slicing -------------------------------------------------------------------------------


SLICES = [
    dict(begin=(0,), end=(1,)),
    dict(begin=(None, 1), end=(None, 3)),
    dict(begin=(1, -3, 0), end=(2, None, -1)),
    dict(begin=(None, None), end=(None, None), step=(1, 2)),
    dict(begin=(None, 3), end=(None, 0), step=(None, -1)),
    dict(begin=(None, None, -1), end=(None, None, None), step=(1, -2, -1)),
    dict(begin=(None, None), end=(None, -5), step=(1, -1)),
]


@pytest.mark.parametrize("spec", SLICES)
def test_slice(spec, tmp_path):
    check(mx.sym.slice(X, **spec), {"data": data(2, 4, 5)}, tmp_path, dynamic=True)


def test_crop_and_slice_axis(tmp_path):
    inputs = {"data": data(2, 4, 5)}
    check(mx.sym.crop(X, begin=(0, 1), end=(1, 3)), inputs, tmp_path)
    check(mx.sym.slice_axis(X, axis=1, begin=1, end=3), inputs, tmp_path, dynamic=True)
    check(mx.sym.slice_axis(X, axis=-1, begin=-3, end=None), inputs, tmp_path, dynamic=True)
    check(mx.sym.slice_axis(X, axis=0, begin=0, end=-1), inputs, tmp_path)


def test_slice_like(tmp_path):
    like = mx.sym.var("like")
    inputs = {"data": data(3, 4, 5), "like": data(2, 2, 3)}
    check(mx.sym.slice_like(X, like), inputs, tmp_path)
    check(mx.sym.slice_like(X, like, axes=(1, -1)), inputs, tmp_path)


@pytest.mark.parametrize("axis", [0, 1, (0, 2), (-1, 1)])
def test_reverse(axis, tmp_path):
    check(mx.sym.reverse(X, axis=axis), {"data": data(2, 3, 4)}, tmp_path, dynamic=True)
    check(mx.sym.flip(X, axis=axis), {"data": data(2, 3, 4)}, tmp_path)


# -- replication and broadcasting -------------------------------------------------------------


@pytest.mark.parametrize("reps", [(2,), (1, 3), (2, 1, 2), (2, 2, 1, 3)])
def test_tile(reps, tmp_path):
    check(mx.sym.tile(X, reps=reps), {"data": data(2, 3, 4)}, tmp_path, dynamic=True)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_repeat(axis, tmp_path):
    sym = mx.sym.repeat(X, repeats=2, axis=axis)
    check(sym, {"data": data(2, 3, 4)}, tmp_path)
    check(sym, {"data": data(2, 3, 4)}, tmp_path, dynamic=True)


def test_broadcasts(tmp_path):
    inputs = {"data": data(2, 1, 3)}
    check(mx.sym.broadcast_to(X, shape=(2, 4, 3)), inputs, tmp_path)
    check(mx.sym.broadcast_to(X, shape=(0, 4, 0)), inputs, tmp_path, dynamic=True)
    check(mx.sym.broadcast_axis(X, axis=1, size=5), inputs, tmp_path, dynamic=True)
    check(mx.sym.broadcast_axes(X, axis=(-2,), size=(2,)), inputs, tmp_path)
    inputs = {"data": data(1, 1, 3), "like": data(2, 4, 3)}
    like = mx.sym.var("like")
    check(mx.sym.broadcast_like(X, like), inputs, tmp_path)
    sym = mx.sym.broadcast_like(X, like, lhs_axes=(1,), rhs_axes=(1,))
    check(sym, inputs, tmp_path)
    sym = mx.sym.broadcast_like(X, like, lhs_axes=(0, 1), rhs_axes=(-3, 1))
    check(sym, inputs, tmp_path)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_zeros_and_ones_like(dtype, tmp_path):
    inputs = {"data": data(2, 3, dtype=dtype)}
    check(mx.sym.zeros_like(X), inputs, tmp_path, dynamic=True)
    check(mx.sym.ones_like(X) + X, inputs, tmp_path, dynamic=True)


def test_split_v2(tmp_path):
    inputs = {"data": data(2, 6, 3)}
    check(mx.sym.split_v2(X, (1, 4), axis=1), inputs, tmp_path, dynamic=True)
    check(mx.sym.split_v2(X, 3, axis=-1, squeeze_axis=True), inputs, tmp_path, dynamic=True)
    check(mx.sym.split_v2(X, 2, axis=0), inputs, tmp_path)
