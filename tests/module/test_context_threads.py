"""Two cpu contexts run side by side (``module/context_threads.py``): MXNet's values, bit for bit.

The executors of ``[cpu(0), cpu(1)]`` run in two threads; each has its own
arrays and random stream, so a fit gives exactly what running them in turn
(``REBIND_CONTEXT_THREADS=0``) gives, BatchNorm keeps per-context statistics
(each context's own half of the batch), and the summed gradients train as one
context does, up to float rounding.
"""

import threading

import numpy as np
import pytest

import rebind as mx
from rebind import side_by_side
from rebind.executor.executor import _SINGLE

from .core_nets import separable

TWO = [mx.cpu(0), mx.cpu(1)]
BATCH, DIM, HIDDEN, CLASSES = 16, 6, 8, 3


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("REBIND_PROGRESS", "0")


def _net(dropout=0.5, batchnorm=True):
    h = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc1", num_hidden=HIDDEN)
    if batchnorm:
        h = mx.sym.BatchNorm(h, name="bn", fix_gamma=False, momentum=0.9)
    h = mx.sym.Activation(h, name="relu1", act_type="relu")
    if dropout:
        h = mx.sym.Dropout(h, name="drop1", p=dropout)
    h = mx.sym.FullyConnected(h, name="fc2", num_hidden=CLASSES)
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _params():
    rs = np.random.RandomState(7)
    return {
        "fc1_weight": mx.nd.array(rs.randn(HIDDEN, DIM) * 0.5),
        "fc1_bias": mx.nd.array(rs.randn(HIDDEN) * 0.1),
        "bn_gamma": mx.nd.array(1 + 0.1 * rs.randn(HIDDEN)),
        "bn_beta": mx.nd.array(0.1 * rs.randn(HIDDEN)),
        "fc2_weight": mx.nd.array(rs.randn(CLASSES, HIDDEN) * 0.5),
        "fc2_bias": mx.nd.array(rs.randn(CLASSES) * 0.1),
    }


def _fit(context, monkeypatch, threads=True, net=None, epochs=2):
    monkeypatch.setenv("REBIND_CONTEXT_THREADS", "1" if threads else "0")
    mx.random.seed(11)
    x, y = separable(4 * BATCH, dim=DIM, classes=CLASSES, seed=2)
    module = mx.mod.Module(_net() if net is None else net, context=context)
    metric = mx.metric.Accuracy()
    module.fit(
        mx.io.NDArrayIter(x, y, batch_size=BATCH),
        eval_metric=metric,
        kvstore="local",
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3},
        arg_params=_params(),
        num_epoch=epochs,
    )
    return module, metric.get()[1]


def _per_context(module):
    group = module._exec_group
    blocks = group.param_arrays + group.aux_arrays + [[e.outputs[0] for e in group.execs]]
    return [[array.asnumpy() for array in block] for block in blocks]


def test_side_by_side_gives_the_values_of_taking_turns(monkeypatch):
    turns, turns_acc = _fit(TWO, monkeypatch, threads=False)
    side, side_acc = _fit(TWO, monkeypatch, threads=True)
    again, _ = _fit(TWO, monkeypatch, threads=True)
    assert side._exec_group._runner.side_by_side
    assert not turns._exec_group._runner.side_by_side
    assert side_acc == turns_acc
    blocks = zip(_per_context(turns), _per_context(side), _per_context(again), strict=True)
    for expected, got, repeat in blocks:
        for a, b, c in zip(expected, got, repeat, strict=True):
            np.testing.assert_array_equal(b, a)  # bit for bit
            np.testing.assert_array_equal(c, a)  # and the same every run


def test_two_contexts_train_as_one_up_to_rounding(monkeypatch):
    net = _net(dropout=None, batchnorm=False)  # per-context BatchNorm differs by design
    one, _ = _fit(mx.cpu(0), monkeypatch, net=net)
    two, _ = _fit(TWO, monkeypatch, net=net)
    one_params, two_params = one.get_params()[0], two.get_params()[0]
    for name, value in one_params.items():
        np.testing.assert_allclose(
            two_params[name].asnumpy(), value.asnumpy(), rtol=1e-5, atol=1e-6, err_msg=name
        )
    # every context holds the same weights after each update
    for block in two._exec_group.param_arrays:
        np.testing.assert_array_equal(block[0].asnumpy(), block[1].asnumpy())


def test_batchnorm_statistics_are_each_contexts_own(monkeypatch):
    monkeypatch.setenv("REBIND_CONTEXT_THREADS", "1")
    module = mx.mod.Module(_net(dropout=None), context=TWO)
    module.bind([("data", (BATCH, DIM))], [("softmax_label", (BATCH,))])
    params = _params()
    module.init_params(arg_params=params)
    x, y = separable(BATCH, dim=DIM, classes=CLASSES, seed=4)
    module.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    group = module._exec_group
    w, b = params["fc1_weight"].asnumpy(), params["fc1_bias"].asnumpy()
    names = group.aux_names
    for index, part in enumerate(group.slices):
        h = x[part].astype(np.float64) @ w.T + b  # this context's half, by definition
        mean, var = h.mean(axis=0), h.var(axis=0)
        # moving = momentum * moving + (1 - momentum) * batch statistic (from 0 and 1)
        moving_mean = group.aux_arrays[names.index("bn_moving_mean")][index].asnumpy()
        moving_var = group.aux_arrays[names.index("bn_moving_var")][index].asnumpy()
        np.testing.assert_allclose(moving_mean, 0.1 * mean, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(moving_var, 0.9 + 0.1 * var, rtol=1e-4, atol=1e-6)
    averaged = module.get_params()[1]["bn_moving_mean"].asnumpy()
    halves = group.aux_arrays[names.index("bn_moving_mean")]
    np.testing.assert_allclose(averaged, (halves[0].asnumpy() + halves[1].asnumpy()) / 2)


def _record(executor, method, seen):
    original = getattr(executor, method)

    def recorded(*args, **kwargs):
        seen.append((method, threading.get_ident(), _SINGLE.active))
        return original(*args, **kwargs)

    setattr(executor, method, recorded)


def _bound_two(monkeypatch, threads):
    monkeypatch.setenv("REBIND_CONTEXT_THREADS", "1" if threads else "0")
    module = mx.mod.Module(_net(), context=TWO)
    module.bind([("data", (BATCH, DIM))], [("softmax_label", (BATCH,))])
    module.init_params(arg_params=_params())
    module.init_optimizer(kvstore="local")
    return module


@pytest.mark.filterwarnings("ignore:Module.init_params")
@pytest.mark.parametrize("threads", [True, False])
@pytest.mark.usefixtures("helpers_run_their_calls")
def test_each_context_runs_in_its_own_thread_with_fits_flags(monkeypatch, threads):
    module = _bound_two(monkeypatch, threads)
    seen = []
    for executor in module._exec_group.execs:
        _record(executor, "forward", seen)
        _record(executor, "backward", seen)
    x, y = separable(2 * BATCH, dim=DIM, classes=CLASSES, seed=2)
    module.fit(mx.io.NDArrayIter(x, y, batch_size=BATCH), num_epoch=1)
    assert len(seen) == 8  # two batches, two contexts, forward and backward
    idents = {ident for _, ident, _ in seen}
    assert len(idents) == (2 if threads else 1)
    assert threading.get_ident() in idents  # the first context stays in the calling thread
    # fit's one-backward-per-forward flag reaches the helper thread too
    assert all(single for method, _, single in seen if method == "backward")


def test_a_monitor_keeps_the_contexts_in_the_calling_thread(monkeypatch):
    module = _bound_two(monkeypatch, threads=True)
    module.install_monitor(mx.mon.Monitor(1, pattern="fc1.*"))
    seen = []
    for executor in module._exec_group.execs:
        _record(executor, "forward", seen)
    x, y = separable(BATCH, dim=DIM, classes=CLASSES, seed=2)
    module.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
    assert {ident for _, ident, _ in seen} == {threading.get_ident()}


def test_an_error_in_the_second_context_reaches_the_caller(monkeypatch):
    module = _bound_two(monkeypatch, threads=True)
    second = module._exec_group.execs[1]

    def broken(*args, **kwargs):
        raise FloatingPointError("context 1 failed")

    second.forward = broken
    x, y = separable(BATCH, dim=DIM, classes=CLASSES, seed=2)
    with pytest.raises(FloatingPointError, match="context 1 failed"):
        module.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)


class _Scale(mx.operator.CustomOp):
    """Twice its input; records the thread of each forward (the user's Python)."""

    threads = []

    def forward(self, is_train, req, in_data, out_data, aux):
        _Scale.threads.append(threading.get_ident())
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register("context_threads_scale")
class _ScaleProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        return in_shape, in_shape, []

    def create_operator(self, ctx, shapes, dtypes):
        return _Scale()


def test_a_custom_operator_keeps_the_contexts_in_the_calling_thread(monkeypatch):
    monkeypatch.setenv("REBIND_CONTEXT_THREADS", "1")
    scaled = mx.sym.Custom(mx.sym.Variable("data"), op_type="context_threads_scale")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(scaled, num_hidden=CLASSES), name="softmax")
    module = mx.mod.Module(net, context=TWO)
    module.bind([("data", (BATCH, DIM))], [("softmax_label", (BATCH,))])
    module.init_params()
    assert not module._exec_group._runner.side_by_side
    _Scale.threads.clear()
    x, y = separable(BATCH, dim=DIM, classes=CLASSES, seed=2)
    module.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
    assert _Scale.threads == [threading.get_ident()] * 2


def _counted_runs(monkeypatch):
    """A list that gets one entry per group of calls handed to side-by-side threads."""
    runs, original = [], side_by_side.run

    def counted(calls):
        runs.append(1)
        return original(calls)

    monkeypatch.setattr(side_by_side, "run", counted)
    return runs


@pytest.mark.filterwarnings("ignore:Module.init_params")
@pytest.mark.usefixtures("helpers_run_their_calls")
def test_forward_backward_runs_each_contexts_two_passes_in_one_hand_over(monkeypatch):
    module = _bound_two(monkeypatch, threads=True)
    seen = []
    for executor in module._exec_group.execs:
        _record(executor, "forward", seen)
        _record(executor, "backward", seen)
    runs = _counted_runs(monkeypatch)
    x, y = separable(BATCH, dim=DIM, classes=CLASSES, seed=2)
    module.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    assert len(runs) == 1  # forward and backward of both contexts: one hand-over
    caller = threading.get_ident()
    # each context's forward comes before its backward, in one thread
    firsts = [(m, i) for m, i, _ in seen if i == caller]
    others = [(m, i) for m, i, _ in seen if i != caller]
    assert [m for m, _ in firsts] == ["forward", "backward"]
    assert [m for m, _ in others] == ["forward", "backward"]
    runs.clear()
    module.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
    module.backward()
    assert len(runs) == 2  # the two calls on their own: one hand-over each


def _step(module, batch, fused):
    """``forward_backward`` (one pass), or ``forward`` then ``backward`` (two calls)."""
    if fused:
        module.forward_backward(batch)
    else:
        module.forward(batch, is_train=True)
        module.backward()


@pytest.mark.filterwarnings("ignore:Module.init_params")
def test_forward_backward_in_one_pass_gives_the_values_of_the_two_calls(monkeypatch):
    x, y = separable(BATCH, dim=DIM, classes=CLASSES, seed=2)
    results = []
    for fused in (True, False):
        mx.random.seed(3)  # the same dropout masks in both runs
        module = _bound_two(monkeypatch, threads=True)
        _step(module, mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), fused)
        group = module._exec_group
        blocks = group.grad_arrays + [[e.outputs[0] for e in group.execs]]
        results.append([[a.asnumpy() for a in block] for block in blocks])
    for fused, plain in zip(*results, strict=True):
        for a, b in zip(fused, plain, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore:Module.init_params")
def test_a_forward_held_for_backward_still_runs_when_backward_raises(monkeypatch):
    x, _ = separable(BATCH, dim=DIM, classes=CLASSES, seed=2)
    outputs = []
    for fused in (True, False):
        mx.random.seed(5)  # the same dropout masks in both runs
        module = _bound_two(monkeypatch, threads=True)
        batch = mx.io.DataBatch([mx.nd.array(x)], [])  # no labels: backward refuses
        with pytest.raises(Exception, match="label"):
            _step(module, batch, fused)
        group = module._exec_group
        assert not group._runner._holding and group._runner._held is None
        outputs.append([e.outputs[0].asnumpy() for e in group.execs])
    for fused, plain in zip(*outputs, strict=True):
        np.testing.assert_array_equal(fused, plain)  # the held forward ran
        assert np.isfinite(fused).all() and fused.any()


class _OwnForward(mx.mod.Module):
    """A subclass whose forward reads the outputs before backward runs."""

    def forward(self, data_batch, is_train=None):
        super().forward(data_batch, is_train)
        self.read = [o.asnumpy() for o in self.get_outputs(merge_multi_context=False)[0]]


@pytest.mark.filterwarnings("ignore:Module.init_params")
def test_a_subclass_with_its_own_forward_gets_forward_then_backward(monkeypatch):
    monkeypatch.setenv("REBIND_CONTEXT_THREADS", "1")
    module = _OwnForward(_net(dropout=None), context=TWO)
    module.bind([("data", (BATCH, DIM))], [("softmax_label", (BATCH,))])
    module.init_params(arg_params=_params())
    runs = _counted_runs(monkeypatch)
    x, y = separable(BATCH, dim=DIM, classes=CLASSES, seed=2)
    module.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    assert len(runs) == 2
    for read, executor in zip(module.read, module._exec_group.execs, strict=True):
        np.testing.assert_array_equal(read, executor.outputs[0].asnumpy())
