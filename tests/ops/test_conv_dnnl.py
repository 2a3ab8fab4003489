"""Convolution on oneDNN's kernels (ops/conv_dnnl.py) against the NumPy kernels and MXNet.

oneDNN comes from the ``onednn`` extra (in the ``test`` extra); where it
cannot load these tests skip with the loader's reason, and the tests at the
end check what runs without it.
"""

import threading

import numpy as np
import pytest

from rebind.ops import conv_dnnl, conv_ort, dnnl_lib, dnnl_plan
from tests.ops.conv_kernels import (
    CPU,
    LAYOUTS,
    SHAPES,
    check_only_the_asked_gradients,
    check_other_dtypes_run_numpy,
    needs_onednn,
    recording,
    run_conv,
)
from tests.ops.harness import assert_close, case_ids, replay_golden


@pytest.fixture
def dnnl_calls(monkeypatch):
    """The names of the conv_dnnl kernels called during the test."""
    return recording(monkeypatch, conv_dnnl, ("forward", "backward"))


def _hide_onednn(monkeypatch):
    monkeypatch.setattr(dnnl_lib, "_loaded", lambda: (None, "hidden by the test"))
    conv_ort.warn_missing.cache_clear()


@needs_onednn
@pytest.mark.parametrize("case_id", case_ids("Convolution"))
def test_golden_on_onednn(case_id, kernels, dnnl_calls):
    """Every Convolution case recorded from MXNet 1.9.1, float32 ones on oneDNN's kernels."""
    kernels("onednn")
    replay_golden(case_id, CPU)
    if "kernels" in case_id:  # cases/conv_kernels.py: float32 layers
        assert dnnl_calls[0] == "forward"


@needs_onednn
@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize(("shape", "filters", "attrs"), SHAPES)
def test_matches_numpy_kernels(shape, filters, attrs, no_bias, kernels, dnnl_calls):
    kernels("numpy")
    expected = run_conv(shape, filters, attrs, no_bias)
    assert dnnl_calls == []
    kernels("onednn")
    for layout in LAYOUTS:
        actual = run_conv(shape, filters, attrs, no_bias, layout)
        for name, a, e in zip(("output", "data", "weight", "bias"), actual, expected, strict=False):
            assert a.dtype == np.float32, name
            assert_close(a, e, f"{name} (input {layout})")
    assert dnnl_calls == ["forward", "backward"] * len(LAYOUTS)


@needs_onednn
def test_activations_are_channels_last_views(kernels):
    """The output and the data gradient have MXNet's shapes, channels innermost in memory."""
    kernels("onednn")
    shape, filters, attrs = SHAPES[0]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    w = np.ones((filters, shape[1], 3, 3), np.float32)
    window = conv_dnnl_window(shape, filters, attrs)
    out, kept = conv_dnnl.forward(x, w, None, window, 1)
    assert out.shape == (2, 4, 5, 5) and dnnl_plan.is_channels_last(out)
    assert dnnl_plan.is_channels_last(kept) and np.array_equal(kept, x)  # the copy backward reads
    again, same = conv_dnnl.forward(kept, w, None, window, 1)
    assert same is kept and np.array_equal(again, out)  # read where it lies: no copy
    grads = conv_dnnl.backward(np.ones_like(out), kept, w, window, 1, [True, True, False])
    assert dnnl_plan.is_channels_last(grads[0]) and grads[0].shape == shape
    assert grads[2] is None


def conv_dnnl_window(shape, filters, attrs):
    from rebind.ops.conv import _conv_window
    from tests.ops.harness import opdef

    params = opdef("Convolution").parse({**attrs, "num_filter": filters})
    return _conv_window(params, shape[2:])


@needs_onednn
@pytest.mark.parametrize("need", [[True, False, False], [False, True, False], [False, False, True]])
def test_only_the_asked_gradients(need, kernels):
    check_only_the_asked_gradients(kernels, "onednn", need)


@needs_onednn
def test_auto_prefers_onednn(kernels, dnnl_calls, monkeypatch):
    monkeypatch.setattr(conv_ort, "_session", _not_called)
    kernels("auto")
    run_conv(*SHAPES[0], False)
    assert dnnl_calls == ["forward", "backward"]


@pytest.mark.filterwarnings("ignore:REBIND_CONV_KERNELS=torch, but torch is not installed")
@pytest.mark.parametrize("setting", ["numpy", "onnxruntime", "torch"])
def test_other_settings_never_call_onednn(setting, kernels, dnnl_calls):
    kernels(setting)
    run_conv(*SHAPES[0], False, need=[True, True, True])
    assert dnnl_calls == []


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_other_dtypes_run_the_numpy_kernels(dtype, kernels, dnnl_calls):
    check_other_dtypes_run_numpy(kernels, "onednn", dtype, dnnl_calls)


def _not_called(*args):
    raise AssertionError("another kernel library was asked to run the convolution")


def test_without_onednn_auto_and_onednn_run_other_kernels(kernels, monkeypatch, dnnl_calls):
    shape, filters, attrs = SHAPES[0]
    kernels("numpy")
    expected = run_conv(shape, filters, attrs, False)
    _hide_onednn(monkeypatch)
    kernels("auto")
    auto = run_conv(shape, filters, attrs, False)
    kernels("onednn")
    with pytest.warns(RuntimeWarning, match="oneDNN did not load.*hidden by the test"):
        forced = run_conv(shape, filters, attrs, False)
    conv_ort.warn_missing.cache_clear()
    assert dnnl_calls == []
    for run in (auto, forced):
        for a, e in zip(run, expected, strict=True):
            np.testing.assert_array_equal(a, e)


@needs_onednn
def test_threads_keep_their_own_primitives(kernels):
    """Cpu contexts side by side call from their own threads: plans and streams are per thread."""
    kernels("onednn")
    shape, filters, attrs = SHAPES[2]
    expected = run_conv(shape, filters, attrs, False, "channels_last")
    results, errors = [None] * 4, []

    def work(i):
        try:
            for _ in range(3):
                results[i] = run_conv(shape, filters, attrs, False, "channels_last")
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for result in results:
        for a, e in zip(result, expected, strict=True):
            np.testing.assert_array_equal(a, e)


@needs_onednn
def test_old_plans_are_released(kernels, monkeypatch):
    kernels("onednn")
    monkeypatch.setattr(conv_dnnl, "_PLANS", 2)
    lib = dnnl_lib.library()
    released = []
    close = dnnl_plan.Plan.close
    monkeypatch.setattr(dnnl_plan.Plan, "close", lambda plan: released.append(plan) or close(plan))
    before = len(lib.thread_cache().get("conv", {}))
    for batch in (5, 6, 7, 8):  # four new shapes
        run_conv((batch, 3, 9, 9), 4, SHAPES[0][2], False)
    assert len(lib.thread_cache()["conv"]) == 2
    assert len(released) == max(0, before + 4 - 2)
    assert all(plan.handles == [] for plan in released)


def test_missing_library_names_the_path(monkeypatch, tmp_path):
    missing = tmp_path / "libdnnl.so.3"
    monkeypatch.setenv(dnnl_lib.LIBRARY_VARIABLE, str(missing))
    library, reason = dnnl_lib._load()
    assert library is None
    assert str(missing) in reason and "rebind[onednn]" in reason


def test_a_file_that_is_not_the_library_is_refused(monkeypatch, tmp_path):
    fake = tmp_path / "libdnnl.so.3"
    fake.write_bytes(b"not a shared object")
    monkeypatch.setenv(dnnl_lib.LIBRARY_VARIABLE, str(fake))
    library, reason = dnnl_lib._load()
    assert library is None and str(fake) in reason and "did not load" in reason


@needs_onednn
def test_a_forked_child_runs_the_numpy_kernels(kernels):
    """GNU OpenMP's threads do not survive a fork: the child must not enter oneDNN."""
    import os

    kernels("onednn")
    run_conv(*SHAPES[0], False)  # the parent's OpenMP team exists now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it sees, then leave without pytest's teardown
        try:
            ok = dnnl_lib.library() is None and "forked" in dnnl_lib.missing_reason()
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"
    assert dnnl_lib.library() is not None  # the parent keeps it


@needs_onednn
def test_each_call_sizes_the_openmp_team_again(kernels, monkeypatch):
    """The thread policy resizes OpenMP to the load between calls; oneDNN's kernels read it."""
    kernels("onednn")
    lib = dnnl_lib.library()
    monkeypatch.setattr(dnnl_plan, "engine_share", lambda: 3)
    seen = []
    execute = lib.execute
    monkeypatch.setattr(lib, "execute", lambda *a: seen.append(lib._omp_get()) or execute(*a))
    run_conv(*SHAPES[0], False)
    lib._omp_set(1)  # as threadpool's policy does on a busy machine
    run_conv(*SHAPES[0], False)
    assert seen and set(seen) == {3}
