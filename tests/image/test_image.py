"""mx.image's decode, resize, crop, border and normalise functions against MXNet 1.9.1.

Decoding (PNG and JPEG) and every crop are exact. Resizing is exact for nearest,
bilinear, area and Lanczos; bicubic may differ by 1 (uint8) between MXNet's OpenCV
4.8 and the OpenCV of this environment, whose fixed-point cubic weights changed.
"""

import numpy as np
import pytest

pytest.importorskip("cv2")

import rebind as mx  # noqa: E402
from rebind import image  # noqa: E402

from . import golden  # noqa: E402

NAMES = ["color_png", "color_jpg", "small_png", "small_jpg", "gray_png", "gray_jpg"]
NAMES += ["wide_png", "wide_jpg"]
RESIZE_ATOL = {0: 0, 1: 0, 2: 1, 3: 0, 4: 0}


@pytest.fixture
def src():
    return image.imdecode(golden.encoded("color_png"))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("flag", [0, 1])
@pytest.mark.parametrize("to_rgb", [0, 1])
def test_imdecode_matches_mxnet(name, flag, to_rgb):
    got = image.imdecode(golden.encoded(name), flag=flag, to_rgb=to_rgb)
    assert isinstance(got, mx.nd.NDArray) and got.dtype == np.uint8
    np.testing.assert_array_equal(got.asnumpy(), golden.arrays()[f"decode.{name}.{flag}.{to_rgb}"])


def test_decode_image_is_the_numpy_level_decoder():
    got = image.decode_image(golden.encoded("gray_png"), flag=0)
    assert isinstance(got, np.ndarray) and got.shape == (16, 12, 1)
    np.testing.assert_array_equal(got, golden.arrays()["decode.gray_png.0.1"])
    buf = np.frombuffer(golden.encoded("color_jpg"), np.uint8)
    np.testing.assert_array_equal(
        image.decode_image(buf, to_rgb=False), golden.arrays()["decode.color_jpg.1.0"]
    )


def test_imdecode_accepts_an_ndarray_and_fills_out():
    buf = mx.nd.array(np.frombuffer(golden.encoded("small_png"), np.uint8), dtype="uint8")
    out = mx.nd.zeros((13, 9, 3), dtype="uint8")
    assert image.imdecode(buf, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), golden.arrays()["decode.small_png.1.1"])


def test_imread_reads_a_file(tmp_path):
    path = tmp_path / "x.png"
    path.write_bytes(golden.encoded("wide_png"))
    np.testing.assert_array_equal(
        image.imread(str(path), flag=0).asnumpy(), golden.arrays()["decode.wide_png.0.1"]
    )
    with pytest.raises(OSError, match="missing.png"):
        image.imread(str(tmp_path / "missing.png"))


def test_imdecode_refuses_bad_input():
    with pytest.raises(ValueError, match="bytes"):
        image.imdecode("not bytes")
    with pytest.raises(ValueError, match="empty"):
        image.imdecode(b"")
    with pytest.raises(ValueError, match="not a valid image"):
        image.imdecode(b"\x00" * 64)


@pytest.mark.parametrize("interp", range(5))
@pytest.mark.parametrize("size", [(11, 7), (40, 25), (20, 30)])
def test_imresize_matches_mxnet(src, interp, size):
    got = image.imresize(src, *size, interp=interp)
    expected = golden.arrays()[f"imresize.{interp}.{size[0]}x{size[1]}"]
    assert got.dtype == np.uint8 and got.shape == expected.shape
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=0, atol=RESIZE_ATOL[interp])


@pytest.mark.parametrize("interp", range(5))
def test_imresize_float32_matches_mxnet(src, interp):
    got = image.imresize(src.astype("float32"), 13, 9, interp=interp)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), golden.arrays()[f"imresize_f32.{interp}"], atol=1e-3)


def test_imresize_refuses_unknown_interp(src):
    with pytest.raises(ValueError, match="interp"):
        image.imresize(src, 4, 4, interp=9)


@pytest.mark.parametrize("size,interp", [(10, 2), (10, 9), (40, 9), (12, 1)])
def test_resize_short_matches_mxnet(src, size, interp):
    expected = golden.arrays()[f"resize_short.{size}.{interp}"]
    got = image.resize_short(src, size, interp).asnumpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1)


def test_fixed_crop_matches_mxnet_and_copies(src):
    plain = image.fixed_crop(src, 3, 2, 8, 10)
    np.testing.assert_array_equal(plain.asnumpy(), golden.arrays()["fixed_crop.plain"])
    plain[:] = 0
    assert src.asnumpy()[2:12, 3:11].any()
    sized = image.fixed_crop(src, 3, 2, 8, 10, size=(5, 6)).asnumpy()
    np.testing.assert_allclose(sized, golden.arrays()["fixed_crop.sized"], rtol=0, atol=1)


@pytest.mark.parametrize("size", [(8, 8), (40, 10)])
def test_center_crop_matches_mxnet(src, size):
    out, rect = image.center_crop(src, size)
    key = f"center_crop.{size[0]}x{size[1]}"
    assert list(rect) == golden.meta()[key]
    np.testing.assert_allclose(out.asnumpy(), golden.arrays()[key], rtol=0, atol=1)


def test_random_crops_draw_as_mxnet(src):
    import random

    random.seed(3)
    rects = [list(image.random_crop(src, (7, 9))[1]) for _ in range(5)]
    assert rects == golden.meta()["random_crop.seed3"]
    random.seed(4)
    rects = [list(image.random_size_crop(src, (6, 6), 0.3, (0.75, 1.33))[1]) for _ in range(5)]
    assert rects == golden.meta()["random_size_crop.seed4"]


def test_random_size_crop_output_and_fallback(src):
    out, (x, y, w, h) = image.random_size_crop(src, (5, 4), (0.1, 0.5), (0.5, 2.0))
    assert out.shape == (4, 5, 3) and 0 <= x <= 32 - w and 0 <= y <= 24 - h
    # an impossible aspect ratio falls back to the center crop
    out, rect = image.random_size_crop(src, (5, 4), 1.0, (50.0, 60.0))
    assert rect == image.center_crop(src, (5, 4))[1]
    with pytest.warns(DeprecationWarning):
        image.random_size_crop(src, (5, 4), None, (0.5, 2.0), min_area=0.5)


def test_scale_down_matches_mxnet():
    for src_size, size, expected in golden.meta()["scale_down"]:
        assert list(image.scale_down(tuple(src_size), tuple(size))) == expected


@pytest.mark.parametrize("border", range(5))
def test_copy_make_border_matches_mxnet(src, border):
    got = image.copyMakeBorder(src, 1, 2, 3, 4, type=border, values=(9, 20, 30))
    np.testing.assert_array_equal(got.asnumpy(), golden.arrays()[f"border.{border}"])


def test_copy_make_border_single_value(src):
    got = image.copyMakeBorder(src, 2, 0, 1, 0, value=7)
    np.testing.assert_array_equal(got.asnumpy(), golden.arrays()["border.value"])


def test_color_normalize_matches_mxnet(src):
    data = src.astype("float32")
    out = image.color_normalize(data, mx.nd.array([120.0, 110.0, 100.0]), mx.nd.array([50, 60, 70]))
    assert out is data
    np.testing.assert_allclose(out.asnumpy(), golden.arrays()["color_normalize"], rtol=1e-6)


def test_missing_opencv_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError, match=r"rebind\[image\]"):
        image.decode_image(golden.encoded("color_png"))


@pytest.fixture
def chw(src):
    return mx.nd.array(src.asnumpy().transpose(2, 0, 1))


@pytest.mark.parametrize(
    "key,angle,kwargs",
    [("30", 30, {}), ("in", -50, {"zoom_in": True}), ("out", 70, {"zoom_out": True})],
)
def test_imrotate_matches_mxnet(chw, key, angle, kwargs):
    got = image.imrotate(chw, angle, **kwargs)
    assert got.shape == chw.shape and got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), golden.arrays()[f"rotate.{key}"], atol=1e-3)


def test_imrotate_batch_and_random_rotate_match_mxnet(chw):
    batch = mx.nd.array(np.stack([chw.asnumpy(), chw.asnumpy() * 0.5]))
    got = image.imrotate(batch, mx.nd.array([10, -45]))
    np.testing.assert_allclose(got.asnumpy(), golden.arrays()["rotate.batch"], atol=1e-3)
    np.random.seed(2)
    got = image.random_rotate(batch, (-90, 90), zoom_in=True)
    np.testing.assert_allclose(got.asnumpy(), golden.arrays()["rotate.random"], atol=1e-3)


def test_imrotate_refuses_bad_input(chw):
    with pytest.raises(TypeError, match="float32"):
        image.imrotate(chw.astype("float64"), 10)
    with pytest.raises(ValueError, match="both"):
        image.imrotate(chw, 10, zoom_in=True, zoom_out=True)
    with pytest.raises(ValueError, match="number of images"):
        image.imrotate(mx.nd.zeros((2, 3, 4, 4)), mx.nd.array([1, 2, 3]))


def test_decode_and_read_errors_are_mxnet_errors(tmp_path):
    # MXNet's test_image: @raises(mx.base.MXNetError) around these three calls
    for call in (
        lambda: mx.image.imdecode(b"", to_rgb=0),
        lambda: mx.image.imdecode(b"clearly not image content"),
        lambda: mx.img.image.imread(str(tmp_path / "missing.jpg")),
    ):
        with pytest.raises(mx.base.MXNetError):
            call()
    with pytest.raises(ValueError, match="empty"):
        mx.image.imdecode(b"")
    with pytest.raises(OSError, match="missing.jpg"):
        mx.image.imread(str(tmp_path / "missing.jpg"))
