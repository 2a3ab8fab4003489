"""fit starts the next batch's device copies early (core/module/copy_ahead.py), on the CPU.

The NumPy backend has nothing to overlap and starts none. Here it is given a
``copy_ahead`` whose tickets hold their own copy of the values, taken when
the copy starts, as a GPU's staged copy does: so a ticket delivered to the
wrong target, for the wrong batch, or after its batch changed would change
what trains. fit must train bit for bit as without them, every batch after
an epoch's first must come through a ticket, and tickets not used must be
dropped (their spare buffers freed).
"""

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.backends.cupy_backend import CupyBackend
from rebind.backends.numpy_backend import NumpyBackend

from .test_bucketing import DEFAULT, Buckets
from .test_bucketing import fitted as fitted_buckets

BATCH, FEATURES, CLASSES, BATCHES = 8, 6, 3, 5


class Tickets:
    """A ``copy_ahead`` for the NumPy backend that counts what becomes of its tickets."""

    def __init__(self):
        self.started = self.finished = self.dropped = 0

    def start(self, backend, target, host, device_id):
        self.started += 1
        return _Ticket(self, target, np.array(host, dtype=target.dtype))


class _Ticket:
    def __init__(self, tickets, target, values):
        self.tickets, self.target, self.values = tickets, target, values

    def finish(self):
        self.tickets.finished += 1
        self.target[...] = self.values

    def drop(self):
        self.tickets.dropped += 1


def _install(monkeypatch):
    tickets = Tickets()
    monkeypatch.setattr(
        NumpyBackend, "copy_ahead", lambda *args, **kwargs: tickets.start(*args, **kwargs)
    )
    return tickets


@pytest.fixture
def tickets(monkeypatch):
    return _install(monkeypatch)


def _data(seed=0, rows=BATCH * BATCHES):
    rs = np.random.RandomState(seed)
    return rs.randn(rows, FEATURES).astype(np.float32), rs.randint(0, CLASSES, rows)


def _mlp():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _fitted(num_epoch=2, ctx=None):
    mx.random.seed(5)
    data, labels = _data()
    mod = mx.mod.Module(_mlp(), context=ctx or mx.cpu())
    mod.fit(
        mx.io.NDArrayIter(data, labels.astype(np.float32), batch_size=BATCH, shuffle=False),
        num_epoch=num_epoch,
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Xavier(),
    )
    return mod


def _params(mod):
    args, auxs = mod.get_params()
    return {name: value.asnumpy() for name, value in {**args, **auxs}.items()}


def _bound():
    mod = mx.mod.Module(_mlp(), context=mx.cpu())
    mod.bind([("data", (BATCH, FEATURES))], [("softmax_label", (BATCH,))])
    mod.init_params(initializer=mx.init.Xavier())
    return mod


def _batch(seed, rows=BATCH):
    data, labels = _data(seed, rows)
    return mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(labels)])


def test_the_numpy_backend_starts_no_copy_ahead():
    assert _bound()._exec_group.copies_ahead is False


def _fitted_buckets():
    # keys DEFAULT, 3, 2, DEFAULT, 3: as many batches as the MLP's data
    assert len(Buckets([DEFAULT, 3, 2, DEFAULT, 3]).batches) == BATCHES
    return fitted_buckets(mx.cpu(), 2)


@pytest.mark.parametrize("fitted", [_fitted, _fitted_buckets], ids=["module", "bucketing"])
def test_fit_through_copies_ahead_trains_bit_for_bit_as_without(monkeypatch, fitted):
    expected = _params(fitted())
    tickets = _install(monkeypatch)
    got = _params(fitted())
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    # data and label of every batch but each epoch's first; none left over
    assert tickets.started == tickets.finished == 2 * 2 * (BATCHES - 1)
    assert tickets.dropped == 0


def test_a_copy_started_for_another_batch_is_dropped(tickets):
    mod = _bound()
    started_for, given = _batch(1), _batch(2)
    mod._copy_ahead(started_for)
    mod.forward(given, is_train=False)
    assert (tickets.started, tickets.finished, tickets.dropped) == (2, 0, 2)
    got = mod.get_outputs()[0].asnumpy()
    mod.forward(mx.io.DataBatch(given.data, given.label), is_train=False)  # the ordinary copy
    np.testing.assert_array_equal(got, mod.get_outputs()[0].asnumpy())


def test_the_values_are_those_the_batch_held_when_the_copy_started(tickets):
    mod = _bound()
    batch = _batch(3)
    mod.forward(_batch(3), is_train=False)
    expected = mod.get_outputs()[0].asnumpy()
    mod._copy_ahead(batch)
    batch.data[0][:] = 0  # fit changes nothing in between; a later change is not seen
    mod.forward(batch, is_train=False)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), expected)
    assert tickets.finished == 2


def test_no_copy_starts_for_a_batch_of_another_shape(tickets):
    mod = _bound()
    mod._copy_ahead(_batch(4, rows=BATCH + 2))  # its forward re-shapes first
    assert tickets.started == 0
    mod._copy_ahead([_batch(4)])  # a list of per-device batches loads the ordinary way
    assert tickets.started == 0


def test_re_shaping_drops_the_copies_started_for_the_old_arrays(tickets):
    mod = _bound()
    mod._copy_ahead(_batch(5))
    mod.reshape([("data", (BATCH + 2, FEATURES))], [("softmax_label", (BATCH + 2,))])
    assert (tickets.started, tickets.finished, tickets.dropped) == (2, 0, 2)


def test_an_array_replaced_in_the_batch_is_copied_the_ordinary_way(tickets):
    mod = _bound()
    batch, other = _batch(6), _batch(7)
    mod._copy_ahead(batch)
    batch.data = other.data  # the same batch object, holding another data array
    mod.forward(batch, is_train=False)
    assert (tickets.started, tickets.finished, tickets.dropped) == (2, 1, 1)  # the label's used
    got = mod.get_outputs()[0].asnumpy()
    mod.forward(mx.io.DataBatch(other.data, batch.label), is_train=False)
    np.testing.assert_array_equal(got, mod.get_outputs()[0].asnumpy())


class _Recorded(mx.metric.Accuracy):
    """Accuracy that notes the label arrays it is given."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def update(self, labels, preds):
        self.seen.extend(labels)
        super().update(labels, preds)


def _fit_and_score(metric, ctx=None):
    mx.random.seed(5)
    data, labels = _data()
    train = mx.io.NDArrayIter(data, labels.astype(np.float32), batch_size=BATCH)
    mod = mx.mod.Module(_mlp(), context=ctx or mx.cpu())
    mod.fit(train, num_epoch=2, eval_metric=metric, initializer=mx.init.Xavier())
    scoring = _Recorded()
    mod.score(train, scoring)
    metric.seen += scoring.seen  # fit's two epochs, then score's pass
    return mod, metric, scoring.get()


def test_fit_and_score_give_the_metric_the_labels_their_forward_loaded(monkeypatch):
    """With copies ahead (a GPU's group), no second copy of the labels for the metric."""
    plain_mod, plain, plain_scored = _fit_and_score(_Recorded())
    _install(monkeypatch)
    mod, through, scored = _fit_and_score(_Recorded())
    bound = mod._exec_group._label_targets[0]
    assert len(through.seen) == 3 * BATCHES  # two epochs' fit, one score
    assert all(label is bound for label in through.seen)  # the array the forward filled
    plain_bound = plain_mod._exec_group._label_targets[0]
    assert not any(label is plain_bound for label in plain.seen)  # no copies ahead: as given
    assert through.get_global() == plain.get_global() and scored == plain_scored


class _HostRecorded(mx.metric.EvalMetric):
    """A metric of the user's, reading labels on the host: it gets them as given."""

    def __init__(self):
        super().__init__("host")
        self.seen = []

    def update(self, labels, preds):
        self.seen.extend(labels)
        self.sum_metric += float((labels[0].asnumpy() == preds[0].asnumpy().argmax(1)).sum())
        self.num_inst += labels[0].shape[0]


def test_only_metrics_reading_labels_on_the_device_get_the_loaded_labels(tickets):
    both = mx.metric.CompositeEvalMetric([_Recorded(), mx.metric.Perplexity(None)])
    mixed = mx.metric.CompositeEvalMetric([_Recorded(), _HostRecorded()])
    assert both.reads_labels_on_device and not mixed.reads_labels_on_device
    cases = ((_Recorded(), True), (_HostRecorded(), False), (both, True), (mixed, False))
    for metric, on_device in cases:
        mx.random.seed(5)
        data, labels = _data()
        train = mx.io.NDArrayIter(data, labels.astype(np.float32), batch_size=BATCH)
        mod = mx.mod.Module(_mlp(), context=mx.cpu())
        mod.fit(train, num_epoch=1, eval_metric=metric, initializer=mx.init.Xavier())
        bound = mod._exec_group._label_targets[0]
        recorder = (
            metric.metrics[0] if isinstance(metric, mx.metric.CompositeEvalMetric) else metric
        )
        assert len(recorder.seen) == BATCHES
        assert all((label is bound) is on_device for label in recorder.seen)
    assert cases[0][0].get() == ("accuracy", cases[1][0].get()[1])  # the same counts


def test_labels_not_as_loaded_reach_the_metric_as_given(tickets):
    from rebind.module.copy_ahead import labels_as_loaded

    mod = _bound()
    bound = mod._exec_group._label_targets[0]
    batch = _batch(8)
    wide = mx.io.DataBatch(batch.data, [batch.label[0].astype(np.float64)])
    cases = [
        (batch, False, batch.label[0]),  # a user's forward and update: outside fit's loop
        (wide, True, wide.label[0]),  # another dtype than the bound array's
        (batch, True, bound),
    ]
    for given, within, expected in cases:
        metric = _Recorded()
        if within:
            with labels_as_loaded():
                mod.forward(given, is_train=False)
                mod.update_metric(metric, given.label)
        else:
            mod.forward(given, is_train=False)
            mod.update_metric(metric, given.label)
        assert metric.seen[0] is expected
    # within the scope, labels other than those the forward loaded are taken as given
    other = _batch(9).label
    with labels_as_loaded():
        mod.forward(batch, is_train=False)
        metric = _Recorded()
        mod.update_metric(metric, other)
    assert metric.seen[0] is other[0]


@pytest.mark.gpu
def test_fit_on_a_gpu_copies_ahead_and_trains_bit_for_bit_as_without(monkeypatch):
    reason = registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    real = CupyBackend.copy_ahead
    counted = Tickets()  # counts, then hands over to the real ticket

    class Counted:
        def __init__(self, ticket):
            self.ticket = ticket

        def finish(self):
            counted.finished += 1
            self.ticket.finish()

        def drop(self):
            counted.dropped += 1
            self.ticket.drop()

    def counting(backend, target, host, device_id):
        ticket = real(backend, target, host, device_id)
        return None if ticket is None else Counted(ticket)

    monkeypatch.setattr(CupyBackend, "copy_ahead", lambda *args: None)
    expected = _params(_fitted(ctx=mx.gpu(0)))
    monkeypatch.setattr(CupyBackend, "copy_ahead", counting)
    got = _params(_fitted(ctx=mx.gpu(0)))
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert (counted.finished, counted.dropped) == (2 * 2 * (BATCHES - 1), 0)


@pytest.mark.gpu
def test_a_gpu_fit_and_score_count_with_the_labels_their_forward_loaded(monkeypatch):
    from rebind.module import loading

    reason = registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    mod, through, scored = _fit_and_score(_Recorded(), mx.gpu(0))
    bound = mod._exec_group._label_targets[0]
    assert bound.context == mx.gpu(0)
    assert len(through.seen) == 3 * BATCHES and all(label is bound for label in through.seen)
    monkeypatch.setattr(loading, "as_loaded", lambda labels, *args: labels)
    _, plain, plain_scored = _fit_and_score(_Recorded(), mx.gpu(0))
    assert all(label.context == mx.cpu() for label in plain.seen)  # the host's, copied over
    assert through.get_global() == plain.get_global() and scored == plain_scored
