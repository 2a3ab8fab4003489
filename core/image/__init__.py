"""``mx.image``: read, decode, resize, crop and augment images; ``ImageIter``.

MXNet 1.9's Python image API on OpenCV (the optional extra ``image``). The pieces:
``image`` (decoding and the geometric functions), ``augmenters`` (the ``*Aug``
classes), ``create`` (``CreateAugmenter``), ``image_iter`` (``ImageIter``) and
``opencv`` (loading OpenCV; the errors, all MXNetErrors as in MXNet).
MXNet's detection API is in ``detection`` (also ``det``): ``ImageDetIter``, with
the ``Det*Aug`` augmenters of ``det_augmenters`` and ``CreateDetAugmenter``.
"""

from . import augmenters, create, detection, image, image_iter
from .augmenters import *  # noqa: F403
from .augmenters import __all__ as _augmenter_names
from .create import CreateAugmenter
from .detection import *  # noqa: F403
from .detection import __all__ as _detection_names
from .image import *  # noqa: F403
from .image import __all__ as _image_names
from .image_iter import ImageIter

det = detection  # MXNet's short name of the module

__all__ = [
    *_image_names,
    *_augmenter_names,
    *_detection_names,
    "CreateAugmenter",
    "ImageIter",
    "augmenters",
    "create",
    "det",
    "detection",
    "image",
    "image_iter",
]
