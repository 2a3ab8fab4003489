"""Wrapping iterators written by users, as MXNet's Python iterators allow.

User iterators may skip ``DataIter.__init__`` (no ``batch_size``), implement
only ``next()`` or only ``__next__``, and describe inputs as ``(name, shape)``
pairs; ResizeIter and PrefetchingIter read them all.
"""

import numpy as np
import pytest

import rebind as mx

BATCH = 4
X = np.arange(40, dtype=np.float32).reshape(20, 2)
Y = np.arange(20, dtype=np.float32)


class Pair:
    def __init__(self, data, label):
        self.data, self.label = data, label


class NextOnly(mx.io.DataIter):
    """Overrides next() only and never calls DataIter.__init__."""

    def __init__(self):
        self.provide_data = [("data", (BATCH, 2))]
        self.provide_label = [("softmax_label", (BATCH,))]
        self.cursor = 0

    def reset(self):
        self.cursor = 0

    def next(self):
        if self.cursor >= len(X):
            raise StopIteration
        rows = slice(self.cursor, self.cursor + BATCH)
        self.cursor += BATCH
        return Pair([mx.nd.array(X[rows])], [mx.nd.array(Y[rows])])


class DunderNextOnly(NextOnly):
    """Overrides __next__ only: DataIter.next() would fail, so wrappers must use next()."""

    def __next__(self):
        return NextOnly.next(self)

    next = mx.io.DataIter.next


class NotADataIter:
    """A plain object with the MXNet-style next() and no __iter__ / __next__."""

    def __init__(self):
        self.inner = NextOnly()
        self.provide_data = self.inner.provide_data
        self.provide_label = self.inner.provide_label

    def reset(self):
        self.inner.reset()

    def next(self):
        return self.inner.next()


def _firsts(data_iter):
    """The first value of each batch of one epoch."""
    return [float(batch.data[0].asnumpy()[0, 0]) for batch in data_iter]


ITERATORS = {"next": NextOnly, "__next__": DunderNextOnly, "plain": NotADataIter}


@pytest.mark.parametrize("kind", sorted(ITERATORS))
def test_resize_iter_wraps_user_iterators(kind):
    resized = mx.io.ResizeIter(ITERATORS[kind](), 7)
    assert resized.batch_size == BATCH
    # 5 batches per epoch, so the 6th and 7th start over
    assert _firsts(resized) == [0.0, 8.0, 16.0, 24.0, 32.0, 0.0, 8.0]
    resized.reset()
    batch = resized.next()
    assert resized.getpad() == 0 and resized.getindex() is None
    np.testing.assert_array_equal(batch.label[0].asnumpy(), Y[:BATCH])


@pytest.mark.parametrize("kind", sorted(ITERATORS))
def test_prefetching_iter_wraps_user_iterators(kind):
    with mx.io.PrefetchingIter(ITERATORS[kind]()) as prefetched:
        assert prefetched.batch_size == BATCH
        assert prefetched.provide_data == [mx.io.DataDesc("data", (BATCH, 2))]
        assert prefetched.provide_data[0].dtype == np.float32
        assert _firsts(prefetched) == [0.0, 8.0, 16.0, 24.0, 32.0]
        prefetched.reset()
        batch = prefetched.next()
        assert batch.pad == 0
        np.testing.assert_array_equal(batch.label[0].asnumpy(), Y[:BATCH])


def test_prefetching_iter_renames_tuple_descriptions():
    with mx.io.PrefetchingIter(NextOnly(), rename_data=[{"data": "x"}]) as prefetched:
        assert [tuple(d) for d in prefetched.provide_data] == [("x", (BATCH, 2))]
        assert prefetched.provide_label[0].name == "softmax_label"


def test_a_module_fits_through_wrapped_user_iterators():
    data = mx.sym.Variable("data")
    net = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(data, num_hidden=1, name="fc"), name="softmax"
    )
    mod = mx.mod.Module(net)
    mod.fit(mx.io.ResizeIter(NotADataIter(), 5), num_epoch=1, eval_metric="mse",
            optimizer_params={"learning_rate": 0.0})
    before = dict(mod.score(mx.io.PrefetchingIter(NotADataIter()), "mse"))["mse"]
    outputs = mod.predict(mx.io.ResizeIter(DunderNextOnly(), 5)).asnumpy()
    weight = mod.get_params()[0]["fc_weight"].asnumpy()
    bias = mod.get_params()[0]["fc_bias"].asnumpy()
    expected = X @ weight.T + bias
    np.testing.assert_allclose(outputs, expected, rtol=1e-5)
    assert before == pytest.approx(np.mean((expected[:, 0] - Y) ** 2), rel=1e-5)
