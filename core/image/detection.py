"""MXNet's object-detection image API (``mx.image.detection``), which rebind refuses.

``ImageDetIter`` and the ``Det*Aug`` augmenters move bounding boxes along with the
pixels; rebind rebuilds the image-classification pipeline only. Each name exists so
that code importing it fails where it is used, with this reason.
"""

__all__ = [
    "CreateDetAugmenter",
    "CreateMultiRandCropAugmenter",
    "DetAugmenter",
    "DetBorrowAug",
    "DetHorizontalFlipAug",
    "DetRandomCropAug",
    "DetRandomPadAug",
    "DetRandomSelectAug",
    "ImageDetIter",
]

REASON = (
    "mx.image's object-detection API (ImageDetIter, Det*Aug, CreateDetAugmenter) is not "
    "in rebind: only the image-classification pipeline of issue #17 is"
)


class _Refused:
    """A detection class: instantiating it raises NotImplementedError with REASON."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: {REASON}")


class DetAugmenter(_Refused):
    """MXNet's base class of detection augmenters (not in rebind)."""


class DetBorrowAug(DetAugmenter):
    """MXNet's wrapper of a classification augmenter for detection (not in rebind)."""


class DetRandomSelectAug(DetAugmenter):
    """MXNet's random choice among detection augmenters (not in rebind)."""


class DetHorizontalFlipAug(DetAugmenter):
    """MXNet's box-aware horizontal flip (not in rebind)."""


class DetRandomCropAug(DetAugmenter):
    """MXNet's box-aware random crop (not in rebind)."""


class DetRandomPadAug(DetAugmenter):
    """MXNet's box-aware random padding (not in rebind)."""


class ImageDetIter(_Refused):
    """MXNet's detection data iterator (not in rebind)."""


def CreateDetAugmenter(*args, **kwargs):  # noqa: N802  (MXNet's name)
    """MXNet's detection augmenter list (not in rebind)."""
    raise NotImplementedError(f"CreateDetAugmenter: {REASON}")


def CreateMultiRandCropAugmenter(*args, **kwargs):  # noqa: N802  (MXNet's name)
    """MXNet's multi-crop detection augmenter (not in rebind)."""
    raise NotImplementedError(f"CreateMultiRandCropAugmenter: {REASON}")
