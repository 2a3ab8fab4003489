"""NDArrayIter's num_parts/part_index (rebind): equal, contiguous parts of the examples."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError


def _rows(iterator):
    return [row for batch in iterator for row in batch.data[0].asnumpy()[:, 0].tolist()]


@pytest.mark.parametrize("num_parts", [1, 2, 3, 4])
def test_parts_are_disjoint_equal_and_cover_all_but_the_remainder(ctx, num_parts):
    data = mx.nd.array(np.arange(14, dtype=np.float32).reshape(14, 1), ctx=ctx)
    size = 14 // num_parts
    seen = []
    for part in range(num_parts):
        iterator = mx.io.NDArrayIter(
            data, batch_size=1, num_parts=num_parts, part_index=part, last_batch_handle="discard"
        )
        rows = _rows(iterator)
        assert rows == list(range(part * size, (part + 1) * size))
        assert iterator.num_data == size
        seen += rows
    assert seen == list(range(num_parts * size))


def test_labels_follow_their_examples_and_batches_are_as_usual(ctx):
    x = mx.nd.array(np.arange(20, dtype=np.float32).reshape(10, 2), ctx=ctx)
    y = mx.nd.array(np.arange(10, dtype=np.float32), ctx=ctx)
    iterator = mx.io.NDArrayIter(x, y, batch_size=2, num_parts=2, part_index=1)
    batches = list(iterator)
    # part 1 of 2 is examples 5..9; the last batch is padded from the part's own start
    assert [b.label[0].asnumpy().tolist() for b in batches] == [[5, 6], [7, 8], [9, 5]]
    assert batches[-1].pad == 1
    assert batches[0].data[0].asnumpy().tolist() == [[10, 11], [12, 13]]
    assert iterator.provide_data[0].shape == (2, 2)


def test_shuffle_stays_within_the_part(ctx):
    mx.random.seed(3)
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(12, 1), ctx=ctx)
    iterator = mx.io.NDArrayIter(x, batch_size=2, shuffle=True, num_parts=3, part_index=2)
    assert sorted(_rows(iterator)) == [8, 9, 10, 11]


def test_every_part_has_as_many_batches():
    x = np.zeros((23, 1), np.float32)
    counts = {
        len(list(mx.io.NDArrayIter(x, batch_size=2, num_parts=4, part_index=part)))
        for part in range(4)
    }
    assert counts == {3}  # 23 // 4 = 5 examples each, 3 batches with padding


@pytest.mark.parametrize(
    "num_parts, part_index, message",
    [
        (0, 0, "num_parts must be an integer >= 1"),
        (2, 2, r"part_index must be an integer in \[0, 2\)"),
        (2, -1, r"part_index must be an integer in \[0, 2\)"),
        (1.5, 0, "num_parts must be an integer >= 1"),
    ],
)
def test_bad_parts_are_refused(num_parts, part_index, message):
    with pytest.raises(ValueError, match=message):
        mx.io.NDArrayIter(np.zeros((4, 1)), num_parts=num_parts, part_index=part_index)


def test_more_parts_than_examples_is_a_shape_error():
    with pytest.raises(ShapeError, match="3 examples cannot be split into 4 non-empty parts"):
        mx.io.NDArrayIter(np.zeros((3, 1)), num_parts=4, part_index=0)
