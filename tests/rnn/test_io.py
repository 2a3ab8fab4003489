"""mx.rnn.encode_sentences and mx.rnn.BucketSentenceIter: buckets, padding, labels, shuffling."""

import bisect
import random
import warnings
from collections import Counter

import numpy as np
import pytest

from rebind.rnn import BucketSentenceIter, encode_sentences

PAD = 0
STRIDE = 100  # token k of sentence i is i * STRIDE + k + 1: every token tells its sentence


def _sentences(lengths):
    return [[i * STRIDE + k + 1 for k in range(n)] for i, n in enumerate(lengths)]


def _random_lengths(count, low, high, seed):
    return np.random.default_rng(seed).integers(low, high + 1, count).tolist()


def _rows(it):
    """Every row of one epoch as (bucket_key, data row, label row), batch-major."""
    rows = []
    for batch in it:
        data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        if it.layout == "TN":
            data, label = data.T, label.T
        rows.extend((batch.bucket_key, d, lab) for d, lab in zip(data, label, strict=True))
    return rows


def _sentence_of(row):
    return int(row[0] - 1) // STRIDE


# -- BucketSentenceIter --------------------------------------------------------------------
def test_every_sentence_lands_padded_in_the_smallest_bucket_that_fits(ctx):
    lengths = _random_lengths(60, 1, 14, seed=1)
    sentences = _sentences(lengths)
    buckets = [3, 6, 10]
    with ctx, pytest.warns(UserWarning, match="discarded"):
        it = BucketSentenceIter(sentences, 1, buckets=buckets, invalid_label=PAD)
    fitting = [i for i, n in enumerate(lengths) if n <= 10]
    assert it.ndiscard == len(lengths) - len(fitting)
    seen = []
    for key, data, label in _rows(it):
        i = _sentence_of(data)
        n = lengths[i]
        assert key == min(b for b in buckets if b >= n) == data.size
        np.testing.assert_array_equal(data[:n], sentences[i])
        np.testing.assert_array_equal(data[n:], PAD)
        np.testing.assert_array_equal(label, np.append(data[1:], PAD))
        seen.append(i)
    assert sorted(seen) == fitting


def test_labels_are_the_data_shifted_by_one_with_invalid_label_last(ctx):
    with ctx:
        it = BucketSentenceIter([[5, 6, 7], [8, 9, 10]], 2, buckets=[3], invalid_label=-1)
    batch = next(it)
    data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
    np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
    np.testing.assert_array_equal(label[:, -1], [-1, -1])
    assert batch.pad == 0
    assert batch.data[0].context == ctx


def test_only_whole_batches_are_made_from_each_bucket(ctx):
    lengths = [2] * 7 + [4] * 3 + [6] * 2
    with ctx:
        it = BucketSentenceIter(_sentences(lengths), 3, buckets=[2, 4, 6], invalid_label=PAD)
    keys = Counter(batch.bucket_key for batch in it)
    assert keys == {2: 2, 4: 1}
    assert it.buckets == [2, 4, 6]  # a bucket too small for a batch stays a bucket


def test_automatic_buckets_are_the_lengths_with_at_least_batch_size_sentences(ctx):
    lengths = [3] * 5 + [4] * 2 + [5] * 4 + [7] * 1 + [8] * 4 + [9] * 1
    batch_size = 4
    with ctx, pytest.warns(UserWarning, match="discarded 1 "):
        it = BucketSentenceIter(_sentences(lengths), batch_size, invalid_label=PAD)
    expected = sorted(n for n, count in Counter(lengths).items() if count >= batch_size)
    assert it.buckets == expected == [3, 5, 8]
    assert it.default_bucket_key == 8
    rows = _rows(it)
    # the two sentences of length 4 went to bucket 5, the one of length 7 to bucket 8
    assert Counter(key for key, _, _ in rows) == {3: 4, 5: 4, 8: 4}


def test_default_bucket_key_is_the_largest_bucket_that_received_sentences(ctx):
    lengths = [1, 2, 2, 3, 5, 5]
    with ctx:
        it = BucketSentenceIter(_sentences(lengths), 2, buckets=[40, 2, 5, 12], invalid_label=PAD)
    assert it.buckets == [2, 5]  # 12 and 40 got no sentence
    assert it.default_bucket_key == 5
    assert it.provide_data == [("data", (2, 5))]
    assert it.provide_label == [("softmax_label", (2, 5))]
    assert it.provide_data[0].layout == "NT"


def test_buckets_given_by_the_caller_are_not_changed(ctx):
    buckets = [6, 2]
    with ctx:
        BucketSentenceIter(_sentences([2, 2, 6]), 1, buckets=buckets, invalid_label=PAD)
    assert buckets == [6, 2]


@pytest.mark.parametrize("layout", ["NT", "TN"])
def test_layout_puts_the_batch_on_its_axis(ctx, layout):
    lengths = [3, 3, 3, 3, 5, 5]
    with ctx:
        it = BucketSentenceIter(
            _sentences(lengths), 2, buckets=[3, 5], invalid_label=PAD, layout=layout
        )
    default_shape = (2, 5) if layout == "NT" else (5, 2)
    assert it.provide_data[0].shape == it.provide_label[0].shape == default_shape
    for batch in it:
        shape = (2, batch.bucket_key) if layout == "NT" else (batch.bucket_key, 2)
        assert batch.data[0].shape == batch.label[0].shape == shape
        for desc in batch.provide_data + batch.provide_label:
            assert desc.shape == shape
            assert desc.layout == layout
        assert [d.name for d in batch.provide_data] == ["data"]
        assert [d.name for d in batch.provide_label] == ["softmax_label"]
    it.reset()
    for _, data, label in _rows(it):
        n = lengths[_sentence_of(data)]
        np.testing.assert_array_equal(data[:n], _sentences(lengths)[_sentence_of(data)])
        np.testing.assert_array_equal(label, np.append(data[1:], PAD))


def test_names_and_dtype_are_used(ctx):
    with ctx:
        it = BucketSentenceIter(
            [[1, 2], [3, 4]], 2, data_name="words", label_name="next", dtype="int32"
        )
    batch = next(it)
    assert batch.data[0].dtype == np.int32
    assert batch.label[0].dtype == np.int32
    assert batch.provide_data[0].name == "words"
    assert batch.provide_label[0].name == "next"


def _epoch_trace(it):
    return [(key, _sentence_of(data)) for key, data, _ in _rows(it)]


def test_shuffle_is_reproducible_with_the_global_seeds(ctx):
    lengths = _random_lengths(80, 2, 9, seed=2)
    traces = []
    for seed in (11, 11, 12):
        random.seed(seed)  # MXNet's batch order: Python's random
        np.random.seed(seed)  # and the rows within buckets: NumPy's global generator
        with ctx:
            it = BucketSentenceIter(_sentences(lengths), 4, buckets=[4, 6, 9], invalid_label=PAD)
        first = _epoch_trace(it)
        it.reset()
        traces.append((first, _epoch_trace(it)))
    assert traces[0] == traces[1]
    assert traces[0] != traces[2]
    first, second = traces[0]
    assert first != second  # reset reshuffles
    assert [key for key, _ in first] != sorted(key for key, _ in first)  # batch order mixed


def test_parts_partition_the_sentences_and_make_epochs_of_one_length(ctx):
    lengths = _random_lengths(101, 1, 12, seed=3)
    num_parts = 3
    parts = []
    with ctx:
        for index in range(num_parts):
            parts.append(
                BucketSentenceIter(
                    _sentences(lengths),
                    2,
                    invalid_label=PAD,
                    num_parts=num_parts,
                    part_index=index,
                )
            )
    held = [{_sentence_of(row) for data in part.data for row in data} for part in parts]
    assert sum(len(h) for h in held) == len(set().union(*held))  # disjoint
    fitting = {i for i, n in enumerate(lengths) if n <= parts[0].default_bucket_key}
    assert set().union(*held) == fitting
    counts = Counter(lengths)
    assert parts[0].buckets == sorted(n for n, c in counts.items() if c >= 2 * num_parts)
    batches = [Counter(batch.bucket_key for batch in part) for part in parts]
    assert batches[0] == batches[1] == batches[2]
    for part in parts:
        for key, data, _ in _rows(part):
            length = lengths[_sentence_of(data)]
            assert key == part.buckets[bisect.bisect_left(part.buckets, length)]


def test_one_part_is_the_whole_data(ctx):
    lengths = _random_lengths(30, 1, 6, seed=4)
    random.seed(5)
    np.random.seed(5)
    with ctx:
        whole = _epoch_trace(BucketSentenceIter(_sentences(lengths), 3, invalid_label=PAD))
    random.seed(5)
    np.random.seed(5)
    with ctx:
        part = BucketSentenceIter(
            _sentences(lengths), 3, invalid_label=PAD, num_parts=1, part_index=0
        )
    assert _epoch_trace(part) == whole


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"layout": "NTC"}, "layout"),
        ({"batch_size": 0}, "batch_size"),
        ({"num_parts": 2, "part_index": 2}, "part_index"),
        ({"buckets": [1]}, "no sentence fits"),
        ({"sentences": []}, "sentences is empty"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    arguments = {"sentences": [[1, 2], [3, 4]], "batch_size": 1, **kwargs}
    with pytest.raises(ValueError, match=message), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # buckets=[1] also warns that it discards both
        BucketSentenceIter(**arguments)


# -- encode_sentences ------------------------------------------------------------------------
def test_encode_builds_a_vocabulary_in_order_of_first_appearance():
    encoded, vocab = encode_sentences([["the", "cat", "sat"], ["the", "dog"]])
    assert vocab == {"\n": -1, "the": 0, "cat": 1, "sat": 2, "dog": 3}
    assert encoded == [[0, 1, 2], [0, 3]]


def test_encode_start_label_skips_invalid_label_and_maps_invalid_key():
    sentences = [["a", "b", "\n"], ["c", "a", "<eos>"]]
    encoded, vocab = encode_sentences(
        sentences, invalid_label=2, invalid_key="<eos>", start_label=1
    )
    assert vocab == {"<eos>": 2, "a": 1, "b": 3, "\n": 4, "c": 5}
    assert encoded == [[1, 3, 4], [5, 1, 2]]


def test_encode_with_a_given_vocabulary_refuses_unknown_words():
    vocab = {"a": 1, "b": 2}
    encoded, same = encode_sentences([["b", "a"]], vocab=vocab)
    assert encoded == [[2, 1]]
    assert same is vocab
    with pytest.raises(KeyError, match="'zebra'.*unknown_token"):
        encode_sentences([["a", "zebra"]], vocab=vocab)


def test_encode_unknown_words_become_unknown_token():
    vocab = {"a": 1, "b": 2, "c": 3}
    encoded, vocab = encode_sentences(
        [["a", "b", "c"], ["b", "c", "d", "e"]], vocab=vocab, unknown_token="UNK"
    )
    # MXNet 1.9's own test of this case: UNK gets index 0, the lowest free one
    assert vocab == {"a": 1, "b": 2, "c": 3, "UNK": 0}
    assert encoded == [[1, 2, 3], [2, 3, 0, 0]]
    encoded, _ = encode_sentences([["zz"]], vocab={"a": 0, "<unk>": 7}, unknown_token="<unk>")
    assert encoded == [[7]]


def test_order_state_carries_the_shuffle_into_a_fresh_iterator(ctx):
    """A resume point's view: order and global generators restored, later epochs agree."""
    lengths = _random_lengths(60, 1, 9, seed=6)
    random.seed(1)
    np.random.seed(1)
    with ctx:
        running = BucketSentenceIter(_sentences(lengths), 3, buckets=[3, 6, 9], invalid_label=PAD)
    for _ in range(2):
        running.reset()
    state, generators = running.order_state(), (np.random.get_state(), random.getstate())
    expected = []
    for _ in range(2):
        running.reset()
        expected.append(_epoch_trace(running))

    random.seed(99)
    np.random.seed(99)
    with ctx:
        fresh = BucketSentenceIter(_sentences(lengths), 3, buckets=[3, 6, 9], invalid_label=PAD)
    fresh.restore_order_state(state)
    np.random.set_state(generators[0])
    random.setstate(generators[1])
    found = []
    for _ in range(2):
        fresh.reset()
        found.append(_epoch_trace(fresh))
    assert found == expected
