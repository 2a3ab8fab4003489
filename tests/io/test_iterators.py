"""NDArrayIter beyond the golden cases, DataBatch / DataIter, ResizeIter, PrefetchingIter."""

import gc
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError


def _rows(count, width=2):
    """Example i is the row [i*width, ..., i*width + width - 1]: every row tells its index."""
    return np.arange(count * width, dtype=np.float32).reshape(count, width)


def _epoch(it):
    return [(batch.pad, batch.data[0].asnumpy(), batch.label[0].asnumpy()) for batch in it]


# -- NDArrayIter --------------------------------------------------------------------
def test_shuffle_is_a_reproducible_permutation_keeping_labels_aligned(ctx):
    data = mx.nd.array(_rows(10), ctx=ctx)
    label = mx.nd.array(np.arange(10), ctx=ctx)
    orders = []
    for _ in range(2):
        np.random.seed(7)  # MXNet's NDArrayIter shuffles with NumPy's global generator
        it = mx.io.NDArrayIter(data, label, batch_size=5, shuffle=True)
        epochs = []
        for _ in range(2):
            batches = _epoch(it)
            it.reset()
            labels = np.concatenate([lab for _, _, lab in batches])
            rows = np.concatenate([d for _, d, _ in batches])
            assert sorted(labels.tolist()) == list(range(10))
            np.testing.assert_array_equal(rows, _rows(10)[labels.astype(int)])
            assert batches[0][1].dtype == np.float32
            epochs.append(labels.tolist())
        orders.append(epochs)
    assert orders[0] == orders[1]  # same seed, same orders
    assert orders[0][0] != orders[0][1]  # each reset draws a new order


def test_shuffle_makes_inputs_float32_as_mxnet(ctx):
    data = mx.nd.array(_rows(4), ctx=ctx, dtype="int32")
    plain = mx.io.NDArrayIter(data, batch_size=2)
    shuffled = mx.io.NDArrayIter(data, batch_size=2, shuffle=True)
    assert plain.provide_data[0].dtype == np.int32
    assert plain.next().data[0].dtype == np.int32
    assert shuffled.provide_data[0].dtype == np.float32


def test_numpy_inputs_become_float32_ndarrays():
    it = mx.io.NDArrayIter(np.arange(6).reshape(3, 2), np.arange(3), batch_size=3)
    batch = it.next()
    assert isinstance(batch.data[0], mx.nd.NDArray)
    assert batch.data[0].dtype == np.float32 and batch.label[0].dtype == np.float32
    assert repr(it.provide_data) == "[DataDesc[data,(3, 2),<class 'numpy.float32'>,NCHW]]"


def test_pad_wraps_around_when_the_batch_is_larger_than_the_data(ctx):
    it = mx.io.NDArrayIter(mx.nd.array(_rows(3), ctx=ctx), batch_size=7)
    (batch,) = list(it)
    assert batch.pad == 4
    np.testing.assert_array_equal(batch.data[0].asnumpy(), _rows(3)[[0, 1, 2, 0, 1, 2, 0]])


def test_discard_with_too_few_examples_gives_no_batch(ctx):
    it = mx.io.NDArrayIter(
        mx.nd.array(_rows(3), ctx=ctx), batch_size=4, last_batch_handle="discard"
    )
    assert list(it) == []


def test_roll_over_with_too_few_examples_fills_from_the_next_epoch(ctx):
    it = mx.io.NDArrayIter(
        mx.nd.array(_rows(3), ctx=ctx), batch_size=4, last_batch_handle="roll_over"
    )
    assert list(it) == []  # the three examples wait for the next epoch
    it.reset()
    (batch,) = list(it)
    assert batch.pad == 3
    np.testing.assert_array_equal(batch.data[0].asnumpy(), _rows(3)[[0, 1, 2, 0]])


def test_hard_reset_drops_rolled_over_examples(ctx):
    it = mx.io.NDArrayIter(
        mx.nd.array(_rows(10), ctx=ctx), batch_size=4, last_batch_handle="roll_over"
    )
    assert len(list(it)) == 2
    it.hard_reset()
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0]
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), _rows(10)[:4])


def test_getters_read_the_current_batch_without_consuming_it(ctx):
    it = mx.io.NDArrayIter(mx.nd.array(_rows(5), ctx=ctx), batch_size=2)
    assert it.iter_next() and it.iter_next() and it.iter_next()
    first, second = it.getdata(), it.getdata()
    np.testing.assert_array_equal(first[0].asnumpy(), second[0].asnumpy())
    np.testing.assert_array_equal(first[0].asnumpy(), _rows(5)[[4, 0]])
    assert it.getpad() == 1 and it.getlabel() == [] and it.getindex() is None
    assert not it.iter_next()


def test_list_inputs_are_named_and_sorted_by_name_as_mxnet():
    it = mx.io.NDArrayIter([np.full((4, 1), i) for i in range(12)], batch_size=2)
    names = [desc.name for desc in it.provide_data]
    assert names == sorted(f"_{i}_data" for i in range(12))
    assert names[:3] == ["_0_data", "_10_data", "_11_data"]
    batch = it.next()
    assert batch.data[1].asnumpy()[0, 0] == 10


def test_mismatched_input_lengths_are_refused():
    with pytest.raises(ShapeError, match="same number of examples.*'data'.*'softmax_label'"):
        mx.io.NDArrayIter(np.zeros((4, 2)), np.zeros(5))


def test_unknown_last_batch_handle_lists_the_options():
    with pytest.raises(ValueError, match="'pad', 'discard', 'roll_over'.*'keep'"):
        mx.io.NDArrayIter(np.zeros((4, 2)), last_batch_handle="keep")


def test_unconvertible_input_is_a_type_error():
    with pytest.raises(TypeError, match="input 'data'"):
        mx.io.NDArrayIter({"data": object()})


# -- DataBatch and DataIter ---------------------------------------------------------------
def test_databatch_describes_its_shapes():
    batch = mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1, bucket_key=5)
    assert str(batch) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    assert repr(mx.io.DataBatch([mx.nd.zeros((2, 3))])).endswith("label shapes: None")
    assert batch.pad == 1 and batch.bucket_key == 5 and batch.index is None
    with pytest.raises(TypeError, match="list of NDArrays"):
        mx.io.DataBatch(mx.nd.zeros((2, 3)))


class _Countdown(mx.io.DataIter):
    """A user-style iterator: assigns provide_data, implements iter_next and getdata."""

    def __init__(self, batches):
        super().__init__(batch_size=2)
        self.left = self.batches = batches
        self.provide_data = [mx.io.DataDesc("data", (2,))]
        self.provide_label = []

    def reset(self):
        self.left = self.batches

    def iter_next(self):
        self.left -= 1
        return self.left >= 0

    def getdata(self):
        return [mx.nd.full((2,), self.left)]


def test_user_iterator_gets_next_and_iteration_from_the_base():
    it = _Countdown(3)
    values = [batch.data[0].asnumpy()[0] for batch in it]
    assert values == [2, 1, 0]
    batch = (it.reset(), it.next())[1]
    assert batch.pad == 0 and batch.label is None and batch.index is None
    assert it.provide_data[0].name == "data"


def test_base_iterator_without_descriptions_behaves_as_missing():
    it = mx.io.DataIter()
    assert not hasattr(it, "provide_data")
    with pytest.raises(AttributeError, match="set self.provide_label"):
        _ = it.provide_label
    with pytest.raises(NotImplementedError, match="iter_next"):
        it.next()


# -- ResizeIter -------------------------------------------------------------------------
def test_resize_iter_repeats_and_cuts_epochs(ctx):
    inner = mx.io.NDArrayIter(mx.nd.array(_rows(6), ctx=ctx), batch_size=4)
    it = mx.io.ResizeIter(inner, 5)
    assert [b.pad for b in it] == [0, 2, 0, 2, 0]
    assert it.provide_data == inner.provide_data and it.batch_size == 4
    it.reset()
    assert len(list(it)) == 5
    short = mx.io.ResizeIter(mx.io.NDArrayIter(_rows(16), batch_size=4), 2)
    assert len(list(short)) == 2


def test_resize_iter_without_internal_reset_continues_the_data():
    inner = mx.io.NDArrayIter(_rows(12), batch_size=4)
    it = mx.io.ResizeIter(inner, 2, reset_internal=False)
    first = [b.data[0].asnumpy()[0, 0] for b in it]
    it.reset()
    second = [b.data[0].asnumpy()[0, 0] for b in it]
    assert first == [0, 8] and second == [16, 0]


def test_resize_iter_passes_the_wrapped_batch_through():
    class Keyed(_Countdown):
        def next(self):
            batch = super().next()
            batch.bucket_key = 7
            return batch

    batch = mx.io.ResizeIter(Keyed(3), 1).next()
    assert batch.bucket_key == 7


# -- PrefetchingIter ------------------------------------------------------------------
def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("rebind-prefetch")]


def _wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_prefetching_joins_and_renames_iterators(ctx):
    first = mx.io.NDArrayIter(mx.nd.array(_rows(6), ctx=ctx), np.arange(6), batch_size=4)
    second = mx.io.NDArrayIter(mx.nd.array(_rows(6, 3), ctx=ctx), np.arange(6) + 10, batch_size=4)
    with mx.io.PrefetchingIter(
        [first, second],
        rename_data=[{"data": "a"}, {"data": "b"}],
        rename_label=[{"softmax_label": "la"}, {}],
    ) as it:
        assert [d.name for d in it.provide_data] == ["a", "b"]
        assert [d.name for d in it.provide_label] == ["la", "softmax_label"]
        assert it.batch_size == 4
        for _ in range(2):
            batches = list(it)
            assert [b.pad for b in batches] == [0, 2]
            batch = batches[1]
            np.testing.assert_array_equal(batch.data[0].asnumpy(), _rows(6)[[4, 5, 0, 1]])
            np.testing.assert_array_equal(batch.data[1].asnumpy(), _rows(6, 3)[[4, 5, 0, 1]])
            np.testing.assert_array_equal(batch.label[1].asnumpy(), [14, 15, 10, 11])
            assert batch.data[0].context == ctx
            assert [d.name for d in batch.provide_data] == ["a", "b"]
            with pytest.raises(StopIteration):
                it.next()
            it.reset()


class _Recorder(mx.io.DataIter):
    """Counts next() calls and notes the thread each ran on; ``fail_at`` raises there."""

    def __init__(self, batches=1000, fail_at=None):
        super().__init__(batch_size=1)
        self.calls, self.threads = 0, set()
        self.batches, self.fail_at = batches, fail_at
        self.provide_data = [mx.io.DataDesc("data", (1,))]
        self.provide_label = []

    def reset(self):
        self.calls = 0

    def next(self):
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        if self.calls == self.fail_at:
            raise KeyError("broken record")
        if self.calls > self.batches:
            raise StopIteration
        return mx.io.DataBatch([mx.nd.full((1,), self.calls)], [], pad=0)


def test_prefetching_reads_one_batch_ahead_on_a_background_thread():
    inner = _Recorder()
    it = mx.io.PrefetchingIter(inner)
    try:
        assert _wait_until(lambda: inner.calls == 1)
        time.sleep(0.05)
        assert inner.calls == 1  # bounded: nothing more is read until a batch is taken
        assert it.next().data[0].asnumpy()[0] == 1
        assert _wait_until(lambda: inner.calls == 2)
        assert threading.current_thread().name not in inner.threads
        assert inner.threads == {"rebind-prefetch-0"}
    finally:
        it.close()


def test_prefetching_stops_cleanly_when_the_consumer_stops_early():
    before = len(_prefetch_threads())
    it = mx.io.PrefetchingIter([_Recorder(), _Recorder()])
    for number, _ in enumerate(it):
        if number == 2:
            break
    assert len(_prefetch_threads()) == before + 2
    started = time.monotonic()
    it.close()
    assert time.monotonic() - started < 2
    assert len(_prefetch_threads()) == before
    it.close()  # closing twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        it.next()


def test_prefetching_threads_end_when_the_iterator_is_collected():
    before = len(_prefetch_threads())
    it = mx.io.PrefetchingIter(_Recorder())
    it.next()
    alive = weakref.ref(it)
    del it
    gc.collect()
    assert alive() is None
    assert _wait_until(lambda: len(_prefetch_threads()) == before)


def test_prefetching_left_open_does_not_hold_up_interpreter_exit():
    script = (
        "import numpy as np, rebind as mx\n"
        "it = mx.io.PrefetchingIter(mx.io.NDArrayIter(np.zeros((100, 2)), batch_size=2))\n"
        "for number, _ in enumerate(it):\n"
        "    if number == 1:\n"
        "        break\n"
        "print('left early')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "left early"


def test_prefetching_raises_the_wrapped_iterators_error_in_the_consumer():
    with mx.io.PrefetchingIter(_Recorder(fail_at=2)) as it:
        it.next()
        with pytest.raises(KeyError, match="broken record"):
            it.next()


def test_prefetching_refuses_iterators_of_different_lengths():
    with mx.io.PrefetchingIter([_Recorder(batches=2), _Recorder(batches=3)]) as it:
        it.next()
        it.next()
        with pytest.raises(ValueError, match="different numbers of batches"):
            it.next()


def test_prefetching_reset_restarts_mid_epoch():
    inner = _Recorder(batches=5)
    with mx.io.PrefetchingIter(inner) as it:
        assert [b.data[0].asnumpy()[0] for b in (it.next(), it.next())] == [1, 2]
        it.reset()
        assert [b.data[0].asnumpy()[0] for b in it] == [1, 2, 3, 4, 5]


def test_prefetch_worker_creates_arrays_on_the_consumers_context(ctx):
    class Maker(_Recorder):
        def next(self):
            batch = super().next()
            return mx.io.DataBatch([mx.nd.zeros((1,))], [], pad=0) if batch else batch

    with ctx:
        it = mx.io.PrefetchingIter(Maker())
    with it:
        assert it.next().data[0].context == ctx
