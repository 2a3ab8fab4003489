"""OpenCV for ``mx.image``: importing it, and the errors image functions raise.

MXNet runs OpenCV inside its C++ operators, so whatever OpenCV refuses (an
unknown interpolation or border code, a buffer that is no image) reaches
Python as ``MXNetError``. Here ``opencv(what)`` turns ``cv2.error`` into
``OpenCVError`` (an MXNetError) naming the function, and the other refusals
have their own MXNetError subclasses that also derive from the built-in
exception that fits.
"""

import contextlib

from ..errors import FormatError, RebindError

__all__ = [
    "ImageArgumentError",
    "ImageDecodeError",
    "ImageFileError",
    "OpenCVError",
    "load_cv2",
    "opencv",
]


class ImageDecodeError(FormatError):
    """Bytes that are no image OpenCV decodes (an MXNetError and a ValueError, as MXNet's)."""


class ImageFileError(RebindError, OSError):
    """An image file that cannot be read (an MXNetError, as MXNet's, and an OSError)."""


class ImageArgumentError(RebindError, ValueError):
    """An argument an image function refuses (an MXNetError, as MXNet's, and a ValueError)."""


class OpenCVError(RebindError):
    """OpenCV refused an operation (``cv2.error``), reported as MXNet does: an MXNetError."""


def load_cv2():
    """The OpenCV module, or ImportError naming the extra that provides it."""
    try:
        import cv2
    except ImportError as exc:
        raise ImportError(
            "mx.image needs OpenCV for decoding and resizing images: "
            "pip install 'rebind[image]' (installs opencv-python-headless)"
        ) from exc
    return cv2


@contextlib.contextmanager
def opencv(what):
    """``with opencv("imresize") as cv2:`` runs OpenCV calls, raising OpenCVError for theirs."""
    cv2 = load_cv2()
    try:
        yield cv2
    except cv2.error as exc:
        detail = " ".join(str(exc).split())  # OpenCV's text spans several lines
        raise OpenCVError(f"{what}: OpenCV failed: {detail}") from exc
