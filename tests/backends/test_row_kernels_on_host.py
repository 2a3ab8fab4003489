"""The per-row kernels (cupy_row_kernels), compiled for the host, against the CPU's results.

The softmax must give the CPU's ``softmax_rows`` values to float rounding (the
C library's ``exp`` and a sum along the row, or over a warp's lanes, stand in
for NumPy's), NaN and infinite scores included, in place or not. Accuracy's count must be the CPU
path's exactly: first maximum on ties, first NaN, float labels truncated; and
``Accuracy`` on GPU outputs (``fusable``) must take the kernel and keep the
same values.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.backends import cupy_row_kernels
from rebind.ops import loss
from rebind.plugins import metrics_classification

from .host_kernels import compiler

pytestmark = [
    pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels"),
    pytest.mark.usefixtures("fresh_kernels"),
]


def _scores(rows, width, seed, dtype=np.float32):
    return (np.random.default_rng(seed).standard_normal((rows, width)) * 3).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# up to MAX_WIDTH a thread a row; wider a warp a row (1000: lanes walk 31 or 32 classes)
@pytest.mark.parametrize("width", [1, 10, cupy_row_kernels.MAX_WIDTH, 65, 100, 1000])
@pytest.mark.parametrize("inplace", [False, True])
def test_softmax_kernel_equals_the_cpu_softmax(host_cupy, dtype, width, inplace):
    x = _scores(33, width, seed=width, dtype=dtype)
    x[3, 0] = np.inf if width > 1 else x[3, 0]
    x[5, -1] = np.nan
    x[7] = -1e30  # equal scores
    with np.errstate(invalid="ignore"):  # inf - inf in the row holding inf
        expected = loss.softmax_rows(np, x, np.empty_like(x))
    given = x.copy()
    out = given if inplace else np.empty_like(x)
    got = cupy_row_kernels.softmax_rows(host_cupy, given, out)
    assert got is out
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
    assert np.isnan(got[5]).all() and np.isnan(expected[5]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("width", [10, 100])
def test_a_bias_is_added_in_the_softmax_kernel_as_before_it(host_cupy, dtype, inplace, width):
    x = _scores(20, width, seed=8, dtype=dtype)
    bias = _scores(1, width, seed=9, dtype=dtype)[0]
    x[4, 2] = np.nan
    expected = cupy_row_kernels.softmax_rows(host_cupy, x + bias, np.empty_like(x))
    given = x.copy()
    out = given if inplace else np.empty_like(x)
    got = cupy_row_kernels.softmax_rows(host_cupy, given, out, bias)
    assert got is out
    np.testing.assert_array_equal(got, expected)  # the same float additions, bit for bit
    assert np.isnan(got[4]).all()


# a thread a row (10), a warp a row (100: lanes hold three or four classes; 1000)
@pytest.mark.parametrize("width", [10, 100, 1000])
def test_correct_rows_count_as_the_cpu_does(host_cupy, width):
    pred = _scores(40, width, seed=1)
    pred[1, 3] = pred[1, 7] = pred[1].max() + 1  # a tie: the first maximum (3) is the class
    pred[2, 4], pred[2, 6] = np.nan, np.nan  # NaN: the first NaN is the argmax
    labels = np.random.default_rng(2).integers(0, 10, 40).astype(np.float32)
    labels[:4] = [9, 7, 4, 2.7]  # 2.7 reads as class 2
    pred[3, 2] = 50
    if width > 64:  # the same cases across lanes: ties and NaNs in lanes 3 and 7, then 35
        pred[4, 35] = pred[4, 3] = pred[4].max() + 1  # lane 3 holds both: class 3
        pred[5, 67] = pred[5, 35] = pred[5].max() + 1  # one lane again: class 35
        pred[6, 40], pred[6, 9] = np.nan, np.nan  # the first NaN, lane 9: class 9
        pred[7, 99] = np.nan  # a NaN beats any number: class 99
        pred[8] = -np.inf  # all equal: class 0
        pred[9, 35] = pred[9, 7] = pred[9].max() + 1  # a tie across lanes 3 and 7: class 7
        labels[4:10] = [3, 35, 9, 99, 0, 7]
    expected = (pred.argmax(axis=1).astype(np.int32) == labels.astype(np.int32)).astype(np.int32)
    assert expected[1:4].tolist() == [0, 1, 1]
    assert width == 10 or expected[4:10].tolist() == [1, 1, 1, 1, 1, 1]
    for label in (labels, labels.astype(np.int64), labels.reshape(40, 1)):
        total, global_total = np.array([5.0]), np.array([7.0])  # running sums go on
        cupy_row_kernels.add_correct_rows(host_cupy, pred, label, total, global_total)
        assert (total[0], global_total[0]) == (5 + expected.sum(), 7 + expected.sum())
    for row in range(40):  # each row's own verdict
        total, global_total = np.zeros(1), np.zeros(1)
        one = labels[row : row + 1]
        cupy_row_kernels.add_correct_rows(host_cupy, pred[row : row + 1], one, total, global_total)
        assert total[0] == global_total[0] == expected[row], row


def test_equal_positions_count_as_int32_as_the_cpu_does(host_cupy):
    rng = np.random.default_rng(6)
    pred = rng.integers(0, 5, (4, 9)).astype(np.int64)  # classes already picked
    label = pred.astype(np.float32).reshape(9, 4).copy()  # another shape, the same size
    label.reshape(-1)[::3] += 1  # a third wrong
    label.reshape(-1)[1] += 0.7  # 2.7 reads as 2
    expected = (pred.reshape(-1).astype(np.int32) == label.reshape(-1).astype(np.int32)).sum()
    assert 0 < expected < pred.size
    total, global_total = np.array([2.0]), np.array([0.0])
    cupy_row_kernels.add_equal(host_cupy, pred, label, total, global_total)
    assert (total[0], global_total[0]) == (2 + expected, expected)


def _through_count_kernel(monkeypatch, host_cupy, launched):
    """Accuracy's GPU branches, their kernels built for the host; ``launched`` notes each."""
    monkeypatch.setattr(metrics_classification, "fusable", lambda *a, **k: True)
    monkeypatch.setattr(metrics_classification, "is_cupy_array", lambda array: True)
    for name in ("add_correct_rows", "add_equal"):
        kernel = getattr(cupy_row_kernels, name)

        def launch(_xp, *args, _kernel=kernel, _name=name):
            launched.append((_name, args[0].shape))
            return _kernel(host_cupy, *args)

        monkeypatch.setattr(metrics_classification.cupy_row_kernels, name, launch)


def test_accuracy_takes_the_kernel_for_device_scores(host_cupy, monkeypatch):
    pred, labels = _scores(50, 7, seed=3), np.random.default_rng(4).integers(0, 7, 50)
    wide = _scores(50, cupy_row_kernels.MAX_WIDTH + 1, seed=5)  # a warp a row
    wider = _scores(50, cupy_row_kernels.MAX_WARP_WIDTH + 1, seed=6)  # the array path
    scores = [mx.nd.array(pred), mx.nd.array(wide), mx.nd.array(wider)]
    cpu = mx.metric.Accuracy()
    cpu.update([mx.nd.array(labels)] * 3, scores)
    launched = []
    _through_count_kernel(monkeypatch, host_cupy, launched)
    gpu = mx.metric.Accuracy()
    gpu.update([mx.nd.array(labels)] * 3, scores)
    # rows of up to MAX_WARP_WIDTH classes in one kernel; wider ones' argmax (NumPy's
    # here), then the comparison in one kernel
    assert launched == [
        ("add_correct_rows", (50, 7)),
        ("add_correct_rows", (50, cupy_row_kernels.MAX_WIDTH + 1)),
        ("add_equal", (50,)),
    ]
    assert gpu.get() == cpu.get() and gpu.get_global() == cpu.get_global()
    assert gpu.num_inst == 150


def test_accuracy_counts_into_running_sums_across_batches_reads_and_resets(host_cupy, monkeypatch):
    """The kernel adds into the device totals in place: batches, a read, reset_local."""
    batches = [
        (_scores(40, 10, seed=10 + k), np.random.default_rng(20 + k).integers(0, 10, 40))
        for k in range(4)
    ]
    launched = []
    cpu, gpu = mx.metric.Accuracy(), mx.metric.Accuracy()
    for metric, through_kernel in ((cpu, False), (gpu, True)):
        with monkeypatch.context() as patch:
            if through_kernel:
                _through_count_kernel(patch, host_cupy, launched)
            seen = []
            for k, (pred, labels) in enumerate(batches):
                metric.update([mx.nd.array(labels)], [mx.nd.array(pred)])
                if k == 1:
                    seen.append(metric.get())  # read mid-way: the sums come to the host
                if k == 2:
                    metric.reset_local()
            seen += [metric.get(), metric.get_global(), metric.sum_metric]
        metric.seen = seen
    assert [name for name, _ in launched] == ["add_correct_rows"] * 4
    assert gpu.seen == cpu.seen
    # what the sums hold: every correct row once globally, the last batch's locally
    correct = [int((p.argmax(1) == lab).sum()) for p, lab in batches]
    assert gpu.global_sum_metric == sum(correct) and gpu.sum_metric == correct[3]
    assert isinstance(gpu.sum_metric, float)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, width", [(1, 5), (128, 10), (37, 1), (300, 70)])
def test_column_sums_add_the_rows_in_numpys_order(host_cupy, dtype, rows, width):
    grad = _scores(rows, width, seed=rows + width, dtype=dtype)
    got = cupy_row_kernels.column_sums(host_cupy, grad)
    assert got.shape == (width,) and got.dtype == dtype
    expected = grad[0].copy()
    for row in grad[1:]:  # the rows one after another, as NumPy's axis-0 sum of wide rows
        expected += row
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(got, grad.sum(axis=0), rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_fully_connected_bias_gradient_takes_the_column_kernel_on_a_gpu(host_cupy, monkeypatch):
    from rebind.ops import nn

    grad = _scores(64, 12, seed=9)
    monkeypatch.setattr(nn, "fusable", lambda *a, **k: True)  # as for CuPy arrays
    np.testing.assert_array_equal(nn.bias_gradient(host_cupy, grad), grad.sum(axis=0))
    monkeypatch.setattr(cupy_row_kernels, "MAX_COLUMN_ROWS", 63)  # a longer walk: CuPy's sum
    monkeypatch.setattr(
        cupy_row_kernels, "column_sums", lambda *a: pytest.fail("the kernel was taken")
    )
    np.testing.assert_array_equal(nn.bias_gradient(host_cupy, grad), grad.sum(axis=0))
