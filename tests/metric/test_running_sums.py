"""A metric's sums take GPU numbers without reading them until the metric is read.

A stand-in for a 0-d CuPy array (a NumPy value behind CuPy's module name)
counts how often the host reads it: per batch a GPU count or loss must be
added on the device, and read once when the value is asked for, with the
same sums the host would have made.
"""

import numpy as np

import rebind as mx
from rebind.metric import EvalMetric


class FakeDeviceScalar:
    """What the sums use of a 0-d CuPy array: dtype, astype, +, item (counted)."""

    reads = 0

    def __init__(self, value, dtype=None):
        self.value = np.asarray(value, dtype=dtype)
        self.ndim, self.dtype = 0, self.value.dtype

    def astype(self, dtype, copy=True):
        return FakeDeviceScalar(self.value.astype(dtype))

    def __add__(self, other):
        other = other.value if isinstance(other, FakeDeviceScalar) else other
        return FakeDeviceScalar(self.value + other)

    __radd__ = __add__

    def item(self):
        FakeDeviceScalar.reads += 1
        return self.value.item()


FakeDeviceScalar.__module__ = "cupy._core.fake"  # what is_cupy_array looks at


class Summing(EvalMetric):
    def __init__(self):
        super().__init__("summing", has_global_stats=True)

    def update(self, labels, preds):
        for value in preds:
            self._add_sums(value)
            self.num_inst += 1
            self.global_num_inst += 1


def _values(count=20):
    rng = np.random.default_rng(0)
    return [np.float32(v) for v in rng.standard_normal(count) * 1e3]


def test_device_numbers_are_read_once_when_the_metric_is():
    FakeDeviceScalar.reads = 0
    metric = Summing()
    values = _values()
    for value in values:
        metric.update(None, [FakeDeviceScalar(value)])
    assert FakeDeviceScalar.reads == 0  # no wait for the device while training
    expected = 0.0
    for value in values:  # what the host makes of them: float() of each, in order
        expected += float(value)
    name, got = metric.get()
    assert got == expected / len(values)  # exactly: the same float64 additions
    assert metric.get_global()[1] == got
    assert FakeDeviceScalar.reads == 2  # the local and the global sum, once each
    metric.get()
    assert FakeDeviceScalar.reads == 2


def test_integer_counts_stay_integers_until_read():
    FakeDeviceScalar.reads = 0
    metric = Summing()
    metric.sum_metric = 0  # an int start, as a user's metric may have
    for count in (3, 5, 7):
        metric._add_sums(FakeDeviceScalar(count, np.int64))
    assert metric.sum_metric == 15 and isinstance(metric.sum_metric, int)


def test_a_reset_drops_device_numbers_unread_and_host_numbers_continue():
    FakeDeviceScalar.reads = 0
    metric = Summing()
    metric._add_sums(FakeDeviceScalar(2.5, np.float32))
    metric.reset_local()
    assert FakeDeviceScalar.reads == 0
    assert metric.sum_metric == 0.0
    metric._add_sums(1.25)  # a host number after device ones: the total is read once
    assert metric.global_sum_metric == 3.75
    assert FakeDeviceScalar.reads == 1


def test_accuracy_on_the_cpu_adds_plain_integers():
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]])])
    assert metric.sum_metric == 2 and metric.num_inst == 3
    assert metric.get() == ("accuracy", 2 / 3)


def test_batch_value_is_a_float_on_the_host_and_stays_on_the_device():
    from rebind.metric import batch_value

    host = batch_value(np.float32(1.1))
    assert type(host) is float and host == float(np.float32(1.1))
    FakeDeviceScalar.reads = 0
    device = batch_value(FakeDeviceScalar(1.1, np.float32))
    assert isinstance(device, FakeDeviceScalar) and device.dtype == np.float64
    assert device.value == np.float64(np.float32(1.1))  # widened as float() widens
    assert FakeDeviceScalar.reads == 0
