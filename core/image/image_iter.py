"""``mx.image.ImageIter``: batches of augmented images from a .rec file or a list of files.

It follows MXNet 1.9's Python ImageIter: images are decoded one at a time in the
calling thread, passed through the augmenter list (``CreateAugmenter`` from the keyword
arguments unless ``aug_list`` is given) and laid out NCHW float32 with float32 labels.
The C++ ``mx.io.ImageRecordIter`` (parallel decoding) lives in ``rebind.io``.
"""

import logging
import os
import random
from numbers import Number

import numpy as np

from ..io.base import DataBatch, DataDesc, DataIter
from ..ndarray import NDArray, zeros
from ..ndarray import array as nd_array
from .create import CreateAugmenter
from .image import imdecode
from .opencv import ImageDecodeError

__all__ = ["ImageIter"]

_LABEL_DTYPES = ("int32", "float32", "int64", "float64")
_LAST_BATCH = ("pad", "discard", "roll_over")


def _recordio():
    """rebind.recordio, imported when a .rec source is used."""
    from .. import recordio

    return recordio


def _read_list_file(path, dtype):
    """``{index: (label NDArray, relative path)}`` and the indices in file order."""
    imglist, keys = {}, []
    with open(path) as fin:
        for line in fin:
            fields = line.strip().split("\t")
            if len(fields) < 3:
                raise ValueError(
                    f"ImageIter: {path}: line {len(keys) + 1} has {len(fields)} tab-separated "
                    "fields; expected index, one or more labels, and a path"
                )
            key = int(fields[0])
            imglist[key] = (nd_array(np.array(fields[1:-1], dtype=dtype), dtype=dtype), fields[-1])
            keys.append(key)
    return imglist, keys


def _read_image_list(items, dtype):
    """MXNet's keys '1', '2', ... for an in-memory ``[[label(s)..., path], ...]`` list."""
    imglist, keys = {}, []
    for number, item in enumerate(items, start=1):
        if len(item) > 2:
            label = item[:-1]
        elif isinstance(item[0], Number):
            label = [item[0]]
        else:
            label = item[0]
        key = str(number)
        imglist[key] = (nd_array(np.asarray(label), dtype=dtype), item[-1])
        keys.append(key)
    return imglist, keys


class ImageIter(DataIter):
    """Image batches from a RecordIO file (``path_imgrec``) or image files.

    Args:
        batch_size: examples per batch.
        data_shape: (3, height, width) of each output image.
        label_width: labels per example (batch labels are (batch,) when 1).
        path_imgrec: a .rec file made by im2rec; ``path_imgidx`` its .idx, needed to
            shuffle or partition it.
        path_imglist: a .lst file (index, labels..., path; tab separated), read with
            ``path_root``; or ``imglist``, a list of ``[label(s), path]``.
        shuffle: reshuffle the examples at each reset (Python's ``random``).
        part_index, num_parts: read only part ``part_index`` of ``num_parts`` equal parts.
        aug_list: the augmenters; None builds ``CreateAugmenter(data_shape, **kwargs)``.
        data_name, label_name: the names in ``provide_data`` / ``provide_label``.
        dtype: the dtype labels are parsed into ('int32', 'float32', 'int64', 'float64').
        last_batch_handle: 'pad' (fill from the start, ``pad`` set), 'discard', or
            'roll_over' (the rest starts the next epoch).
    """

    def __init__(
        self,
        batch_size,
        data_shape,
        label_width=1,
        path_imgrec=None,
        path_imglist=None,
        path_root=None,
        path_imgidx=None,
        shuffle=False,
        part_index=0,
        num_parts=1,
        aug_list=None,
        imglist=None,
        data_name="data",
        label_name="softmax_label",
        dtype="float32",
        last_batch_handle="pad",
        **kwargs,
    ):
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ValueError("ImageIter: give path_imgrec, path_imglist or imglist (a list)")
        if dtype not in _LABEL_DTYPES:
            raise ValueError(f"ImageIter: label dtype {dtype!r} not supported; use {_LABEL_DTYPES}")
        if last_batch_handle not in _LAST_BATCH:
            raise ValueError(
                f"ImageIter: last_batch_handle must be one of {_LAST_BATCH}, "
                f"got {last_batch_handle!r}"
            )
        self.check_data_shape(data_shape)
        self._open_sources(path_imgrec, path_imgidx, path_imglist, imglist, dtype)
        self.path_root = path_root
        self.provide_data = [DataDesc(data_name, (batch_size, *data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, label_shape)]
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.shuffle = shuffle
        self._choose_sequence(shuffle, num_parts, part_index, path_imgidx)
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = self._cache_label = self._cache_idx = None
        self._source = None  # where the last sample came from, for error messages
        self.reset()

    def _open_sources(self, path_imgrec, path_imgidx, path_imglist, imglist, dtype):
        name = type(self).__name__
        self.imgrec, self.imgidx, self._keys = None, None, None
        if path_imgrec:
            logging.info("%s: loading recordio %s...", name, path_imgrec)
            recordio = _recordio()
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        if path_imglist:
            logging.info("%s: loading image list %s...", name, path_imglist)
            self.imglist, self._keys = _read_list_file(path_imglist, dtype)
        elif isinstance(imglist, list):
            logging.info("%s: loading image list...", name)
            self.imglist, self._keys = _read_image_list(imglist, dtype)
        else:
            self.imglist = None

    def _choose_sequence(self, shuffle, num_parts, part_index, path_imgidx):
        if self.imgrec is None:
            self.seq = self._keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ValueError(
                    "ImageIter: shuffle and num_parts > 1 need the .idx file (path_imgidx)"
                )
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise ValueError(f"ImageIter: part_index {part_index} not in [0, {num_parts})")
            per_part = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per_part : (part_index + 1) * per_part]

    def reset(self):
        """Back to the first example (reshuffled when ``shuffle``); roll-over data is kept."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Back to the first example, dropping any rolled-over examples."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = self._cache_label = self._cache_idx = None

    def next_sample(self):
        """The next (label, encoded image bytes); StopIteration at the end of the data."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            offset = self.imgrec.tell()
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            self.cur += 1  # counts records read, so a broken one is named by its position
            header, img = self._unpack(record, self.cur - 1, offset)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            record = self.imgrec.read_idx(idx)
            header, img = self._unpack(record, idx, self.imgrec.idx[idx])
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        self._source = f"file {os.path.join(self.path_root or '', fname)}"
        return label, self.read_image(fname)

    def _unpack(self, record, key, offset):
        """(IRHeader, image bytes) of record ``key``; a malformed one is named with its file."""
        recordio = _recordio()
        self._source = f"record {key} at byte offset {offset} of {self.imgrec.uri}"
        try:
            return recordio.unpack(record)
        except recordio.RecordIOError as exc:
            raise recordio.RecordIOError(f"{type(self).__name__}: {self._source}: {exc}") from exc

    def _batchify(self, batch_data, batch_label, start=0):
        """Fill the batch from ``start``; the number of examples now in it."""
        i = start
        try:
            while i < self.batch_size:
                label, encoded = self.next_sample()
                data = self.imdecode(encoded)
                try:
                    self.check_valid_image(data)
                except RuntimeError as exc:
                    logging.debug("Invalid image, skipping:  %s", exc)
                    continue
                data = self.augmentation_transform(data)
                batch_data[i] = self.postprocess_data(data)
                batch_label[i] = self._label_row(label)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _label_row(self, label):
        values = np.asarray(label.asnumpy() if isinstance(label, NDArray) else label)
        values = values.astype(np.float32).reshape(-1)
        if values.size != self.label_width:
            raise ValueError(
                f"ImageIter: an example has {values.size} label(s), label_width is "
                f"{self.label_width}"
            )
        return values if self.label_width > 1 else values[0]

    def next(self):
        """The next DataBatch of NCHW float32 images and float32 labels."""
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data = zeros((self.batch_size, *self.data_shape))
            batch_label = self._empty_labels()
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch_data], [self._label_array(batch_label)], pad=pad)

    def _empty_labels(self):
        """The label buffer ``_batchify`` fills (ImageDetIter: padded object rows)."""
        return zeros(self.provide_label[0][1])

    def _label_array(self, batch_label):
        """The batch's label NDArray made from the filled buffer."""
        return batch_label

    def check_data_shape(self, data_shape):
        """Raise ValueError unless ``data_shape`` is (3, height, width)."""
        if len(data_shape) != 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if data_shape[0] != 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Raise RuntimeError for an image with no pixels (the example is skipped)."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s):
        """Decode one image; a broken one raises ImageDecodeError (a RuntimeError, as MXNet's).

        The message starts as MXNet's ("Broken image index: 3", "Broken image filename:
        a.jpg") and adds the file the bytes came from (and the record's byte offset).
        """
        try:
            return imdecode(s)
        except Exception as exc:
            raise ImageDecodeError(f"{self._locate()}, {exc}") from exc

    def _locate(self):
        if self.seq is not None:
            idx = self.seq[(self.cur % self.num_image) - 1]
        else:
            idx = self.cur - 1
        source = f" ({self._source})" if self._source else ""
        if self.imglist is not None:
            return f"Broken image filename: {self.imglist[idx][1]}{source}"
        return f"Broken image index: {idx}{source}"

    def read_image(self, fname):
        """The bytes of image file ``fname`` under ``path_root``."""
        with open(os.path.join(self.path_root, fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data):
        """Apply every augmenter of ``auglist`` in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HWC to CHW, the layout of the batch."""
        return NDArray(datum.data.transpose(2, 0, 1), datum.context)
