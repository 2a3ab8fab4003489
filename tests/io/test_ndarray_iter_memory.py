"""NDArrayIter(shuffle=True) over NumPy data holds one copy of it, not two at once.

MXNet copies NumPy inputs into NDArrays and then, shuffling, into new ones;
rebind takes the shuffled rows straight from the caller's array: the same
float32 values in the same order, with the data set held once by the iterator
(and never twice while it is built).
"""

import tracemalloc

import numpy as np
import pytest

import rebind as mx

ROWS, COLUMNS = 2048, 256  # 2 MiB of float32
DATA_BYTES = ROWS * COLUMNS * 4


def _inputs(dtype=np.float32):
    rng = np.random.default_rng(5)
    data = rng.uniform(0, 255, (ROWS, COLUMNS)).astype(dtype)
    label = rng.integers(0, 10, ROWS).astype(np.int8)
    return data, label


def _batches(iterator):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in iterator]


def test_building_a_shuffled_iterator_holds_the_data_once():
    data, label = _inputs()
    # a first, small iterator: what its first use imports is not the data's memory
    mx.io.NDArrayIter(data[:8], label[:8], batch_size=4, shuffle=True)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        iterator = mx.io.NDArrayIter(data, label, batch_size=256, shuffle=True)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    # the shuffled copy, plus the label and index arrays (before: twice the data)
    assert DATA_BYTES <= peak < 1.2 * DATA_BYTES
    assert iterator.data[0][1].dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
def test_shuffled_batches_equal_those_of_ndarray_inputs(dtype):
    """The same order and float32 values as from NDArrays made first (MXNet's way)."""
    data, label = _inputs(dtype)
    np.random.seed(11)
    from_numpy = _batches(mx.io.NDArrayIter(data, label, batch_size=300, shuffle=True))
    np.random.seed(11)
    made_first = mx.io.NDArrayIter(
        mx.nd.array(data), mx.nd.array(label), batch_size=300, shuffle=True
    )
    for (d1, l1), (d2, l2) in zip(from_numpy, _batches(made_first), strict=True):
        assert d1.dtype == l1.dtype == np.float32
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_array_equal(l1, l2)


def test_the_iterator_owns_its_copy():
    """Writing to the caller's array afterwards changes no batch, as with MXNet's copy."""
    data, label = _inputs()
    np.random.seed(3)
    iterator = mx.io.NDArrayIter(data, label, batch_size=512, shuffle=True)
    before = _batches(iterator)
    data[...] = -1
    label[...] = -1
    iterator.reset()  # reshuffles the iterator's own copy
    after = _batches(iterator)
    assert all((d >= 0).all() and (lab >= 0).all() for d, lab in after)
    assert sorted(map(float, np.concatenate([lab for _, lab in before]))) == sorted(
        map(float, np.concatenate([lab for _, lab in after]))
    )
