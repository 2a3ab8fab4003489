"""ImageRecordIter (and its uint8 / int8 forms): batches of images from a RecordIO file.

MXNet 1.9.1's C++ iterator, rebuilt on OpenCV and threads. The records of one
part of the ``.rec`` file (``num_parts`` / ``part_index``) are read in file
order (``shuffle`` permutes them again each epoch), each image decoded,
augmented by MXNet's default augmenter (``image_record_aug``) and written as
CHW RGB into the batch's preallocated array on ``preprocess_threads`` threads,
while a background thread keeps ``prefetch_buffer`` batches ready
(``image_record_workers``). Labels come from the record header, a vector label
in the record, or ``path_imglist``.

The last batch of an epoch follows MXNet: with ``round_batch`` (the default)
it is filled from the start of the data, its ``pad`` says how many, and the
next epoch starts after those records; without it the filler rows are zeros
and ``pad`` counts them (MXNet 1.9.1 reports pad 0 there, with stale rows).
"""

import logging
import os
from types import SimpleNamespace

import numpy as np

from ..context import cpu
from ..ndarray import array
from ..ndarray.creation import wrap
from .base import DataBatch, DataDesc
from .files import MXDataIter
from .image_record_aug import AUGMENT_FIELDS, NORMALIZE_FIELDS, DefaultAugmenter, Normalizer
from .image_record_workers import BatchMaker, Prefetcher, RecordSource, read_image_list
from .params import as_bool, as_int, as_shape, warn_ignored

__all__ = ["ImageRecordInt8Iter", "ImageRecordIter", "ImageRecordUInt8Iter"]

_log = logging.getLogger("rebind.io")

# name -> (kind, default): MXNet's ImageRecParserParam, ImageRecordParam, BatchParam,
# PrefetcherParam and the Python-side names
ITER_FIELDS = {
    "path_imgrec": ("str", ""),
    "path_imgidx": ("str", ""),
    "path_imglist": ("str", ""),
    "aug_seq": ("str", "aug_default"),
    "label_width": ("int", 1),
    "data_shape": ("shape", None),
    "preprocess_threads": ("int", 4),
    "verbose": ("bool", True),
    "num_parts": ("int", 1),
    "part_index": ("int", 0),
    "device_id": ("int", 0),
    "shuffle_chunk_size": ("int", 0),
    "shuffle_chunk_seed": ("int", 0),
    "seed_aug": ("int", None),
    "batch_size": ("int", None),
    "round_batch": ("bool", True),
    "shuffle": ("bool", False),
    "seed": ("int", 0),
    "prefetch_buffer": ("int", 4),
    "ctx": ("str", "gpu"),
    "dtype": ("str", None),
    "data_name": ("str", "data"),
    "label_name": ("str", "softmax_label"),
}
_HINTS = {
    "hue": "MXNet 1.9.1's ImageRecordIter has no hue parameter; random_h shifts the hue",
    "resize_mode": "resize takes the shorter edge's new length",
}
_DTYPES = ("float32", "uint8", "int8")


def _convert(owner, name, kind, value):
    if value is None:
        return None
    if kind == "bool":
        return as_bool(owner, name, value)
    if kind == "int":
        return as_int(owner, name, value)
    if kind == "shape":
        return as_shape(owner, name, value)
    if kind == "float":
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"{owner}: invalid value for {name}: expected a number, got {value!r}"
            ) from None
    if name == "dtype" and not isinstance(value, str):
        return np.dtype(value).name
    return str(value)


def parse_params(owner, kwargs, tables):
    """A namespace of every field of ``tables`` (converted), and the keywords left over."""
    values, left = {}, dict(kwargs)
    for table in tables:
        for name, (kind, default) in table.items():
            values[name] = _convert(owner, name, kind, left.pop(name, default))
    return SimpleNamespace(**values), left


class ImageRecordIter(MXDataIter):
    """Batches of decoded, augmented images from a RecordIO (``.rec``) file, as MXNet's.

    Takes MXNet 1.9.1's keywords (as values or their string forms): the data
    (``path_imgrec``, ``path_imgidx``, ``path_imglist``, ``data_shape``,
    ``label_width``, ``batch_size``, ``round_batch``, ``num_parts``,
    ``part_index``, ``shuffle``, ``seed``), augmentation (``resize``,
    ``rand_crop``, ``random_resized_crop``, ``rand_mirror``, ``mirror``,
    ``max/min_random_scale``, ``max/min_aspect_ratio``, ``max_rotate_angle``,
    ``rotate``, ``max_shear_ratio``, ``max/min_crop_size``,
    ``max/min_random_area``, ``max/min_img_size``, ``pad``, ``fill_value``,
    ``inter_method``, ``brightness``, ``contrast``, ``saturation``,
    ``pca_noise``, ``random_h/s/l``), normalisation (``mean_r/g/b/a``,
    ``std_r/g/b/a``, ``scale``, ``mean_img``: loaded, or computed over the
    part and saved there when the file is missing, as MXNet does), output
    (``dtype`` float32, uint8 or int8, ``data_name``, ``label_name``) and
    speed (``preprocess_threads``, ``prefetch_buffer``). Keywords it does not
    take are ignored with a warning (MXNet ignores them silently).

    Without random augmentation the batches equal MXNet's. Random draws are
    seeded by ``seed_aug`` (else ``seed``) per image and reproducible, but are
    not MXNet's draws; ``shuffle`` reshuffles each epoch with a NumPy
    generator seeded by ``seed`` (MXNet's order differs). ``getindex()`` gives
    zeros, as MXNet's does. ``preprocess_threads`` threads are used as given
    (MXNet caps them at half the CPUs); ``ctx``, ``device_id`` and
    ``shuffle_chunk_size`` / ``shuffle_chunk_seed`` are accepted without effect
    (batches live on cpu(0); ``shuffle`` permutes the whole part).
    """

    _forced_dtype = None

    def __init__(self, **kwargs):
        owner = type(self).__name__
        p, left = parse_params(owner, kwargs, (ITER_FIELDS, AUGMENT_FIELDS, NORMALIZE_FIELDS))
        warn_ignored(owner, left, _HINTS)
        dtype = self._forced_dtype or p.dtype or "float32"
        _check(owner, p, dtype)
        super().__init__(p.batch_size, p.data_name, p.label_name, np.float32)
        self.params = p
        self.dtype = np.dtype(dtype)
        self.data_shape = tuple(p.data_shape)
        self.provide_data = [
            DataDesc(p.data_name, (p.batch_size,) + self.data_shape, self.dtype.type)
        ]
        label_shape = (p.batch_size,) if p.label_width == 1 else (p.batch_size, p.label_width)
        self.provide_label = [DataDesc(p.label_name, label_shape, np.float32)]
        self._source = RecordSource(p.path_imgrec, p.path_imgidx, p.num_parts, p.part_index)
        self._maker = self._batch_maker(p)
        if p.verbose:
            _log.info(
                "ImageRecordIter: %s, %d records in part %d of %d, %d threads for decoding",
                p.path_imgrec,
                len(self._source),
                p.part_index,
                p.num_parts,
                p.preprocess_threads,
            )
        if p.mean_img and self.dtype != np.uint8:
            self._maker.normalizer.mean_image = self._mean_image(p.mean_img)
        self._shuffler = np.random.default_rng(p.seed % (1 << 32))
        self._order, self._start, self._wrap = self._new_order(), 0, None
        self._epoch, self._prefetcher, self._wrapped = 0, None, False
        self._start_epoch()

    def _batch_maker(self, p):
        labels = read_image_list(p.path_imglist, p.label_width) if p.path_imglist else None
        augmenter = DefaultAugmenter(p, self.data_shape)
        normalizer = Normalizer(p, self.dtype, self.data_shape[0])
        spec = SimpleNamespace(
            batch_size=p.batch_size,
            data_shape=self.data_shape,
            label_width=p.label_width,
            dtype=self.dtype,
            threads=p.preprocess_threads,
            channels=self.data_shape[0],
            seed=(p.seed if p.seed_aug is None else p.seed_aug) % (1 << 32),
        )
        return BatchMaker(self._source, augmenter, normalizer, labels, spec)

    # -- epochs -----------------------------------------------------------------------
    def _new_order(self):
        order = np.arange(len(self._source))
        if self.params.shuffle:
            self._shuffler.shuffle(order)
        return order

    def _plan(self):
        """``[(positions, key), ...]`` of this epoch; sets ``_wrap`` when it borrows records."""
        size = self.batch_size
        positions = self._order[self._start :]
        plans = [positions[i : i + size] for i in range(0, positions.size, size)]
        self._wrap = None
        pad = size - plans[-1].size if plans else 0
        if pad and self.params.round_batch:
            following = self._new_order()
            if pad > following.size:
                raise ValueError(
                    f"{type(self).__name__}: number of input images must be bigger than the "
                    f"batch size: {following.size} record(s) cannot fill the {pad} missing "
                    f"row(s) of the last batch (batch_size={size}); lower batch_size"
                )
            plans[-1] = np.concatenate([plans[-1], following[:pad]])
            self._wrap = (following, pad)
        self._pads = [0] * len(plans)
        if pad:
            self._pads[-1] = pad
        return [(plan, (self._epoch, number)) for number, plan in enumerate(plans)]

    def _start_epoch(self):
        plans = self._plan()
        if not self.params.round_batch and plans:
            plans[-1] = (plans[-1][0][: self.batch_size - self._pads[-1]], plans[-1][1])
        self._batch_number = 0
        self._prefetcher = Prefetcher(self._maker.make, plans, self.params.prefetch_buffer)

    def reset(self):
        """Start the next epoch: after the records the last batch borrowed, else from the top."""
        self._prefetcher.stop()
        if self._wrapped:
            self._order, self._start = self._wrap
        else:
            self._order, self._start = self._new_order(), 0
        self._wrapped = False
        self._epoch += 1
        self._start_epoch()

    def iter_next(self):
        made = self._prefetcher.take()
        if made is None:
            self._wrapped = self._wrap is not None
            return False
        pad = self._pads[self._batch_number]
        self._batch_number += 1
        self._set_current(made[0], made[1], pad, np.zeros(self.batch_size, np.uint64))
        return True

    def getdata(self):
        """The current batch's images, (batch_size, C, H, W) in ``dtype``, on cpu(0)."""
        return wrap(self._require_current()[0], cpu(0))

    def getlabel(self):
        """The current batch's labels (float32): (batch_size,) or (batch_size, label_width)."""
        label = self._require_current()[1]
        return wrap(label[:, 0] if self.params.label_width == 1 else label, cpu(0))

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(
            data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(), index=self.getindex()
        )

    # -- mean image ---------------------------------------------------------------------
    def _mean_image(self, path):
        if os.path.exists(path):
            from ..ndarray import load

            loaded = load(path)
            arrays = list(loaded.values()) if isinstance(loaded, dict) else list(loaded)
            if len(arrays) != 1:
                raise ValueError(f"{path}: a mean image file holds one array, found {len(arrays)}")
            _log.info("ImageRecordIter: load mean image from %s", path)
            return arrays[0].asnumpy().astype(np.float32)
        return self._compute_mean(path)

    def _compute_mean(self, path):
        """The mean of every processed image of the part, saved to ``path`` (as MXNet)."""
        from ..ndarray import save

        _log.info("ImageRecordIter: cannot find %s: create mean image", path)
        total, count = None, 0
        positions = np.arange(len(self._source))
        for start in range(0, positions.size, self.batch_size):
            chunk = positions[start : start + self.batch_size]
            data, _ = self._maker.make(chunk, (0xFFFFFFFF, start))
            for row in range(chunk.size):
                image = data[row].astype(np.float32)
                total = image.copy() if total is None else np.add(total, image, out=total)
                count += 1
        if total is None:
            raise ValueError(f"ImageRecordIter: no records to compute the mean image {path}")
        mean = total * np.float32(1.0 / count)
        save(path, {"mean_img": array(mean, ctx=cpu(0))})
        return mean

    def close(self):
        """Stop the prefetching thread and the decoding threads, close the file."""
        if getattr(self, "_prefetcher", None) is not None:
            self._prefetcher.stop()
            self._prefetcher = None
        if getattr(self, "_maker", None) is not None:
            self._maker.close()
            self._maker = None
        if getattr(self, "_source", None) is not None:
            self._source.close()

    def __del__(self):
        self.close()


def _check(owner, p, dtype):
    if not p.path_imgrec:
        raise ValueError(f"{owner}: path_imgrec is required (the .rec file to read)")
    if p.data_shape is None or len(p.data_shape) != 3 or 0 in p.data_shape:
        raise ValueError(
            f"{owner}: data_shape must be (channels, height, width), got {p.data_shape}"
        )
    if p.data_shape[0] not in (1, 3, 4):
        raise ValueError(f"{owner}: data_shape {p.data_shape}: channels must be 1, 3 or 4")
    if p.batch_size is None or p.batch_size < 1:
        raise ValueError(f"{owner}: batch_size must be >= 1, got {p.batch_size}")
    if p.label_width < 1 or p.preprocess_threads < 1:
        raise ValueError(f"{owner}: label_width and preprocess_threads must be >= 1")
    if p.num_parts < 1 or not 0 <= p.part_index < p.num_parts:
        raise ValueError(
            f"{owner}: part_index must be in [0, num_parts), got part_index={p.part_index}, "
            f"num_parts={p.num_parts}"
        )
    if dtype not in _DTYPES:
        raise ValueError(f"{owner}: dtype must be one of {_DTYPES} (MXNet's), got {dtype!r}")
    if p.aug_seq != "aug_default":
        raise NotImplementedError(
            f"{owner}: aug_seq={p.aug_seq!r}: only MXNet's built-in 'aug_default' augmenter exists"
        )


class ImageRecordUInt8Iter(ImageRecordIter):
    """ImageRecordIter with uint8 data (raw RGB pixels; MXNet deprecates it for dtype='uint8')."""

    _forced_dtype = "uint8"


class ImageRecordInt8Iter(ImageRecordIter):
    """ImageRecordIter with int8 data (pixels minus the rounded mean, saturated to int8)."""

    _forced_dtype = "int8"
