"""Wrapping iterators written by users, as MXNet's Python iterators allow.

User iterators may skip ``DataIter.__init__`` (no ``batch_size``), implement
only ``next()`` or only ``__next__``, and describe inputs as ``(name, shape)``
pairs; ResizeIter and PrefetchingIter read them all.
"""

import numpy as np
import pytest

import rebind as mx
from tests.io import order_inputs

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
    mod.fit(
        mx.io.ResizeIter(NotADataIter(), 5),
        num_epoch=1,
        eval_metric="mse",
        optimizer_params={"learning_rate": 0.0},
    )
    before = dict(mod.score(mx.io.PrefetchingIter(NotADataIter()), "mse"))["mse"]
    outputs = mod.predict(mx.io.ResizeIter(DunderNextOnly(), 5)).asnumpy()
    weight = mod.get_params()[0]["fc_weight"].asnumpy()
    bias = mod.get_params()[0]["fc_bias"].asnumpy()
    expected = X @ weight.T + bias
    np.testing.assert_allclose(outputs, expected, rtol=1e-5)
    assert before == pytest.approx(np.mean((expected[:, 0] - Y) ** 2), rel=1e-5)


@pytest.mark.parametrize("kind", sorted(ITERATORS))
def test_a_module_fits_scores_and_predicts_on_user_iterators_directly(kind):
    net = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc"), name="softmax"
    )
    mod = mx.mod.Module(net)
    mod.fit(
        ITERATORS[kind](), num_epoch=3, eval_metric="mse", optimizer_params={"learning_rate": 0.001}
    )
    weight, bias = (mod.get_params()[0][name].asnumpy() for name in ("fc_weight", "fc_bias"))
    expected = X @ weight.T + bias
    np.testing.assert_allclose(mod.predict(ITERATORS[kind]()).asnumpy(), expected, rtol=1e-5)
    mse = dict(mod.score(ITERATORS[kind](), "mse"))["mse"]
    assert mse == pytest.approx(np.mean((expected[:, 0] - Y) ** 2), rel=1e-5)


# -- keyword parameters of the file iterators (MXNet's dmlc parameter parsing) ------------
def _mnist(tmp_path, **kwargs):
    image, label = order_inputs.write_mnist(str(tmp_path), 60)
    return mx.io.MNISTIter(image=image, label=label, batch_size=6, silent=True, **kwargs)


def _epoch_arrays(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it]


def test_mnist_ignores_data_shape_as_mxnet_and_names_it(tmp_path, caplog):
    # real MXNet 1.9.1: MNISTIter(..., data_shape=(784,)) without flat gives (6, 1, 28, 28)
    with caplog.at_level("WARNING", logger="rebind.io"):
        it = _mnist(tmp_path, shuffle=False, data_shape=(784,))
    assert it.provide_data[0].shape == (6, 1, 28, 28)
    assert it.next().data[0].shape == (6, 1, 28, 28)
    assert "MNISTIter ignores data_shape=(784,)" in caplog.text
    assert "flat=True" in caplog.text
    flat = _mnist(tmp_path, shuffle=False, data_shape=(784,), flat=True)
    batch = flat.next()
    assert batch.data[0].shape == (6, 784)
    assert order_inputs.mnist_ids(batch.data[0].asnumpy()) == list(range(6))


def test_mnist_takes_string_values_as_mxnet_parses_them(tmp_path):
    typed = _epoch_arrays(_mnist(tmp_path, shuffle=True, seed=4, flat=True))
    texts = _epoch_arrays(
        mx.io.MNISTIter(
            image=str(tmp_path / "images-idx3-ubyte"),
            label=str(tmp_path / "labels-idx1-ubyte"),
            batch_size="6",
            shuffle="True",
            seed="4",
            flat="1",
            silent="true",
        )
    )
    assert len(typed) == len(texts) == 10
    for (data, label), (text_data, text_label) in zip(typed, texts, strict=True):
        np.testing.assert_array_equal(text_data, data)
        np.testing.assert_array_equal(text_label, label)


def test_mnist_unknown_keywords_warn_and_documented_ones_work(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="rebind.io"):
        it = _mnist(
            tmp_path,
            shuffle=False,
            flat=True,
            prefetch_buffer=2,
            ctx="cpu",
            num_parts=2,
            part_index=1,
            dtype="float64",
            preprocess_threads=4,
            verbose=False,
            round_batch=True,
        )
    for name in ("preprocess_threads", "verbose", "round_batch"):
        assert f"MNISTIter ignores {name}=" in caplog.text
    assert "prefetch_buffer" not in caplog.text and "ctx" not in caplog.text
    batches = list(it)
    assert len(batches) == 5  # 30 examples in part 1 of 2, whole batches of 6
    assert batches[0].data[0].dtype == np.float64
    assert order_inputs.mnist_ids(batches[0].data[0].asnumpy()) == list(range(30, 36))


def test_bad_values_name_the_parameter(tmp_path):
    image, label = order_inputs.write_mnist(str(tmp_path), 12)
    with pytest.raises(ValueError, match="batch_size.*'x'"):
        mx.io.MNISTIter(image=image, label=label, batch_size="x", silent=True)
    with pytest.raises(ValueError, match="shuffle.*'maybe'"):
        _mnist(tmp_path, shuffle="maybe")
    path, _ = _csv(tmp_path)
    with pytest.raises(ValueError, match="data_shape.*'three'"):
        mx.io.CSVIter(data_csv=path, data_shape="three", batch_size=2)


def _csv(tmp_path):
    rows = np.arange(15, dtype=np.float32).reshape(5, 3)
    path = tmp_path / "data.csv"
    path.write_text("\n".join(",".join(str(v) for v in row) for row in rows) + "\n")
    return str(path), rows


def test_csv_iter_takes_string_values_and_warns_on_unknown_keywords(tmp_path, caplog):
    path, rows = _csv(tmp_path)
    typed = mx.io.CSVIter(data_csv=path, data_shape=(3,), batch_size=2, round_batch=False)
    with caplog.at_level("WARNING", logger="rebind.io"):
        texts = mx.io.CSVIter(
            data_csv=path,
            data_shape="(3,)",
            batch_size="2",
            round_batch="0",
            label_shape="(1,)",
            shuffle=True,
        )
    assert "CSVIter ignores shuffle=True" in caplog.text
    expected = _epoch_arrays(typed)
    found = _epoch_arrays(texts)
    assert len(found) == len(expected) == 3
    for (data, label), (text_data, text_label) in zip(expected, found, strict=True):
        np.testing.assert_array_equal(text_data, data)
        np.testing.assert_array_equal(text_label, label)
    np.testing.assert_array_equal(found[0][0], rows[:2])


def test_ndarray_iter_takes_mxnet_layout_keyword():
    it = mx.io.NDArrayIter(X, Y, 4, False, "pad", "data", "softmax_label", "NC")
    assert it.provide_data[0].layout == "NC" and it.provide_label[0].layout == "NC"
    assert [b.data[0].shape for b in it] == [(4, 2)] * 5
    with pytest.raises(NotImplementedError, match="batch axis"):
        mx.io.NDArrayIter(X, Y, batch_size=4, layout="CN")
