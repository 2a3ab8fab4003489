"""MXNet's detection augmenters: the ``Det*Aug`` classes and ``CreateMultiRandCropAugmenter``.

A detection augmenter is called as ``aug(src, label)`` and returns ``(src, label)``:
``src`` an HWC image NDArray, ``label`` a NumPy array of objects, one row
``[class id, xmin, ymin, xmax, ymax, extra...]`` with coordinates normalised to
[0, 1]. Random choices come from Python's ``random`` in the same order as MXNet
1.9.1's, so after ``random.seed(n)`` both produce the same crops, pads and flips.
"""

import json
import logging
import math
import random
from numbers import Number

import numpy as np

from ..ndarray import NDArray
from .augmenters import (
    Augmenter,
)
from .image import copyMakeBorder, fixed_crop

__all__ = [
    "CreateMultiRandCropAugmenter",
    "DetAugmenter",
    "DetBorrowAug",
    "DetHorizontalFlipAug",
    "DetRandomCropAug",
    "DetRandomPadAug",
    "DetRandomSelectAug",
]

_BORDER_CONSTANT_ISOLATED = 16  # cv2.BORDER_CONSTANT | cv2.BORDER_ISOLATED, MXNet's choice


class DetAugmenter:
    """Base class of detection augmenters; keeps its arguments for ``dumps``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for key, value in self._kwargs.items():
            if isinstance(value, NDArray):
                value = value.asnumpy()
            if isinstance(value, np.ndarray):
                self._kwargs[key] = value.tolist()

    def dumps(self):
        """The augmenter as a JSON string: ``[class name in lower case, arguments]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        raise NotImplementedError("Must override implementation.")


class DetBorrowAug(DetAugmenter):
    """Apply a classification ``Augmenter`` that leaves the boxes where they are."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError(
                f"DetBorrowAug: Borrowing from invalid Augmenter: expected an "
                f"mx.image.Augmenter, got {type(augmenter).__name__}"
            )
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        """``[name, the borrowed augmenter's dumps]`` (a list, as in MXNet)."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return (self.augmenter(src), label)


class DetRandomSelectAug(DetAugmenter):
    """Apply one augmenter of ``aug_list`` at random, or none with probability ``skip_prob``."""

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError(
                    f"DetRandomSelectAug: Allow DetAugmenter in list only, got {type(aug).__name__}"
                )
        if not aug_list:
            skip_prob = 1  # nothing to choose from
        self.aug_list = aug_list
        self.skip_prob = skip_prob

    def dumps(self):
        """``[name, [dumps of each augmenter]]``."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return (src, label)
        # MXNet shuffles the list in place and takes the first: the same draws
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability ``p``, mirror the image and its boxes left to right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            xp = src.context.backend.xp
            src = NDArray(xp.ascontiguousarray(xp.flip(src.data, axis=1)), src.context)
            self._flip_label(label)
        return (src, label)

    def _flip_label(self, label):
        """Mirror the x coordinates of ``label`` in place."""
        left = 1.0 - label[:, 3]
        label[:, 3] = 1.0 - label[:, 1]
        label[:, 1] = left


def _as_range(owner, name, value):
    """A (low, high) pair; a single number means a fixed value, as MXNet takes it."""
    if isinstance(value, (tuple, list)):
        return value
    if not isinstance(value, Number):
        raise TypeError(f"{owner}: {name} must be a number or a (low, high) pair, got {value!r}")
    logging.info("Using fixed %s: %s in %s", name.replace("_", " "), value, owner)
    return (value, value)


class _InvalidRange(ValueError, TypeError):
    """An impossible area or aspect ratio range (MXNet raises a TypeError there)."""


def _draw_size(aspect_ratio_range, min_area, max_area):
    """A random aspect ratio and the height range MXNet derives from it, or None."""
    ratio = random.uniform(*aspect_ratio_range)
    if ratio <= 0:
        return None
    return ratio, int(round(math.sqrt(min_area / ratio))), int(round(math.sqrt(max_area / ratio)))


def _areas(boxes):
    """Areas of ``[xmin, ymin, xmax, ymax]`` rows (0 for empty boxes)."""
    return np.maximum(0, boxes[:, 3] - boxes[:, 1]) * np.maximum(0, boxes[:, 2] - boxes[:, 0])


class DetRandomCropAug(DetAugmenter):
    """Crop a random region that keeps enough of the objects, and re-express their boxes.

    Args:
        min_object_covered: every object the crop touches must keep more than this
            fraction of its area.
        aspect_ratio_range: (low, high) width / height of the crop (a number: fixed).
        area_range: (low, high) crop area as a fraction of the image (a number: fixed).
        min_eject_coverage: objects keeping no more than this fraction are dropped.
        max_attempts: proposals to try before giving the image back unchanged.
    """

    def __init__(
        self,
        min_object_covered=0.1,
        aspect_ratio_range=(0.75, 1.33),
        area_range=(0.05, 1.0),
        min_eject_coverage=0.3,
        max_attempts=50,
    ):
        aspect_ratio_range = _as_range("DetRandomCropAug", "aspect_ratio", aspect_ratio_range)
        area_range = _as_range("DetRandomCropAug", "area_range", area_range)
        super().__init__(
            min_object_covered=min_object_covered,
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            min_eject_coverage=min_eject_coverage,
            max_attempts=max_attempts,
        )
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            raise _InvalidRange(
                f"DetRandomCropAug: invalid area_range {area_range}: expected "
                "0 <= low <= high, high > 0"
            )
        if aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            raise _InvalidRange(
                f"DetRandomCropAug: invalid aspect_ratio_range {aspect_ratio_range}: "
                "expected 0 < low <= high"
            )
        self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return (src, label)

    def _satisfies(self, label, box, width, height):
        """MXNet's constraints: the crop is > 1 pixel and covers every touched object enough."""
        xmin, ymin, xmax, ymax = box
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        object_areas = _areas(label[:, 1:])
        valid = np.where(object_areas * width * height > 2)[0]
        if valid.size < 1:
            return False
        boxes = label[valid, 1:]
        left = np.maximum(boxes[:, 0], float(xmin) / width)
        right = np.minimum(boxes[:, 2], float(xmax) / width)
        top = np.maximum(boxes[:, 1], float(ymin) / height)
        bottom = np.minimum(boxes[:, 3], float(ymax) / height)
        inside = np.stack([left, top, right, bottom], axis=1)
        inside[np.logical_or(left >= right, top >= bottom)] = 0
        coverages = _areas(inside) / object_areas[valid]
        coverages = coverages[coverages > 0]
        return coverages.size > 0 and np.amin(coverages) > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """Boxes relative to the crop, clipped; objects covered too little are dropped."""
        xmin, ymin = float(crop_box[0]) / width, float(crop_box[1]) / height
        w, h = float(crop_box[2]) / width, float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - xmin) / w
        out[:, (2, 4)] = (out[:, (2, 4)] - ymin) / h
        out[:, 1:5] = np.minimum(1, np.maximum(0, out[:, 1:5]))
        coverage = _areas(out[:, 1:]) * w * h / _areas(label[:, 1:])
        valid = (
            (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (coverage > self.min_eject_coverage)
        )
        return out[valid] if valid.any() else None

    def _random_crop_proposal(self, label, height, width):
        """``(x, y, w, h, new label)`` of an accepted crop, or ``()``."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            drawn = _draw_size(self.aspect_ratio_range, min_area, max_area)
            if drawn is None:
                continue
            ratio, h, max_h = drawn
            if round(max_h * ratio) > width:
                max_h = int((width + 0.4999999) / ratio)  # largest max_h that fits the width
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            area = w * h
            if area < min_area:  # rounding may leave the area just outside the range
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._satisfies(label, (x, y, x + w, y + h), width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Place the image at a random spot of a larger canvas filled with ``pad_val``.

    Args:
        aspect_ratio_range: (low, high) width / height of the canvas (a number: fixed).
        area_range: (low, high) canvas area relative to the image; high must exceed 1.
        max_attempts: proposals to try before giving the image back unchanged.
        pad_val: the fill, one value per channel (or one for all).
    """

    def __init__(
        self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0), max_attempts=50,
        pad_val=(128, 128, 128),
    ):  # fmt: skip
        if not isinstance(pad_val, (list, tuple)):
            if not isinstance(pad_val, Number):
                raise TypeError(
                    f"DetRandomPadAug: pad_val must be a number or a tuple, got {pad_val!r}"
                )
        aspect_ratio_range = _as_range("DetRandomPadAug", "aspect_ratio", aspect_ratio_range)
        area_range = _as_range("DetRandomPadAug", "area_range", area_range)
        super().__init__(
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            max_attempts=max_attempts,
            pad_val=pad_val,
        )
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            raise _InvalidRange(
                f"DetRandomPadAug: invalid area_range {area_range}: expected low <= high, high > 1"
            )
        if aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            raise _InvalidRange(
                f"DetRandomPadAug: invalid aspect_ratio_range {aspect_ratio_range}: "
                "expected 0 < low <= high"
            )
        self.enabled = True

    def __call__(self, src, label):
        height, width, _ = src.shape
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            fill = self.pad_val if isinstance(self.pad_val, (list, tuple)) else (self.pad_val,) * 3
            src = copyMakeBorder(
                src, y, h - y - height, x, w - x - width, _BORDER_CONSTANT_ISOLATED, values=fill
            )
        return (src, label)

    def _update_labels(self, label, pad_box, height, width):
        """Boxes relative to the canvas."""
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        """``(x, y, w, h, new label)`` of a canvas at least 2 pixels larger each way, or ``()``."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            drawn = _draw_size(self.aspect_ratio_range, min_area, max_area)
            if drawn is None:
                continue
            ratio, h, max_h = drawn
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue  # marginal padding is not worth it
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def _align(params):
    """Each parameter as a list, single values repeated to the longest list's length."""
    lists = [p if isinstance(p, list) else [p] for p in params]
    count = max([1] + [len(p) for p in lists])
    for number, values in enumerate(lists):
        if len(values) not in (1, count):
            raise ValueError(
                f"CreateMultiRandCropAugmenter: a parameter lists {len(values)} values, "
                f"another {count}: give one value or {count}"
            )
        lists[number] = values * (count // len(values))
    return lists


def CreateMultiRandCropAugmenter(  # noqa: N802  (MXNet's name)
    min_object_covered=0.1,
    aspect_ratio_range=(0.75, 1.33),
    area_range=(0.05, 1.0),
    min_eject_coverage=0.3,
    max_attempts=50,
    skip_prob=0,
):
    """A ``DetRandomSelectAug`` over one ``DetRandomCropAug`` per listed parameter value.

    Each parameter is a value or a list of values; lists give one crop augmenter per
    entry, single values are shared by all.
    """
    params = [min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts]
    augs = [
        DetRandomCropAug(
            min_object_covered=moc,
            aspect_ratio_range=arr,
            area_range=ar,
            min_eject_coverage=mec,
            max_attempts=ma,
        )
        for moc, arr, ar, mec, ma in zip(*_align(params), strict=True)
    ]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)
