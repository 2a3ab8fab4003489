"""The CNN kernels' passes split over threads (ops/parallel.py) and their kept scratch arrays
(ops/workspace.py): same results as whole, on every part of the data."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from rebind.ops import parallel, workspace
from tests.ops import test_conv, test_norm, test_pooling
from tests.ops.harness import case_ids, check_numeric_gradient, replay_golden


@pytest.fixture
def split_everything(monkeypatch):
    """Split every pass, however small, in up to three parts."""
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(parallel, "compute_threads", lambda: 3)


def test_split_covers_the_range_in_order_on_several_threads(split_everything):
    seen = []

    def task(start, stop):
        seen.append((start, stop, threading.get_ident()))
        return list(range(start, stop))

    results = parallel.split(task, 10, 1000)
    assert [x for part in results for x in part] == list(range(10))
    assert sorted((start, stop) for start, stop, _ in seen) == [(0, 3), (3, 6), (6, 10)]
    threads = {ident for *_, ident in seen}
    assert len(threads) > 1 and threading.get_ident() in threads  # the caller runs a part


def test_small_work_runs_whole_on_the_calling_thread():
    calls = []
    parallel.split(lambda a, b: calls.append((a, b, threading.get_ident())), 8, 100)
    assert calls == [(0, 8, threading.get_ident())]
    assert parallel.parts(1, 10**9) == 1


def test_split_passes_on_a_part_failure(split_everything):
    def task(start, stop):
        if start:
            raise ValueError(f"part {start}")
        return start

    with pytest.raises(ValueError, match="part"):
        parallel.split(task, 9, 1000)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_splits_on_its_own_threads(split_everything, monkeypatch):
    monkeypatch.setattr(parallel, "compute_threads", lambda: 2)  # one worker
    parallel.release()
    parallel.split(lambda a, b: None, 6, 1000)  # the parent's pool exists
    time.sleep(0.2)  # and its threads wait, idle, for the next split
    pid = os.fork()
    if pid == 0:  # the child: a split must finish (the inherited pool has no threads)
        ok = False
        try:
            ok = parallel.split(lambda a, b: b - a, 6, 1000) == [3, 3]
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's split did not finish within 10 s")


def test_copy_keeps_values_and_memory_order(split_everything):
    source = np.arange(2 * 5 * 6, dtype=np.float32).reshape(2, 5, 6).transpose(1, 2, 0)[:, 1:]
    copy = parallel.copy(source, 0)
    np.testing.assert_array_equal(copy, source)
    assert copy.strides[-1] > copy.strides[0]  # the source's axis order in memory


# -- the kernels, split everywhere: MXNet's recorded values and the references -------


@pytest.mark.parametrize("case_id", case_ids("Convolution", "Pooling", "BatchNorm"))
def test_golden_cases_split_over_threads(case_id, ctx, split_everything):
    replay_golden(case_id, ctx)


@pytest.mark.parametrize("x_shape, w_shape, opts", test_conv.CONV_VARIANTS)
def test_convolution_split_matches_direct_reference(x_shape, w_shape, opts, ctx, split_everything):
    test_conv.test_convolution_matches_direct_reference(x_shape, w_shape, opts, ctx)


def test_convolution_split_numeric_gradient(ctx, split_everything):
    x_shape, w_shape, opts = test_conv.CONV_VARIANTS[2]
    test_conv.test_convolution_numeric_gradient(x_shape, w_shape, opts, ctx)


def test_batchnorm_split_numeric_gradient(ctx, split_everything):
    rng = np.random.default_rng(21)
    inputs, aux = test_norm._bn_inputs(rng, (3, 4, 2, 3))
    check_numeric_gradient("BatchNorm", {"fix_gamma": "False"}, inputs, ctx, aux=aux)


def test_max_pooling_split_sends_gradient_to_the_first_maximum(ctx, split_everything):
    data = np.zeros((2, 3, 3, 3), dtype=np.float32)  # every window a tie
    _, grad = test_pooling._forward_backward(
        ctx, {"kernel": "(2, 2)", "stride": "(1, 1)", "pool_type": "max"}, data
    )
    expected = np.zeros_like(data)
    expected[:, :, :2, :2] = 1  # each window's first element is its top-left one
    np.testing.assert_array_equal(grad, expected)


# -- kept scratch arrays -----------------------------------------------------------


@pytest.fixture
def small_workspace(monkeypatch):
    monkeypatch.setattr(workspace, "MIN_BYTES", 1)
    workspace.release()
    yield
    workspace.release()


def test_a_free_array_is_handed_out_again(small_workspace):
    first = workspace.take((3, 4), np.float32)
    address = first.ctypes.data
    del first
    again = workspace.take((3, 4), np.float32)
    assert again.ctypes.data == address and again.shape == (3, 4)


def test_an_array_in_use_is_never_handed_out(small_workspace):
    first = workspace.take((3, 4), np.float32)
    view = first.reshape(12)[2:]  # a view keeps it in use
    del first
    second = workspace.take((3, 4), np.float32)
    assert not np.shares_memory(second, view)
    other = workspace.take((4, 3), np.float32)  # another shape: never the same array
    assert not np.shares_memory(other, second)


def test_small_arrays_and_a_full_workspace_are_not_kept(monkeypatch):
    workspace.release()
    workspace.take((2, 2), np.float32)  # under MIN_BYTES
    assert workspace._held[0] == 0
    monkeypatch.setattr(workspace, "MIN_BYTES", 1)
    monkeypatch.setattr(workspace, "KEEP_BYTES", 8)
    workspace.take((4,), np.float32)  # 16 bytes: over the limit
    assert workspace._held[0] == 0
    workspace.take((2,), np.float32)
    assert workspace._held[0] == 8
    workspace.release()


def test_training_steps_reusing_scratch_arrays_give_the_same_gradients(small_workspace, ctx):
    """Forward/backward rounds on reused scratch arrays give the direct reference's values."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 3))
    attrs = {"kernel": "(3, 3)", "num_filter": "4", "pad": "(1, 1)", "no_bias": "True"}
    rounds = []
    for _ in range(3):
        out, saved, params = test_conv._run(ctx, "Convolution", attrs, [x, w])
        head = ctx.backend.asarray(np.ones_like(out), out.dtype, ctx.device_id)
        op = test_conv.opdef("Convolution")
        grads = op.backward(
            test_conv.OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [1, 1]
        )
        rounds.append([out] + [np.asarray(ctx.backend.to_host(g)) for g in grads])
    geometry = ((1, 1), (1, 1), (1, 1), 1)
    reference = [test_conv._reference_conv(x, w, None, *geometry)]
    # the loss is the sum of the outputs, linear in x and in w: its gradient, one unit
    # vector at a time, through the direct reference
    for which, shape in ((0, x.shape), (1, w.shape)):
        grad = np.zeros(shape)
        for index in np.ndindex(*shape):
            unit = np.zeros(shape)
            unit[index] = 1
            pair = (unit, w) if which == 0 else (x, unit)
            grad[index] = test_conv._reference_conv(*pair, None, *geometry).sum()
        reference.append(grad)
    for values in rounds:
        for got, want in zip(values, reference, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
