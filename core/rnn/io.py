"""Sentence data for language models: ``encode_sentences`` and ``BucketSentenceIter``.

``encode_sentences`` turns tokenized sentences into integer codes (building
the vocabulary on the way, or using a given one). ``BucketSentenceIter``
groups encoded sentences by length into buckets, pads each sentence to its
bucket's length with ``invalid_label`` and hands out batches whose labels are
the data shifted by one step (the next word), each tagged with its
``bucket_key`` so a ``BucketingModule`` can pick the network unrolled for that
length.
"""

import random
import warnings

import numpy as np

from .. import ndarray as nd
from ..context import current_context
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(
    sentences,
    vocab=None,
    invalid_label=-1,
    invalid_key="\n",
    start_label=0,
    unknown_token=None,
):
    """Encode sentences (lists of tokens) as lists of integer indices.

    Without ``vocab`` a vocabulary is built: it starts as ``{invalid_key:
    invalid_label}`` and every new token gets the next index counting from
    ``start_label`` (``invalid_label`` is skipped). With ``vocab`` (a dict
    token -> index, extended in place as in MXNet) a token it lacks is an
    error unless ``unknown_token`` is given; then unknown tokens are encoded
    as ``unknown_token``, which is added to the vocabulary if missing.

    Args:
        sentences: an iterable of sentences, each an iterable of tokens.
        vocab: dict token -> index, or None to build one.
        invalid_label: the index of ``invalid_key`` in a built vocabulary.
        invalid_key: the token that stands for "no word" (default ``'\\n'``).
        start_label: the lowest index given to a new token.
        unknown_token: what a token missing from a given ``vocab`` becomes.

    Returns:
        ``(encoded, vocab)``: a list of lists of ints, and the vocabulary.

    Differences from MXNet 1.9: MXNet gives ``unknown_token`` a new index at
    every unknown token it meets (counting from ``start_label``, which can
    collide with indices the given vocabulary already uses); here it gets one
    index, the lowest free one from ``start_label``, kept for every unknown
    token. While building a vocabulary MXNet would also turn every new token
    into ``unknown_token``; here building adds the tokens themselves.
    """
    building = vocab is None
    if building:
        vocab = {invalid_key: invalid_label}
    indices = _FreeIndices(start_label, invalid_label, vocab.values())
    encoded = []
    for sentence in sentences:
        codes = []
        for token in sentence:
            if token not in vocab:
                if not building:
                    token = _unknown_stand_in(token, unknown_token)
                if token not in vocab:
                    vocab[token] = indices.take()
            codes.append(vocab[token])
        encoded.append(codes)
    return encoded, vocab


def _unknown_stand_in(token, unknown_token):
    """``unknown_token``, or a KeyError naming ``token`` when there is none."""
    if not unknown_token:
        raise KeyError(
            f"encode_sentences: token {token!r} is not in the given vocab; pass "
            "unknown_token='<unk>' to encode unknown tokens, or vocab=None to build a vocabulary"
        )
    return unknown_token


class _FreeIndices:
    """Hands out indices from ``start`` upwards, skipping ``invalid`` and those in use."""

    def __init__(self, start, invalid, used):
        self._next = start
        self._used = set(used)
        self._used.add(invalid)

    def take(self):
        """The lowest free index (from the last one handed out), now marked as used."""
        while self._next in self._used:
            self._next += 1
        self._used.add(self._next)
        return self._next


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences, bucketed by length, for a language model.

    Every sentence goes into the smallest bucket at least as long as it and is
    padded to that length with ``invalid_label``; sentences longer than the
    largest bucket are dropped (a warning says how many). A batch holds
    ``batch_size`` sentences of one bucket: ``data`` the padded sentences,
    ``label`` the same shifted one step left (``label[:, t] = data[:, t+1]``)
    with ``invalid_label`` at the last step, and ``bucket_key`` the bucket's
    length. Only whole batches are made; what is left over in a bucket waits
    for another epoch's shuffle.

    Args:
        sentences: a list of encoded sentences (lists or arrays of ints).
        batch_size: sentences per batch.
        buckets: bucket lengths; by default every length (at least 1) that
            ``batch_size * num_parts`` or more sentences have, i.e. MXNet's
            rule, which needs ``batch_size`` sentences of a length. Buckets
            that receive no sentence are dropped.
        invalid_label: the padding value, also the label after the last word.
        data_name, label_name: the input names of the batches.
        dtype: the dtype of the arrays (the DataDescs say float32, as MXNet's).
        layout: ``'NT'`` (batch, time) or ``'TN'`` (time, batch).
        num_parts, part_index: keep only part ``part_index`` of ``num_parts``
            (the rank and the number of workers in distributed training).
            Buckets are chosen from all sentences, so every part has the same
            buckets and ``default_bucket_key``; within each bucket part ``k``
            keeps sentences ``k, k + num_parts, ...`` (in the given order), and
            every part makes the same number of batches from each bucket, so
            all workers run epochs of the same length. (Not in MXNet.)

    ``reset`` (called by the constructor and at every epoch) shuffles the order
    of the batches with Python's ``random.shuffle`` and the sentences within
    each bucket with ``np.random.shuffle``, as MXNet does, so a script seeding
    ``random`` and ``np.random`` gets MXNet's batches. The arrays live on the
    context current at construction.
    """

    def __init__(
        self,
        sentences,
        batch_size,
        buckets=None,
        invalid_label=-1,
        data_name="data",
        label_name="softmax_label",
        dtype="float32",
        layout="NT",
        num_parts=1,
        part_index=0,
    ):
        super().__init__(batch_size)
        _check_arguments(batch_size, layout, num_parts, part_index)
        buckets, members, self.ndiscard = _bucket_members(
            sentences, buckets, batch_size * num_parts
        )
        self.batch_size = int(batch_size)
        self.buckets = buckets
        self.invalid_label = invalid_label
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.layout = layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        self.num_parts = int(num_parts)
        self.part_index = int(part_index)

        self.data = [
            _padded(sentences, rows[part_index::num_parts], length, invalid_label, dtype)
            for rows, length in zip(members, buckets, strict=True)
        ]
        # each part can fill (bucket size // num_parts) // batch_size batches of every bucket
        self.idx = [
            (i, start)
            for i, rows in enumerate(members)
            for start in range(0, (rows.size // num_parts) // batch_size * batch_size, batch_size)
        ]
        self._descs = [self._describe(length) for length in self.buckets]
        self.provide_data, self.provide_label = self._describe(self.default_bucket_key)
        self._ctx = current_context()
        # each bucket's sentences as ordered now, by their position in the bucket at the start
        self.rows = [np.arange(data.shape[0]) for data in self.data]
        self.curr_idx = 0
        self.nddata = []
        self.ndlabel = []
        self.reset()

    def _describe(self, length):
        """``([data DataDesc], [label DataDesc])`` of a batch of the bucket ``length``."""
        shape = (self.batch_size, length) if self.major_axis == 0 else (length, self.batch_size)
        return (
            [DataDesc(self.data_name, shape, layout=self.layout)],
            [DataDesc(self.label_name, shape, layout=self.layout)],
        )

    def reset(self):
        """Start a new epoch: shuffle the order of the batches and the sentences of each bucket."""
        self.curr_idx = 0
        # MXNet's draws, in its order: Python's random.shuffle of the batch list,
        # then NumPy's global shuffle of each bucket's rows, both in place, so
        # every epoch reshuffles the previous epoch's order
        random.shuffle(self.idx)
        for bucket, data in enumerate(self.data):
            # np.random.shuffle draws the same for an index vector as for the rows
            order = np.arange(data.shape[0])
            np.random.shuffle(order)
            self.data[bucket] = data[order]
            self.rows[bucket] = self.rows[bucket][order]
        self._upload()

    def _upload(self):
        """The device copies of the buckets, as ordered now, and their labels."""
        self.nddata = []
        self.ndlabel = []
        for data in self.data:
            label = _shifted(data, self.invalid_label)
            self.nddata.append(nd.array(data, ctx=self._ctx, dtype=self.dtype))
            self.ndlabel.append(nd.array(label, ctx=self._ctx, dtype=self.dtype))

    def order_state(self):
        """The batch order and each bucket's sentence order, JSON-ready (for resume points)."""
        return {
            "idx": [[int(i), int(j)] for i, j in self.idx],
            "rows": [[int(r) for r in rows] for rows in self.rows],
        }

    def restore_order_state(self, state):
        """Put batches and sentences back in the order ``order_state`` gave."""
        saved = [np.asarray(rows, dtype=np.int64) for rows in state["rows"]]
        if [sorted(r.tolist()) for r in saved] != [sorted(r.tolist()) for r in self.rows]:
            raise ValueError(
                "BucketSentenceIter: the saved sentence order does not fit these buckets"
            )
        for bucket, rows in enumerate(saved):
            position = np.empty_like(self.rows[bucket])
            position[self.rows[bucket]] = np.arange(rows.size)
            self.data[bucket] = self.data[bucket][position[rows]]
            self.rows[bucket] = rows
        self.idx = [tuple(pair) for pair in state["idx"]]
        self._upload()

    def next(self):
        """The next batch; StopIteration when the epoch's batches are all out."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        bucket, start = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[bucket][start : start + self.batch_size]
        label = self.ndlabel[bucket][start : start + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        provide_data, provide_label = self._descs[bucket]
        return DataBatch(
            [data],
            [label],
            pad=0,
            bucket_key=self.buckets[bucket],
            provide_data=provide_data,
            provide_label=provide_label,
        )


def _check_arguments(batch_size, layout, num_parts, part_index):
    if int(batch_size) < 1:
        raise ValueError(f"BucketSentenceIter: batch_size must be >= 1, got {batch_size}")
    if layout not in ("NT", "TN"):
        raise ValueError(
            f"BucketSentenceIter: layout must be 'NT' (batch major) or 'TN' (time major), "
            f"got {layout!r}"
        )
    if int(num_parts) < 1 or not 0 <= int(part_index) < int(num_parts):
        raise ValueError(
            f"BucketSentenceIter: part_index must be in [0, num_parts) with num_parts >= 1, "
            f"got part_index={part_index}, num_parts={num_parts}"
        )


def _bucket_members(sentences, buckets, min_count):
    """``(buckets, members, ndiscard)``: the buckets that receive sentences, the sentence
    indices of each (in order), and how many sentences are longer than every bucket.

    Without ``buckets``, the lengths that ``min_count`` or more sentences have.
    """
    lengths = np.array([len(sentence) for sentence in sentences], dtype=np.int64)
    if not lengths.size:
        raise ValueError("BucketSentenceIter: sentences is empty; give at least one sentence")
    if not buckets:
        buckets = _automatic_buckets(lengths, min_count)
    buckets = sorted(set(int(length) for length in buckets))
    bucket_of = np.searchsorted(np.array(buckets, dtype=np.int64), lengths, side="left")
    members = [np.flatnonzero(bucket_of == i) for i in range(len(buckets))]
    kept = [i for i, rows in enumerate(members) if rows.size]
    if not kept:
        raise ValueError(
            f"BucketSentenceIter: no sentence fits a bucket (buckets {buckets}, "
            f"{len(lengths)} sentences); give longer buckets, or leave buckets=None to "
            f"choose them from lengths that occur at least batch_size * num_parts times"
        )
    ndiscard = int(np.count_nonzero(bucket_of == len(buckets)))
    if ndiscard:
        warnings.warn(
            f"BucketSentenceIter: discarded {ndiscard} sentences longer than the largest "
            f"bucket ({buckets[-1]})",
            stacklevel=3,
        )
    return [buckets[i] for i in kept], [members[i] for i in kept], ndiscard


def _automatic_buckets(lengths, min_count):
    """The lengths (at least 1) that ``min_count`` or more sentences have."""
    counts = np.bincount(lengths) if lengths.size else np.zeros(0, np.int64)
    return [length for length, count in enumerate(counts) if length >= 1 and count >= min_count]


def _padded(sentences, rows, length, invalid_label, dtype):
    """Sentences ``rows`` as a ``(len(rows), length)`` array, padded with ``invalid_label``."""
    padded = np.full((len(rows), length), invalid_label, dtype=dtype)
    for row, index in enumerate(rows):
        sentence = sentences[index]
        padded[row, : len(sentence)] = sentence
    return padded


def _shifted(padded, invalid_label):
    """The next-word labels of ``padded``: rows shifted one step left, ``invalid_label`` last."""
    label = np.empty_like(padded)
    label[:, :-1] = padded[:, 1:]
    label[:, -1:] = invalid_label
    return label
