"""rebind.image.opencv: what OpenCV and the image functions refuse surfaces as MXNetError.

MXNet runs OpenCV inside its operators, so its refusals reach Python as MXNetError
(MXNet's test_exc_handling.test_opencv_exception: imresize with interp=-1). The
behaviour checked here was observed on MXNet 1.9.1: interp -1, 9, 10 and 11, w=0 and a
2-D source raise MXNetError from imresize, interp=5 resizes, an unknown border type
raises MXNetError from copyMakeBorder, and imread of a file that is no image raises
MXNetError.
"""

import numpy as np
import pytest

pytest.importorskip("cv2")

import rebind as mx  # noqa: E402
from rebind.image.opencv import (  # noqa: E402
    ImageArgumentError,
    ImageDecodeError,
    OpenCVError,
    opencv,
)


@pytest.fixture
def img():
    return mx.nd.array(np.arange(12 * 16 * 3).reshape(12, 16, 3) % 251, dtype="uint8")


@pytest.mark.parametrize("interp", [-1, 9, 10, 11])
def test_imresize_unknown_interp_is_an_mxnet_error(img, interp):
    with pytest.raises(mx.base.MXNetError, match=f"interp={interp}") as info:
        mx.image.imresize(img, 320, 320, interp=interp)
    assert isinstance(info.value, ValueError)  # what rebind raised before stays caught


def test_imresize_bad_size_and_layout_are_mxnet_errors(img):
    with pytest.raises(ImageArgumentError, match="w=0"):
        mx.image.imresize(img, 0, 8)
    with pytest.raises(ImageArgumentError, match=r"\(12, 16\)"):
        mx.image.imresize(img[:, :, 0], 8, 8)


def test_imresize_takes_opencvs_exact_bilinear_as_mxnet(img):
    # interp 5 is OpenCV's INTER_LINEAR_EXACT: exact bilinear, so a 2x upscale of a
    # constant image stays constant
    flat = mx.nd.full((6, 8, 3), 7, dtype="uint8")
    out = mx.image.imresize(flat, 16, 12, interp=5)
    assert out.shape == (12, 16, 3)
    assert (out.asnumpy() == 7).all()
    assert mx.image.imresize(img, 8, 6, interp=5).shape == (6, 8, 3)


def test_an_opencv_refusal_is_an_mxnet_error_naming_the_function(img):
    with pytest.raises(OpenCVError, match="^copyMakeBorder: OpenCV failed: .*border type") as info:
        mx.image.copyMakeBorder(img, 1, 1, 1, 1, type=9)
    assert isinstance(info.value, mx.base.MXNetError)
    assert "\n" not in str(info.value)


def test_opencv_context_converts_only_opencv_errors():
    with pytest.raises(OpenCVError, match="^probe: OpenCV failed"):
        with opencv("probe") as cv2:
            cv2.resize(np.zeros((0, 0), np.uint8), (2, 2))
    with pytest.raises(KeyError):
        with opencv("probe"):
            raise KeyError("not OpenCV's")


def test_imread_of_a_file_that_is_no_image_names_the_file(tmp_path):
    path = tmp_path / "notes.jpg"
    path.write_bytes(b"this is not an image at all" * 10)
    with pytest.raises(ImageDecodeError, match=f"^imread: '{path}': .*not a valid image") as info:
        mx.image.imread(str(path))
    assert isinstance(info.value, mx.base.MXNetError)
