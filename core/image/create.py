"""``CreateAugmenter``: MXNet 1.9's standard augmenter list for image classification."""

import numpy as np

from ..ndarray import NDArray
from ..ndarray import array as nd_array
from .augmenters import (
    CastAug,
    CenterCropAug,
    ColorJitterAug,
    ColorNormalizeAug,
    HorizontalFlipAug,
    HueJitterAug,
    LightingAug,
    RandomCropAug,
    RandomGrayAug,
    RandomSizedCropAug,
    ResizeAug,
)

__all__ = ["CreateAugmenter"]

_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array(
    [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]]
)
_IMAGENET_MEAN = [123.68, 116.28, 103.53]
_IMAGENET_STD = [58.395, 57.12, 57.375]


def _checked_stat(name, value, default):
    """``mean``/``std`` of CreateAugmenter: True for ImageNet's, else None or 1/3 values."""
    if value is True:
        return nd_array(default)
    if value is not None:
        if not isinstance(value, (np.ndarray, NDArray)) or value.shape[0] not in (1, 3):
            raise ValueError(
                f"CreateAugmenter: {name} must be True, None, or a NumPy array or NDArray "
                f"of 1 or 3 values, got {value!r}"
            )
    return value


def CreateAugmenter(  # noqa: N802  (MXNet's name)
    data_shape,
    resize=0,
    rand_crop=False,
    rand_resize=False,
    rand_mirror=False,
    mean=None,
    std=None,
    brightness=0,
    contrast=0,
    saturation=0,
    hue=0,
    pca_noise=0,
    rand_gray=0,
    inter_method=2,
):
    """MXNet's standard augmenter list for images of ``data_shape`` (C, H, W).

    In order: shorter-edge resize (``resize`` > 0); a random-sized, random or center
    crop to (W, H); a random mirror; the cast to float32; colour jitter; hue jitter;
    PCA lighting noise; random gray; then mean/std normalisation (``True`` for
    ImageNet's statistics).
    """
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError("CreateAugmenter: rand_resize=True needs rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    mean = _checked_stat("mean", mean, _IMAGENET_MEAN)
    std = _checked_stat("std", std, _IMAGENET_STD)
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
