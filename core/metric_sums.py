"""A metric's running sums that may continue on a GPU: read from the device only when asked.

Accuracy, Perplexity, CrossEntropy, NegativeLogLikelihood and Loss compute one
number per batch where the outputs are. On the CPU it is added to the sum at
once. On a GPU, turning it into a Python number would make the host wait for
the device at every batch, so the next batch's work could not be queued while
this one runs. ``EvalMetric.sum_metric`` and ``global_sum_metric`` are
therefore ``RunningSum`` attributes: a device number added with
``EvalMetric._add_sums`` extends a running total kept on the device (64-bit,
continuing from the host value, so the additions are those the host would
make, in its order), and the total is brought back when the attribute is read
(``get``, a Speedometer's report, a user's code). Setting the attribute
replaces the value, as before.
"""

from rebind.backends.cupy_kernels import is_cupy_array

__all__ = ["RunningSum", "add_to_sum", "batch_value", "device_total"]


class _OnDevice:
    """A running total on the device: the host value it continued, plus device numbers."""

    __slots__ = ("total",)

    def __init__(self, total):
        self.total = total

    @classmethod
    def start(cls, base, value):
        return cls(_wide(value) + base)

    def add(self, value):
        self.total = self.total + _wide(value)
        return self

    def read(self):
        return self.total.item()


def _wide(value):
    kind = value.dtype.kind
    return value.astype("float64" if kind in "fc" else "int64", copy=False)


class RunningSum:
    """The data descriptor of a metric's sum (see the module's description)."""

    def __set_name__(self, owner, name):
        self._key = f"_{name}_value"

    def __get__(self, metric, owner=None):
        if metric is None:
            return self
        value = metric.__dict__.get(self._key, 0.0)
        if type(value) is _OnDevice:
            value = metric.__dict__[self._key] = value.read()
        return value

    def __set__(self, metric, value):
        metric.__dict__[self._key] = value


def batch_value(value):
    """A batch's float sum as the running sums take it: a float, or on a GPU a float64 there.

    ``float(value)`` on the host; a 0-d CuPy array stays on the device, widened to
    float64 as ``float`` would (no wait for the device).
    """
    if is_cupy_array(value):
        return value.astype("float64")
    return float(value)


def add_to_sum(metric, name, value):
    """Add ``value`` to the ``RunningSum`` attribute ``name`` of ``metric``, without a read."""
    key = f"_{name}_value"
    current = metric.__dict__.get(key, 0.0)
    if is_cupy_array(value) and getattr(value, "ndim", None) == 0:
        if type(current) is _OnDevice:
            metric.__dict__[key] = current.add(value)
        else:
            metric.__dict__[key] = _OnDevice.start(current, value)
        return
    if type(current) is _OnDevice:
        current = current.read()
    metric.__dict__[key] = current + value


def device_total(metric, name, xp):
    """The running sum ``name`` of ``metric`` as a float64 device array of one element.

    For kernels that add into it in place (``cupy_row_kernels.add_correct_rows``):
    a sum not yet on the device starts there from its host value (one small
    copy, at the first batch after a reset or a read); one already there is
    given as a view of one element.
    """
    key = f"_{name}_value"
    current = metric.__dict__.get(key, 0.0)
    if type(current) is not _OnDevice:
        current = metric.__dict__[key] = _OnDevice(xp.full(1, float(current), dtype="float64"))
    elif current.total.dtype != "float64":  # an integer sum (a user's int start)
        current.total = current.total.astype("float64")
    return current.total.reshape(1)
