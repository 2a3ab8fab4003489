"""``CreateAugmenter`` and ``CreateDetAugmenter``: MXNet 1.9's standard augmenter lists.

One for image classification, one for object detection (``Det*Aug`` wrappers).
"""

import numpy as np

from ..ndarray import NDArray
from ..ndarray import array as nd_array
from .augmenters import (
    CastAug,
    CenterCropAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ForceResizeAug,
    HorizontalFlipAug,
    HueJitterAug,
    LightingAug,
    RandomCropAug,
    RandomGrayAug,
    RandomSizedCropAug,
    ResizeAug,
)
from .det_augmenters import (
    CreateMultiRandCropAugmenter,
    DetBorrowAug,
    DetHorizontalFlipAug,
    DetRandomPadAug,
    DetRandomSelectAug,
)

__all__ = ["CreateAugmenter", "CreateDetAugmenter"]

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
    auglist.extend(
        _color_augmenters(brightness, contrast, saturation, hue, pca_noise, rand_gray, mean, std)
    )
    return auglist


def _color_augmenters(brightness, contrast, saturation, hue, pca_noise, rand_gray, mean, std):
    """The colour steps shared by both lists: jitter, hue, lighting, gray, normalisation."""
    augs = []
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    mean = _checked_stat("mean", mean, _IMAGENET_MEAN)
    std = _checked_stat("std", std, _IMAGENET_STD)
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs


def CreateDetAugmenter(  # noqa: N802  (MXNet's name)
    data_shape,
    resize=0,
    rand_crop=0,
    rand_pad=0,
    rand_gray=0,
    rand_mirror=False,
    mean=None,
    std=None,
    brightness=0,
    contrast=0,
    saturation=0,
    pca_noise=0,
    hue=0,
    inter_method=2,
    min_object_covered=0.1,
    aspect_ratio_range=(0.75, 1.33),
    area_range=(0.05, 3.0),
    min_eject_coverage=0.3,
    max_attempts=50,
    pad_val=(127, 127, 127),
):
    """MXNet's standard augmenter list for detection images of ``data_shape`` (C, H, W).

    In order: shorter-edge resize (``resize`` > 0); with probability ``rand_crop`` a
    random crop (``CreateMultiRandCropAugmenter``: list-valued ``min_object_covered``,
    ``aspect_ratio_range``, ``area_range``, ``min_eject_coverage`` or ``max_attempts``
    give several croppers to choose from); a random mirror; with probability
    ``rand_pad`` a random pad (areas up to ``area_range[1]``, filled with ``pad_val``);
    the forced resize to (W, H); the cast to float32; then the colour steps of
    ``CreateAugmenter`` (``True`` ``mean``/``std`` for ImageNet's statistics).
    """
    auglist = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(
            CreateMultiRandCropAugmenter(
                min_object_covered,
                aspect_ratio_range,
                area_range,
                min_eject_coverage,
                max_attempts,
                skip_prob=(1 - rand_crop),
            )  # fmt: skip
        )
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:  # padding late keeps the earlier steps on the smaller image
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        auglist.append(DetRandomSelectAug([pad], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    # MXNet's detection list keeps True's statistics as float64 NumPy arrays (seen in dumps)
    mean = np.array(_IMAGENET_MEAN) if mean is True else mean
    std = np.array(_IMAGENET_STD) if std is True else std
    colors = _color_augmenters(
        brightness, contrast, saturation, hue, pca_noise, rand_gray, mean, std
    )
    auglist.extend(DetBorrowAug(aug) for aug in colors)
    return auglist
