"""Batches and iterators written by users: MXNet reads only ``data`` and ``label``.

A two-field ``SimpleBatch`` from an iterator that never called
``DataIter.__init__`` (and describes its inputs with ``(name, shape)`` pairs)
must train, score and predict exactly as ``mx.io.DataBatch`` batches of the
same data do, on every kind of module.
"""

from argparse import Namespace
from collections import namedtuple

import numpy as np
import pytest

import rebind as mx

BATCH, FEATURES, CLASSES, EXAMPLES = 10, 6, 3, 60


def _dataset():
    rng = np.random.RandomState(3)
    x = rng.randn(EXAMPLES, FEATURES).astype(np.float32)
    y = np.argmax(x[:, :CLASSES], axis=1).astype(np.float32)
    return x, y


class SimpleBatch:
    """The two-field batch of MXNet's tutorials."""

    def __init__(self, data, label):
        self.data = data
        self.label = label


class SimpleIter(mx.io.DataIter):
    """A user iterator: no super().__init__, tuple descriptions, only next()."""

    def __init__(self, x, y, ctx, with_label=True):
        self.x, self.y, self.ctx, self.with_label = x, y, ctx, with_label
        self.provide_data = [("data", (BATCH, FEATURES))]
        if with_label:
            self.provide_label = [("softmax_label", (BATCH,))]
        self.cursor = 0

    def reset(self):
        self.cursor = 0

    def next(self):
        if self.cursor >= len(self.x):
            raise StopIteration
        rows = slice(self.cursor, self.cursor + BATCH)
        self.cursor += BATCH
        label = [mx.nd.array(self.y[rows], ctx=self.ctx)] if self.with_label else None
        return SimpleBatch([mx.nd.array(self.x[rows], ctx=self.ctx)], label)


class PlainIter:
    """Not a DataIter at all: ``__iter__`` and ``__next__`` only, batches without ``label``."""

    def __init__(self, x, ctx):
        self.x, self.ctx = x, ctx
        self.provide_data = [("data", (BATCH, FEATURES))]

    def __iter__(self):
        for start in range(0, len(self.x), BATCH):
            yield SimpleBatch([mx.nd.array(self.x[start : start + BATCH], ctx=self.ctx)], None)


def _net():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=CLASSES, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _sequential():
    first = mx.mod.Module(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=CLASSES, name="fc"),
        label_names=None,
    )
    second = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.Variable("data"), name="softmax"))
    seq = mx.mod.SequentialModule()
    seq.add(first).add(second, take_labels=True, auto_wiring=True)
    return seq


MODULES = {
    "Module": lambda ctx: mx.mod.Module(_net(), context=ctx),
    "BucketingModule": lambda ctx: mx.mod.BucketingModule(
        lambda key: (_net(), ("data",), ("softmax_label",)), default_bucket_key=7, context=ctx
    ),
    "MutableModule": lambda ctx: mx.mod.MutableModule(
        _net(), ("data",), ("softmax_label",), context=ctx
    ),
    "SequentialModule": lambda ctx: _sequential(),
}


def _fit(make, ctx, data_iter):
    mx.random.seed(11)
    np.random.seed(11)
    mod = make(ctx)
    mod.fit(
        data_iter,
        num_epoch=4,
        optimizer_params={"learning_rate": 0.5},
        initializer=mx.init.Xavier(),
    )
    return mod


@pytest.mark.parametrize("kind", sorted(MODULES))
def test_simple_batches_train_score_and_predict_as_data_batches(ctx, kind):
    x, y = _dataset()
    reference_iter = mx.io.NDArrayIter(x, y, batch_size=BATCH)
    reference = _fit(MODULES[kind], ctx, reference_iter)
    duck_iter = SimpleIter(x, y, ctx)
    duck = _fit(MODULES[kind], ctx, duck_iter)

    expected, found = reference.get_params()[0], duck.get_params()[0]
    assert sorted(found) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(found[name].asnumpy(), expected[name].asnumpy(), rtol=1e-6)

    accuracy = dict(duck.score(duck_iter, "acc"))["accuracy"]
    assert accuracy == dict(reference.score(reference_iter, "acc"))["accuracy"]
    assert accuracy > 0.8  # learned: chance is 1/3

    predicted = duck.predict(SimpleIter(x, y, ctx, with_label=False)).asnumpy()
    np.testing.assert_allclose(predicted, reference.predict(reference_iter).asnumpy(), rtol=1e-6)
    assert np.mean(predicted.argmax(axis=1) == y) == pytest.approx(accuracy)


def test_predict_reads_a_plain_python_iterable_of_label_free_batches(ctx):
    x, y = _dataset()
    mod = _fit(MODULES["Module"], ctx, SimpleIter(x, y, ctx))
    expected = mod.predict(mx.io.NDArrayIter(x, batch_size=BATCH)).asnumpy()
    np.testing.assert_array_equal(mod.predict(PlainIter(x, ctx)).asnumpy(), expected)
    outputs = [out[0].asnumpy() for out, _, _ in mod.iter_predict(PlainIter(x, ctx))]
    np.testing.assert_array_equal(np.concatenate(outputs), expected)


def test_update_metric_and_forward_take_a_simple_batch(ctx):
    x, y = _dataset()
    mod = _fit(MODULES["Module"], ctx, SimpleIter(x, y, ctx))
    metric = mx.metric.Accuracy()
    for batch in SimpleIter(x, y, ctx):
        mod.forward(batch, is_train=False)
        mod.update_metric(metric, batch.label)
    predicted = mod.predict(mx.io.NDArrayIter(x, batch_size=BATCH)).asnumpy().argmax(axis=1)
    assert metric.get()[1] == pytest.approx(np.mean(predicted == y))


def test_a_batch_without_bucket_key_runs_on_the_default_bucket(ctx):
    x, y = _dataset()
    mod = _fit(MODULES["BucketingModule"], ctx, SimpleIter(x, y, ctx))
    assert sorted(mod._buckets) == [7]
    rows, labels = mx.nd.array(x[:BATCH], ctx=ctx), mx.nd.array(y[:BATCH], ctx=ctx)
    mod.forward(mx.io.DataBatch([rows], [labels], bucket_key=7), is_train=False)
    on_default = mod.get_outputs()[0].asnumpy()
    # a keyed batch moves to bucket 3 (same network, so same outputs) ...
    mod.forward(mx.io.DataBatch([rows], [labels], bucket_key=3), is_train=False)
    assert mod._curr_bucket_key == 3
    # ... a key of None stays there, a batch without the field goes back to the default
    mod.forward(mx.io.DataBatch([rows], [labels]), is_train=False)
    assert mod._curr_bucket_key == 3
    mod.forward(SimpleBatch([rows], [labels]), is_train=False)
    assert mod._curr_bucket_key == 7
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), on_default)
    mod.prepare(mx.io.DataBatch([rows], [labels], bucket_key=5))
    assert sorted(mod._buckets) == [3, 5, 7] and mod._curr_bucket_key == 7


def test_python_loss_module_reads_a_simple_batch(ctx):
    rng = np.random.RandomState(0)
    scores = rng.randn(BATCH, CLASSES).astype(np.float32)
    labels = rng.randint(0, CLASSES, size=BATCH).astype(np.float32)
    loss = mx.mod.PythonLossModule(grad_func=lambda s, l: s.asnumpy() * 0 + 1)
    loss.bind(data_shapes=[("data", (BATCH, CLASSES))], label_shapes=[("softmax_label", (BATCH,))])
    loss.forward(SimpleBatch([mx.nd.array(scores)], [mx.nd.array(labels)]), is_train=True)
    np.testing.assert_array_equal(loss.get_outputs()[0].asnumpy(), scores)
    loss.backward()
    np.testing.assert_array_equal(loss.get_input_grads()[0].asnumpy(), np.ones_like(scores))


Batch = namedtuple("Batch", ["data"])  # MXNet's predict tutorials: data only, immutable


@pytest.mark.parametrize("kind", sorted(MODULES))
def test_a_data_only_namedtuple_batch_runs_forward(ctx, kind):
    x, y = _dataset()
    mod = _fit(MODULES[kind], ctx, SimpleIter(x, y, ctx))
    rows = mx.nd.array(x[:BATCH], ctx=ctx)
    mod.forward(mx.io.DataBatch([rows]), is_train=False)
    expected = mod.get_outputs()[0].asnumpy()
    mod.forward(Batch([rows]), is_train=False)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), expected)
    # another batch size re-shapes, as for a DataBatch
    mod.forward(Batch([rows[:3]]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expected[:3], rtol=1e-5)


def test_a_batch_without_data_is_named_in_the_error(ctx):
    x, y = _dataset()
    mod = _fit(MODULES["Module"], ctx, SimpleIter(x, y, ctx))
    with pytest.raises(TypeError, match="needs a 'data' attribute.*Namespace"):
        mod.forward(Namespace(label=[mx.nd.array(y[:BATCH])]), is_train=False)


def test_a_base_module_with_stubbed_methods_fits_batches_it_never_reads():
    """MXNet's test_reference_single_batch_during_fit: fit drives a bare BaseModule whose
    methods are replaced, over batches that have no data at all."""
    seen = []

    class Mock:
        def __init__(self, index):
            self.index = index

    class MockIter:
        provide_data = provide_label = None

        def __init__(self):
            self.reset = lambda: None

        def __iter__(self):
            self.i = 0
            return self

        def __next__(self):
            if self.i == 2:
                raise StopIteration
            self.i += 1
            return Mock(self.i)

    module = mx.mod.BaseModule()
    for name in ("bind", "init_params", "init_optimizer", "backward", "update", "update_metric"):
        setattr(module, name, lambda *args, **kwargs: None)
    module.forward = lambda batch, is_train=None: seen.append(batch.index)
    module.get_params = lambda: (None, None)
    module.fit(MockIter(), num_epoch=1)
    assert seen == [1, 2]


def test_module_prepare_still_needs_bind():
    module = mx.mod.Module(mx.sym.Variable("data"), label_names=None)
    with pytest.raises(mx.LifecycleError, match="bind"):
        module.prepare(None)
