"""mx.io.io, mx.io.utils and the iterators rebind does not have yet."""

import numpy as np
import pytest

import rebind as mx


def test_io_io_holds_the_iterator_classes():
    assert mx.io.io.NDArrayIter is mx.io.NDArrayIter and mx.io.io.DataBatch is mx.io.DataBatch
    assert issubclass(mx.io.CSVIter, mx.io.MXDataIter) and issubclass(
        mx.io.MNISTIter, mx.io.MXDataIter
    )


def test_init_data_names_and_sorts_like_mxnet():
    pairs = mx.io.utils._init_data([np.ones((2, 1)), np.zeros((2, 1))], False, "data")
    assert [name for name, _ in pairs] == ["_0_data", "_1_data"]
    assert isinstance(pairs[0][1], mx.nd.NDArray)
    single = mx.io.utils._init_data({"b": np.ones(2), "a": np.zeros(2)}, False, "data")
    assert [name for name, _ in single] == ["a", "b"]
    assert mx.io.utils._has_instance(pairs, mx.nd.NDArray)
    assert not mx.io.utils._has_instance(pairs, np.ndarray)


def test_getdata_by_idx_takes_rows():
    pairs = [("data", mx.nd.array([[0.0], [1.0], [2.0]]))]
    ((name, picked),) = mx.io.utils._getdata_by_idx(pairs, np.array([2, 0]))
    assert name == "data" and picked.asnumpy().ravel().tolist() == [2.0, 0.0]


@pytest.mark.parametrize("name, reason", [("ImageRecordIter_v1", "use mx.io.ImageRecordIter")])
def test_missing_iterators_refuse_with_their_reason(name, reason):
    with pytest.raises(NotImplementedError, match=reason):
        getattr(mx.io, name)(path_imgrec="train.rec", batch_size=4)
