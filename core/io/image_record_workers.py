"""The moving parts behind ImageRecordIter: record source, decoding threads, prefetching.

``RecordSource`` finds the records of one part of a ``.rec`` file the way
dmlc-core splits it (by bytes without an index, by record count with one) and
reads a record's bytes with ``os.pread``, so threads share one descriptor.
``BatchMaker`` decodes and augments the images of a batch on
``preprocess_threads`` threads (OpenCV's decoder and warps release the GIL),
each thread writing straight into its rows of the batch's arrays.
``Prefetcher`` runs the batches of one epoch on a background thread, at most
``prefetch_buffer`` ahead of the consumer.
"""

import os
import queue
import struct
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import FormatError
from ..recordio import RecordIOError

__all__ = ["BatchMaker", "Prefetcher", "RecordSource", "read_image_list"]

_MAGIC = 0xCED7230A
_HEAD = struct.Struct("<II")
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_IR_HEADER = struct.Struct("<IfQQ")
_LENGTH_MASK = (1 << 29) - 1


def _cv2():
    try:
        import cv2
    except ImportError:
        raise ImportError(
            "mx.io.ImageRecordIter decodes images with OpenCV: pip install "
            "opencv-python-headless (or rebind's 'image' extra)"
        ) from None
    return cv2


class RecordSource:
    """The records of part ``part_index`` of ``num_parts`` of a RecordIO file."""

    def __init__(self, path_imgrec, path_imgidx="", num_parts=1, part_index=0):
        self.path = str(path_imgrec)
        if os.path.isdir(self.path):
            raise NotImplementedError(
                f"ImageRecordIter: path_imgrec {self.path} is a directory; rebind reads one "
                ".rec file (MXNet also splits a folder of them): give the file's path"
            )
        try:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as exc:
            raise FileNotFoundError(
                f"ImageRecordIter: cannot open path_imgrec {self.path}: {exc}"
            ) from None
        self.size = os.fstat(self._fd).st_size
        if path_imgidx:
            starts = self._part_by_index(str(path_imgidx), num_parts, part_index)
        else:
            starts = self._part_by_bytes(self._scan(), num_parts, part_index)
        self.offsets = np.asarray(starts, dtype=np.int64)

    def __len__(self):
        return int(self.offsets.size)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        self.close()

    def _head(self, offset):
        raw = os.pread(self._fd, _HEAD.size, offset)
        if len(raw) < _HEAD.size:
            raise RecordIOError(
                f"{self.path}: truncated record header at byte offset {offset} "
                f"(file size {self.size})"
            )
        magic, lrec = _HEAD.unpack(raw)
        if magic != _MAGIC:
            raise RecordIOError(
                f"{self.path}: no record at byte offset {offset}: found 0x{magic:08x}, "
                f"expected the RecordIO magic 0x{_MAGIC:08x} (corrupt file or wrong .idx)"
            )
        return lrec >> 29, lrec & _LENGTH_MASK

    def _scan(self):
        """Start offsets of every record (dmlc: a header whose flag is 0 or 1)."""
        starts, offset = [], 0
        while offset < self.size:
            flag, length = self._head(offset)
            if flag in (0, 1):
                starts.append(offset)
            offset += _HEAD.size + length + (-length % 4)
        if offset > self.size:
            raise RecordIOError(
                f"{self.path}: truncated: the record at the end needs {offset} bytes, "
                f"the file holds {self.size}"
            )
        return starts

    def _part_by_bytes(self, starts, num_parts, part_index):
        step = -(-self.size // num_parts)
        step = -(-step // 4) * 4
        begin, end = min(step * part_index, self.size), min(step * (part_index + 1), self.size)
        return [start for start in starts if begin <= start < end] if begin < end else []

    def _part_by_index(self, path_imgidx, num_parts, part_index):
        offsets = []
        with open(path_imgidx, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if len(fields) < 2:
                    if fields:
                        raise FormatError(f"{path_imgidx}, line {number}: expected 'key offset'")
                    continue
                offsets.append(int(fields[1]))
        offsets.sort()
        step = -(-len(offsets) // num_parts)
        return offsets[step * part_index : step * (part_index + 1)]

    def read(self, position):
        """``(IRHeader fields, label values, image bytes)`` of the part's record ``position``."""
        offset = int(self.offsets[position])
        payload = self._payload(offset)
        if len(payload) < _IR_HEADER.size:
            raise RecordIOError(
                f"{self.path}: the record at byte offset {offset} holds {len(payload)} bytes, "
                f"too few for an image record header ({_IR_HEADER.size})"
            )
        flag, label, image_id, _ = _IR_HEADER.unpack_from(payload)
        start = _IR_HEADER.size
        labels = None
        if flag > 0:
            if len(payload) < start + 4 * flag:
                raise RecordIOError(
                    f"{self.path}: the record at byte offset {offset} announces {flag} labels "
                    f"but holds {len(payload) - start} bytes after its header"
                )
            labels = np.frombuffer(payload, np.float32, count=flag, offset=start)
            start += 4 * flag
        return image_id, label, labels, payload[start:], offset

    def _payload(self, offset):
        parts = []
        while True:
            flag, length = self._head(offset)
            body = os.pread(self._fd, length, offset + _HEAD.size)
            if len(body) < length:
                raise RecordIOError(
                    f"{self.path}: truncated record at byte offset {offset}: it announces "
                    f"{length} bytes, {len(body)} remain"
                )
            parts.append(body)
            if flag in (0, 3):
                return _MAGIC_BYTES.join(parts)
            offset += _HEAD.size + length + (-length % 4)


def read_image_list(path, label_width):
    """``{image index: labels}`` from an image list (index, labels..., path per line)."""
    labels = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 1 + label_width:
                raise FormatError(
                    f"{path}, line {number}: expected an index and {label_width} label(s), "
                    f"got {len(fields)} field(s) (Bad ImageList format)"
                )
            values = [float(value) for value in fields[1 : 1 + label_width]]
            labels[int(float(fields[0]))] = np.array(values, np.float32)
    return labels


class BatchMaker:
    """Decode, augment and normalise the records of a batch into preallocated arrays."""

    def __init__(self, source, augmenter, normalizer, labels, spec):
        self.source = source
        self.augmenter = augmenter
        self.normalizer = normalizer
        self.labels = labels
        self.spec = spec  # batch_size, data_shape, label_width, dtype, threads, flag, seed
        self.pool = ThreadPoolExecutor(max_workers=spec.threads, thread_name_prefix="rebind-imrec")
        self.random = augmenter.needs_rng or normalizer.needs_rng

    def make(self, positions, batch_key):
        """``(data, label)`` for the part positions of one batch (pad rows stay zero)."""
        spec = self.spec
        data, label = self._buffers(len(positions))
        slices = np.array_split(np.arange(len(positions)), min(spec.threads, len(positions)))
        jobs = [
            self.pool.submit(self._fill, data, label, positions, rows, batch_key)
            for rows in slices
            if rows.size
        ]
        for job in jobs:
            job.result()
        return data, label

    def _buffers(self, count):
        """The batch's data and label arrays; rows past ``count`` (padding) are zero."""
        spec = self.spec
        data = np.empty((spec.batch_size,) + spec.data_shape, spec.dtype)
        label = np.zeros((spec.batch_size, spec.label_width), np.float32)
        if count < spec.batch_size:
            data[count:] = 0
        return data, label

    def _rng(self, batch_key, row):
        """Row ``row``'s generator of random augmentation (None without it)."""
        if not self.random:
            return None
        return np.random.default_rng([self.spec.seed, *batch_key, int(row)])

    def _fill(self, data, label, positions, rows, batch_key):
        for row in rows:
            rng = self._rng(batch_key, row)
            image, label[row] = self._load(int(positions[row]))
            image = self.augmenter.process(image, rng)
            self.normalizer.write(image, data[row], rng)

    def _load(self, position):
        image_id, scalar, labels, encoded, offset = self.source.read(position)
        where = (
            f"record {position} (image index {image_id}, byte offset {offset}) "
            f"of {self.source.path}"
        )
        image = _decode(encoded, self.spec.channels, where)
        if self.labels is not None:
            if image_id not in self.labels:
                raise KeyError(f"ImageRecordIter: path_imglist has no label for {where}")
            return image, self.labels[image_id]
        if labels is not None:
            if labels.size != self.spec.label_width:
                raise FormatError(
                    f"ImageRecordIter: {where} holds a {labels.size}-value label but "
                    f"label_width is {self.spec.label_width}"
                )
            return image, labels
        if self.spec.label_width != 1:
            raise FormatError(
                f"ImageRecordIter: {where} holds one label but label_width is "
                f"{self.spec.label_width}; give path_imglist or pack records with vector labels"
            )
        return image, scalar

    def close(self):
        self.pool.shutdown(wait=True)


def _decode(encoded, channels, where):
    cv2 = _cv2()
    flag = {1: cv2.IMREAD_GRAYSCALE, 3: cv2.IMREAD_COLOR, 4: cv2.IMREAD_UNCHANGED}[channels]
    image = None
    if encoded:
        image = cv2.imdecode(np.frombuffer(encoded, np.uint8), flag)
    if image is None:
        raise FormatError(f"ImageRecordIter: cannot decode the image of {where}")
    if image.ndim == 2:
        image = image[:, :, None]
    if image.shape[2] != channels:
        raise FormatError(
            f"ImageRecordIter: the image of {where} has {image.shape[2]} channels, "
            f"data_shape asks for {channels}"
        )
    return image


class Prefetcher:
    """One epoch of batches made on a background thread, ``depth`` batches ahead.

    ``plans`` lists ``(positions, key)`` per batch; ``make(positions, key)`` builds one.
    """

    def __init__(self, make, plans, depth):
        self._make = make
        self._plans = plans
        self._results = queue.Queue()
        self._slots = threading.Semaphore(max(1, depth))
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rebind-imrec-prefetch", daemon=True)
        self._thread.start()

    def _run(self):
        for positions, key in self._plans:
            self._slots.acquire()
            if self._halt.is_set():
                return
            try:
                item = ("batch", self._make(positions, key))
            except Exception as exc:  # raised on the consumer's thread
                self._results.put(("error", exc))
                return
            self._results.put(item)
        self._results.put(("end", None))

    def take(self):
        """``(data, label)`` of the next batch; None at the end of the epoch."""
        kind, value = self._results.get()
        self._slots.release()
        if kind == "error":
            self._results.put((kind, value))
            raise value
        if kind == "end":
            self._results.put((kind, value))
            return None
        return value

    def stop(self):
        """Stop making batches and wait for the thread."""
        self._halt.set()
        while self._thread.is_alive():
            self._slots.release()
            self._thread.join(timeout=0.05)
