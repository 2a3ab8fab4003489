"""``mx.image.ImageDetIter`` and the detection augmenters (MXNet's ``mx.image.detection``).

A detection label is a flat vector ``[header_width, object_width, extra header...,
id, xmin, ymin, xmax, ymax, extra..., id, ...]``: the header's first two values
give its own width (2 or more) and the width of each object (5 or more), box
coordinates are fractions of the image. ``ImageDetIter`` parses it into an
(objects, object_width) array, drops boxes with no area, passes image and boxes
through the ``Det*Aug`` list, and pads every batch label to (batch, max objects,
object_width) with -1 rows.
"""

import logging

import numpy as np

from ..io.base import DataDesc
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from .create import CreateDetAugmenter
from .det_augmenters import (
    CreateMultiRandCropAugmenter,
    DetAugmenter,
    DetBorrowAug,
    DetHorizontalFlipAug,
    DetRandomCropAug,
    DetRandomPadAug,
    DetRandomSelectAug,
)
from .image_iter import ImageIter
from .opencv import load_cv2

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

_IMAGENET_MEAN = np.array([123.68, 116.28, 103.53])
_IMAGENET_STD = np.array([58.395, 57.12, 57.375])


def parse_det_label(label):
    """The (objects, object_width) array of a raw detection label, boxes with no area dropped.

    Raises RuntimeError (as MXNet) for a label shorter than 7 values, one whose
    length does not fit its object width, or one with no valid box.
    """
    raw = np.asarray(label.asnumpy() if isinstance(label, NDArray) else label).ravel()
    if raw.size < 7:
        raise RuntimeError(
            f"Label shape is invalid: {raw.shape}: a detection label needs at least 7 "
            "values (header width, object width, and one [id, xmin, ymin, xmax, ymax])"
        )
    header_width, obj_width = int(raw[0]), int(raw[1])
    if obj_width < 1 or (raw.size - header_width) % obj_width != 0:
        raise RuntimeError(
            f"Label shape {raw.shape} inconsistent with annotation width {obj_width} "
            f"(header width {header_width})."
        )
    out = np.reshape(raw[header_width:], (-1, obj_width))
    valid = np.where(np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2]))[0]
    if valid.size < 1:
        raise RuntimeError("Encounter sample with no valid label.")
    return out[valid, :]


class ImageDetIter(ImageIter):
    """Detection batches: augmented images and (batch, max objects, object width) labels.

    Takes ``ImageIter``'s sources (``path_imgrec``, ``path_imglist`` + ``path_root``,
    ``imglist``, ``path_imgidx``), ``shuffle``, ``part_index`` / ``num_parts`` and
    ``last_batch_handle``. ``aug_list`` defaults to ``CreateDetAugmenter(data_shape,
    **kwargs)``. The label shape is found by reading every label once at
    construction; ``reshape`` or ``sync_label_shape`` widen it. Rows past an image's
    objects are -1.
    """

    def __init__(
        self, batch_size, data_shape, path_imgrec=None, path_imglist=None, path_root=None,
        path_imgidx=None, shuffle=False, part_index=0, num_parts=1, aug_list=None,
        imglist=None, data_name="data", label_name="label", last_batch_handle="pad", **kwargs,
    ):  # fmt: skip
        super().__init__(
            batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
            path_imglist=path_imglist, path_root=path_root, path_imgidx=path_imgidx,
            shuffle=shuffle, part_index=part_index, num_parts=num_parts, aug_list=[],
            imglist=imglist, data_name=data_name, label_name=label_name,
            last_batch_handle=last_batch_handle,
        )  # fmt: skip
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [DataDesc(label_name, (self.batch_size, *label_shape))]
        self.label_shape = label_shape

    def _check_valid_label(self, label):
        """Raise RuntimeError unless ``label`` is (1+, 5+) with at least one valid object."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError(f"Label with shape (1+, 5+) required, {label} received.")
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self):
        """(most objects of any example, object width), reading every label once."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count, width = max(max_count, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise ValueError(
                "ImageDetIter: the data holds no example to infer the label shape from"
            )
        return (max_count, width)

    def _parse_label(self, label):
        """The (objects, object_width) array of a raw label (see ``parse_det_label``)."""
        return parse_det_label(label)

    def reshape(self, data_shape=None, label_shape=None):
        """Change the batches' ``data_shape`` (C, H, W) and/or ``label_shape`` (objects, width)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            name = self.provide_data[0][0]
            self.provide_data = [DataDesc(name, (self.batch_size, *data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            name = self.provide_label[0][0]
            self.provide_label = [DataDesc(name, (self.batch_size, *label_shape))]
            self.label_shape = tuple(label_shape)

    def check_label_shape(self, label_shape):
        """Raise ValueError unless ``label_shape`` keeps the object width and count or more."""
        if len(label_shape) != 2:
            raise ValueError(f"label_shape should have length 2, got {label_shape}")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(
                f"Attempts to reduce label count from {self.label_shape[0]} to "
                f"{label_shape[0]}, not allowed."
            )
        width = self.provide_label[0][1][2]
        if label_shape[1] != width:
            raise ValueError(f"label_shape object width inconsistent: {width} vs {label_shape[1]}.")

    def _batchify(self, batch_data, batch_label, start=0):
        """Fill the batch from row ``start``; the number of examples now in it."""
        i = start
        try:
            while i < self.batch_size:
                label, encoded = self.next_sample()
                data = self.imdecode(encoded)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                    data, label = self.augmentation_transform(data, label)
                    self._check_valid_label(label)
                except RuntimeError as exc:
                    logging.debug("Invalid image, skipping:  %s", exc)
                    continue
                batch_data[i] = self.postprocess_data(data)
                self._write_label(batch_label, i, label)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _write_label(self, batch_label, row, label):
        count, width = label.shape
        slots, slot_width = batch_label.shape[1:]
        if count > slots or width != slot_width:
            raise ValueError(
                f"ImageDetIter: an augmented example has {count} objects of width {width}, "
                f"label_shape is {(slots, slot_width)}; call reshape(label_shape=...) to widen it"
            )
        batch_label[row, :count] = label
        batch_label[row, count:] = -1

    def _empty_labels(self):
        """Object rows of -1 (no object), (batch, objects, width) float32, on the host."""
        return np.full(self.provide_label[0][1], -1, np.float32)

    def _label_array(self, batch_label):
        return nd_array(batch_label)

    def augmentation_transform(self, data, label):
        """Apply every detection augmenter of ``auglist`` in order; ``(data, label)``."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return (data, label)

    def draw_next(
        self, color=None, thickness=2, mean=None, std=None, clip=True, waitKey=None,  # noqa: N803
        window_name="draw_next", id2labels=None,
    ):  # fmt: skip
        """Yield each next augmented image (BGR uint8 HWC) with its boxes drawn.

        ``mean``/``std`` (True: ImageNet's) undo a normalisation, ``clip`` keeps
        [0, 255]; ``color`` is an RGB tuple (None: random per box); ``id2labels`` maps
        class ids to names written on the boxes; with ``waitKey`` set each image is
        also shown in ``window_name``.
        """
        cv2 = load_cv2()
        count = 0
        try:
            while True:
                label, encoded = self.next_sample()
                data = self.imdecode(encoded)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                except RuntimeError as exc:
                    logging.debug("Invalid image, skipping:  %s", exc)
                    continue
                count += 1
                data, label = self.augmentation_transform(data, label)
                image = _displayable(data.asnumpy(), mean, std, clip)
                _draw_boxes(cv2, image, label, color, thickness, id2labels)
                if waitKey is not None:
                    cv2.imshow(window_name, image)
                    cv2.waitKey(waitKey)
                yield image
        except StopIteration:
            if not count:
                return

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and ``it`` the same (larger) label shape; returns ``it``."""
        if not isinstance(it, ImageDetIter):
            raise TypeError(
                f"Synchronize with invalid iterator: expected an ImageDetIter, got "
                f"{type(it).__name__}"
            )
        mine, theirs = self.label_shape, it.label_shape
        if mine[1] != theirs[1]:
            raise ValueError(f"object width mismatch: {mine[1]} vs {theirs[1]}.")
        max_count = max(mine[0], theirs[0])
        if max_count > mine[0]:
            self.reshape(None, (max_count, mine[1]))
        if max_count > theirs[0]:
            it.reshape(None, (max_count, theirs[1]))
        if verbose and max_count > min(mine[0], theirs[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, mine[1])
        return it


def _stat(name, value, default):
    if value is True:
        return default
    if value is not None and (not isinstance(value, np.ndarray) or value.shape[0] not in (1, 3)):
        raise ValueError(f"draw_next: {name} must be True, None or 1 or 3 values, got {value!r}")
    return value


def _displayable(image, mean, std, clip):
    """The float RGB image as BGR uint8, normalisation undone."""
    image = image.astype(np.float64) if image.dtype.kind != "f" else image
    std, mean = _stat("std", std, _IMAGENET_STD), _stat("mean", mean, _IMAGENET_MEAN)
    if std is not None:
        image = image * std
    if mean is not None:
        image = image + mean
    image = image[:, :, (2, 1, 0)]
    if clip:
        image = np.maximum(0, np.minimum(255, image))
    return np.ascontiguousarray(image.astype(np.uint8))


def _draw_boxes(cv2, image, label, color, thickness, id2labels):
    height, width, _ = image.shape
    color = tuple(color[::-1]) if color else None  # RGB to OpenCV's BGR
    for row in label:
        x1 = int(row[1] * width)
        if x1 < 0:
            continue
        y1, x2, y2 = int(row[2] * height), int(row[3] * width), int(row[4] * height)
        box_color = color or tuple(float(v) for v in np.random.rand(3) * 255)
        cv2.rectangle(image, (x1, y1), (x2, y2), box_color, thickness)
        name = (id2labels or {}).get(int(row[0]))
        if name is not None:
            font = cv2.FONT_HERSHEY_SIMPLEX
            text_height = cv2.getTextSize(str(name), font, 0.5, 2)[0][1]
            cv2.putText(
                image, str(name), (x1 + 5, y1 + text_height + 5), font, 0.5, (255, 255, 255), 2
            )
