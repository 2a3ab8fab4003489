"""ImageDetRecordIter: object-detection batches from a RecordIO file, as MXNet 1.9.1's.

The records are read, batched, shuffled and prefetched as ``ImageRecordIter``
does (it is the base class; ``image_record_workers`` does the reading). What
differs is the label and the augmenter: each record's label is MXNet's flat
detection vector (header width, object width, extra header, then objects
``[id, xmin, ymin, xmax, ymax, extra...]``), augmented together with the image by
``image_det_aug.DefaultDetAugmenter``, and each batch label row is

    [channels, height, width, label length, label..., label_pad_value...]

``label_pad_width + 4`` wide, where ``label_pad_width`` (when 0 or too small with
-1) is the widest raw label of the part (or of ``path_imglist``).
"""

import logging
from types import SimpleNamespace

import numpy as np

from ..context import cpu
from ..errors import FormatError
from ..ndarray.creation import wrap
from .base import DataDesc
from .files import MXDataIter
from .image_det_aug import DET_AUGMENT_FIELDS, DefaultDetAugmenter
from .image_record import ITER_FIELDS, ImageRecordIter, _check, parse_params
from .image_record_workers import BatchMaker, RecordSource, _decode
from .params import warn_ignored

__all__ = ["ImageDetRecordIter"]

_log = logging.getLogger("rebind.io")

DET_ITER_FIELDS = {
    **{k: v for k, v in ITER_FIELDS.items() if k not in ("path_imgidx", "seed_aug", "dtype")},
    "aug_seq": ("str", "det_aug_default"),
    "label_width": ("int", -1),
    "label_pad_width": ("int", 0),
    "label_pad_value": ("float", -1.0),
}
# MXNet's ImageDetNormalizeParam: a mean or std of 0 means "not given"
DET_NORMALIZE_FIELDS = {
    "mean_img": ("str", ""),
    **{f"mean_{c}": ("float", 0.0) for c in "rgba"},
    **{f"std_{c}": ("float", 0.0) for c in "rgba"},
    "scale": ("float", 1.0),
}


def _split_tuples(owner, kwargs):
    """Take the tuple-valued crop fields out of ``kwargs`` as tuples of numbers."""
    tuples, scalar = {}, {}
    for name, (kind, default) in DET_AUGMENT_FIELDS.items():
        if kind != "floats":
            scalar[name] = (kind, default)
            continue
        value = kwargs.pop(name, default)
        if isinstance(value, str):
            value = [v for v in value.strip("()[] ").split(",") if v.strip()]
        values = value if isinstance(value, (list, tuple)) else (value,)
        try:
            tuples[name] = tuple(float(v) for v in values)
        except (TypeError, ValueError):
            raise ValueError(f"{owner}: {name} must be numbers, got {value!r}") from None
    return tuples, scalar


def read_det_list(path, label_width):
    """``{image index: label vector}`` of a detection list (index, labels..., path)."""
    labels = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            values = fields[1:-1] if label_width <= 0 else fields[1 : 1 + label_width]
            if not values or (label_width > 0 and len(fields) < 1 + label_width):
                raise FormatError(
                    f"{path}, line {number}: Bad ImageList format: expected an index, "
                    f"{'the' if label_width <= 0 else label_width} label value(s) and a path"
                )
            labels[int(float(fields[0]))] = np.array([float(v) for v in values], np.float32)
    return labels


class DetNormalizer:
    """Write a BGR image into a CHW RGB row: minus mean, divided by std, times scale."""

    def __init__(self, p, channels):
        self.order = [2, 1, 0, 3][:channels] if channels > 1 else [0]
        self.mean = np.array([getattr(p, f"mean_{c}") for c in "rgba"][:channels], np.float32)
        self.std = np.array([getattr(p, f"std_{c}") for c in "rgba"][:channels], np.float32)
        self.scale = np.float32(p.scale)
        self.mean_image = None
        self.needs_rng = False

    def write(self, image, out):
        """Fill ``out`` (C, H, W), the image at its top-left (shrink / fit leave zeros).

        As MXNet, the mean, std and scale apply to the whole row, zeros included.
        """
        out[...] = 0
        values = image[:, :, self.order].transpose(2, 0, 1)
        out[:, : values.shape[1], : values.shape[2]] = values
        if (self.mean > 0).any():
            out -= self.mean[:, None, None]
        elif self.mean_image is not None:
            out -= self.mean_image
        for channel, std in enumerate(self.std):
            if std > 0:
                out[channel] /= std
        out *= self.scale


class DetBatchMaker(BatchMaker):
    """Decode and augment the images and labels of a batch (pad rows stay zero / pad value)."""

    def _buffers(self, count):
        spec = self.spec
        data = np.zeros((spec.batch_size,) + spec.data_shape, np.float32)
        label = np.full((spec.batch_size, spec.label_width), spec.pad_value, np.float32)
        return data, label

    def _fill(self, data, label, positions, rows, batch_key):
        for row in rows:
            rng = self._rng(batch_key, row)
            image_id, scalar, values, encoded, offset = self.source.read(int(positions[row]))
            where = f"record {int(positions[row])} (image index {image_id}) of {self.source.path}"
            image = _decode(encoded, self.spec.channels, where)
            raw = _raw_label(self.labels, image_id, scalar, values, self.spec, where)
            image, vector = self.augmenter.process(image, raw, where, rng)
            if vector.size > self.spec.label_width - 4:
                raise FormatError(
                    f"ImageDetRecordIter: {where}: {vector.size} label values exceed "
                    f"label_pad_width={self.spec.label_width - 4}; raise label_pad_width"
                )
            self.normalizer.write(image, data[row])
            label[row, :4] = (image.shape[2], image.shape[0], image.shape[1], vector.size)
            label[row, 4 : 4 + vector.size] = vector


def _raw_label(labels, image_id, scalar, values, spec, where):
    if labels is not None:
        if image_id not in labels:
            raise KeyError(
                f"ImageDetRecordIter: fail to find imagelabel for id {image_id} ({where})"
            )
        return labels[image_id]
    if values is None:
        values = np.array([scalar], np.float32)
    if spec.fixed_width > 0 and values.size != spec.fixed_width:
        raise FormatError(
            f"ImageDetRecordIter: rec file provide {values.size}-dimensional label but "
            f"label_width is set to {spec.fixed_width} ({where})"
        )
    return values


class ImageDetRecordIter(ImageRecordIter):
    """Detection batches (images and padded flat labels) from a ``.rec`` file, as MXNet's.

    Takes MXNet 1.9.1's keywords: the data (``path_imgrec``, ``path_imglist``,
    ``data_shape``, ``label_width`` (-1: any), ``label_pad_width``,
    ``label_pad_value``, ``batch_size``, ``round_batch``, ``num_parts``,
    ``part_index``, ``shuffle``, ``seed``), ``det_aug_default``'s augmentation
    (``resize``, ``resize_mode``, ``inter_method``, ``rand_crop_prob`` with the crop
    samplers' tuples, ``rand_pad_prob``, ``max_pad_scale``, ``fill_value``,
    ``rand_mirror_prob``, the HSL / contrast jitter), normalisation (``mean_r/g/b/a``,
    ``std_r/g/b/a``: 0 means none, ``scale``, ``mean_img``) and speed
    (``preprocess_threads``, ``prefetch_buffer``). Without random augmentation the
    batches equal MXNet's; random draws are seeded and reproducible but not MXNet's.
    With ``resize_mode`` shrink or fit the image fills the top-left of its row and
    the rest is zero (MXNet leaves it undefined); the label row says the real size.
    """

    def __init__(self, **kwargs):
        owner = type(self).__name__
        kwargs = dict(kwargs)
        tuples, scalar_aug = _split_tuples(owner, kwargs)
        p, left = parse_params(owner, kwargs, (DET_ITER_FIELDS, scalar_aug, DET_NORMALIZE_FIELDS))
        warn_ignored(owner, left)
        p.__dict__.update(tuples)
        p.label_width, fixed_width = 1, p.label_width  # _check wants a positive width
        p.aug_seq, aug_seq = "aug_default", p.aug_seq
        _check(owner, p, "float32")
        if aug_seq != "det_aug_default":
            raise NotImplementedError(
                f"{owner}: aug_seq={aug_seq!r}: only MXNet's built-in 'det_aug_default' exists"
            )
        MXDataIter.__init__(self, p.batch_size, p.data_name, p.label_name, np.float32)
        self.params, self.dtype, self.data_shape = p, np.dtype(np.float32), tuple(p.data_shape)
        self._source = RecordSource(p.path_imgrec, "", p.num_parts, p.part_index)
        labels = read_det_list(p.path_imglist, fixed_width) if p.path_imglist else None
        self.label_pad_width = self._pad_width(p, labels, fixed_width)
        self.provide_data = [DataDesc(p.data_name, (p.batch_size,) + self.data_shape, np.float32)]
        self.provide_label = [
            DataDesc(p.label_name, (p.batch_size, self.label_pad_width + 4), np.float32)
        ]
        self._maker = self._det_maker(p, labels, fixed_width)
        if p.verbose:
            _log.info("%s: %s, label padding width: %d", owner, p.path_imgrec, self.label_pad_width)
        if p.mean_img:
            self._maker.normalizer.mean_image = self._mean_image(p.mean_img)
        self._shuffler = np.random.default_rng(p.seed % (1 << 32))
        self._order, self._start, self._wrap = self._new_order(), 0, None
        self._epoch, self._prefetcher, self._wrapped = 0, None, False
        self._start_epoch()

    def _pad_width(self, p, labels, fixed_width):
        """``label_pad_width``, or the widest raw label when it is not set (0 or -1)."""
        if labels is not None:
            widest = max((v.size for v in labels.values()), default=0)
        else:
            widest = 0
            for position in range(len(self._source)):
                _, _, values, _, offset = self._source.read(position)
                width = 1 if values is None else values.size
                if fixed_width > 0 and width != fixed_width:
                    raise FormatError(
                        f"ImageDetRecordIter: rec file provide {width}-dimensional label but "
                        f"label_width is set to {fixed_width} (record at byte offset {offset} "
                        f"of {self._source.path})"
                    )
                widest = max(widest, width)
        if widest > p.label_pad_width > 0:
            raise FormatError(
                f"ImageDetRecordIter: label_pad_width: {p.label_pad_width} smaller than "
                f"estimated width: {widest}; raise label_pad_width or leave it 0"
            )
        return max(widest, p.label_pad_width)

    def _det_maker(self, p, labels, fixed_width):
        spec = SimpleNamespace(
            batch_size=p.batch_size,
            data_shape=self.data_shape,
            label_width=self.label_pad_width + 4,
            pad_value=p.label_pad_value,
            fixed_width=fixed_width,
            dtype=self.dtype,
            threads=p.preprocess_threads,
            channels=self.data_shape[0],
            seed=p.seed % (1 << 32),
        )
        augmenter = DefaultDetAugmenter(p, self.data_shape)
        return DetBatchMaker(self._source, augmenter, DetNormalizer(p, spec.channels), labels, spec)

    def getlabel(self):
        """The current batch's labels (float32), (batch_size, label_pad_width + 4)."""
        return wrap(self._require_current()[1], cpu(0))
