"""CuPy kernels over the rows of a small classifier's output: softmax, and Accuracy's count.

A classifier's output is (batch, classes) with few classes (10 for the
MLPs and LeNet). CuPy's array operations take five launches for a softmax
(maximum, subtract, exp, sum, divide) and about six for Accuracy's count
(argmax, two casts, compare, count, and the running sum), each over a few
hundred values: on a GPU the launches, not the arithmetic, are the cost.
Here one thread handles one row:

- ``softmax_rows``: the row's maximum, ``exp(x - max)`` and their sum, then
  each divided by the sum, in place where asked (the CPU's operations; the
  sum runs along the row, where NumPy sums pairwise, so values agree to
  float rounding);
- ``add_correct_rows``: whether the row's argmax (NumPy's: the first maximum,
  or the first NaN) equals the label, both as int32 (a float label truncated,
  as ``astype(int32)`` does), each correct row adding 1 to running totals
  kept on the device (float64, atomically: whole numbers below 2**53 add
  exactly in any order), so Accuracy's batch is one launch, not the five of
  a count per row, its reduction (two) and two running sums;
- ``add_equal``: the same count for classes already picked (an argmax over
  many classes, CuPy's), one thread per prediction: Accuracy's six launches
  after the argmax (two casts, compare, count, two sums) become one.

And one over columns:

- ``column_sums``: the sum of each column of a (rows, columns) gradient, one
  thread per column adding the rows in order (a FullyConnected's bias
  gradient). CuPy's ``sum(axis=0)`` costs about 40 µs of host time a call
  (measured on an H100 host, three calls a step of the MLP); a thread per
  column walking down the rows reads a warp's columns side by side. The rows
  are added one after another, as NumPy adds them along axis 0 of a
  C-contiguous array, so values match the CPU's to float rounding of the
  products. Only up to ``MAX_COLUMN_ROWS`` rows: a longer walk (a large
  batch, a convolution's bias over every pixel) stays with CuPy's reduction.

A thread per row walks its row serially, which suits ten classes, not ten
thousand: rows of up to ``MAX_WIDTH`` classes go so. Wider rows (the LSTM
LM's 10,000 words, a 1,000-class classifier), up to ``MAX_WARP_WIDTH``, take
a warp per row instead: each lane walks every 32nd class (the warp reads
consecutive classes side by side), and the lanes' maxima, sums or best
classes meet by exchanges (``__shfl_xor_sync``). The softmax is then one
launch where CuPy took five (six with a bias), with two reads and one write
of the scores fewer; Accuracy's count one where CuPy's argmax and a kernel
took two. Wider still, CuPy's reductions, which spread a row over many
threads.
Importing this module does not import CuPy.
"""

import re

from .cupy_kernels import _kernel

__all__ = [
    "MAX_COLUMN_ROWS",
    "MAX_WARP_WIDTH",
    "MAX_WIDTH",
    "add_correct_rows",
    "add_equal",
    "column_sums",
    "softmax_rows",
]

# the most classes per row for these kernels (a thread a row)
MAX_WIDTH = 64
# the most classes per row for the softmax of a warp a row (beyond, a lane's walk of
# 1,000 classes would take longer than CuPy's reductions spread over the row)
MAX_WARP_WIDTH = 1 << 15
# the most rows column_sums walks: its threads add their rows one after another, which
# for the 4096 MLP's 1024 rows took longer on an H200 than CuPy's reduction (137k against
# 143k samples/s a second); below a few hundred rows the host time it saves is what counts
MAX_COLUMN_ROWS = 256

_COLUMN_SUM_BODY = """
    T total = T(0);
    for (long long r = 0; r < rows; ++r) {
        total = total + x[r * width + i];
    }
    out = total;
"""

_SOFTMAX_BODY = """
    const long long first = i * width;
    T top = x[first];
    for (long long c = 1; c < width; ++c) {
        const T v = x[first + c];
        if (v > top || v != v) { top = v; }  // NumPy's max: a NaN wins
    }
    T total = T(0);
    for (long long c = 0; c < width; ++c) {
        const T e = exp(x[first + c] - top);
        out[first + c] = e;
        total = total + e;
    }
    for (long long c = 0; c < width; ++c) {
        out[first + c] = out[first + c] / total;
    }
"""


def _with_bias(body):
    """``body`` with a bias added to each score as it is read: ``x[first + c]`` becomes
    ``(x[first + c] + bias[c])`` (x is overwritten only after the second pass has read
    it, when out is x)."""
    body = body.replace("x[first]", "(x[first] + bias[0])")
    return re.sub(r"x\[first \+ (\w+)\]", r"(x[first + \1] + bias[\1])", body)


_SOFTMAX_BIAS_BODY = _with_bias(_SOFTMAX_BODY)
# a warp a row: lane l reads the classes l, l + 32, ... (width > 32: every lane has one);
# its maximum and sum meet the other lanes' by a butterfly of exchanges
_WIDE_SOFTMAX_BODY = """
    const long long first = (i >> 5) * width;
    const int lane = (int)(i & 31);
    T top = x[first + lane];
    for (long long c = lane + 32; c < width; c += 32) {
        const T v = x[first + c];
        if (v > top || v != v) { top = v; }  // NumPy's max: a NaN wins
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        const T v = __shfl_xor_sync(0xffffffffu, top, mask);
        if (v > top || v != v) { top = v; }
    }
    T total = T(0);
    for (long long c = lane; c < width; c += 32) {
        const T e = exp(x[first + c] - top);
        out[first + c] = e;
        total = total + e;
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        total = total + __shfl_xor_sync(0xffffffffu, total, mask);
    }
    for (long long c = lane; c < width; c += 32) {
        out[first + c] = out[first + c] / total;
    }
"""
_WIDE_SOFTMAX_BIAS_BODY = _with_bias(_WIDE_SOFTMAX_BODY)
_ARGMAX = """
    const long long first = i * width;
    long long best = 0;
    T top = pred[first];
    for (long long c = 1; c < width && top == top; ++c) {
        const T v = pred[first + c];
        if (v > top || v != v) { top = v; best = c; }  // the first maximum, or first NaN
    }
"""
_ADD_TOTALS = """
        atomicAdd(&total[0], 1.0);
        atomicAdd(&global_total[0], 1.0);
"""
_ADD_CORRECT_BODY = _ARGMAX + f"    if ((int)best == (int)label) {{{_ADD_TOTALS}    }}\n"
# a warp a row: each lane's first maximum (or first NaN) over its classes, then the
# lanes' meet by exchanges, keeping NumPy's choice: a NaN over any number, the lower
# class between two NaNs or two equal scores
_WIDE_ADD_CORRECT_BODY = (
    """
    const long long row = i >> 5;
    const int lane = (int)(i & 31);
    const long long first = row * width;
    long long best = lane;
    T top = pred[first + lane];
    for (long long c = lane + 32; c < width && top == top; c += 32) {
        const T v = pred[first + c];
        if (v > top || v != v) { top = v; best = c; }
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        const T v = __shfl_xor_sync(0xffffffffu, top, mask);
        const long long c = __shfl_xor_sync(0xffffffffu, best, mask);
        const bool nan = v != v;
        const bool top_nan = top != top;
        if (nan ? (!top_nan || c < best) : (!top_nan && (v > top || (v == top && c < best)))) {
            top = v;
            best = c;
        }
    }
    if (lane == 0 && (int)best == (int)label[row]) {"""
    + _ADD_TOTALS
    + "    }\n"
)
# int32 casts, as astype(int32) casts on the device
_ADD_EQUAL_BODY = f"    if ((int)pred == (int)label) {{{_ADD_TOTALS}    }}\n"


def softmax_rows(cupy, x, out, bias=None):
    """The softmax of each row of the C-contiguous 2-D ``x`` into ``out`` (may be ``x``).

    Rows of up to ``MAX_WIDTH`` classes a thread each, wider ones (up to
    ``MAX_WARP_WIDTH``) a warp each.

    With ``bias`` (one value a column, C-contiguous) the rows of ``x + bias``:
    each sum formed where it is read, as a FullyConnected forms it.
    """
    rows, width = x.shape
    wide = width > MAX_WIDTH  # a warp a row (up to MAX_WARP_WIDTH: the caller's check)
    size = rows * 32 if wide else rows
    if bias is None:
        params = ("raw T x, int64 width", "raw T out")
        if wide:
            kernel = _kernel(cupy, "rebind_softmax_wide_rows", *params, _WIDE_SOFTMAX_BODY)
        else:
            kernel = _kernel(cupy, "rebind_softmax_rows", *params, _SOFTMAX_BODY)
        kernel(x, width, out, size=size)
        return out
    params = ("raw T x, raw T bias, int64 width", "raw T out")
    if wide:
        body = _WIDE_SOFTMAX_BIAS_BODY
        kernel = _kernel(cupy, "rebind_softmax_wide_bias_rows", *params, body)
    else:
        kernel = _kernel(cupy, "rebind_softmax_bias_rows", *params, _SOFTMAX_BIAS_BODY)
    kernel(x, bias, width, out, size=size)
    return out


def add_correct_rows(cupy, pred, label, total, global_total):
    """Add to ``total`` and ``global_total`` the rows of ``pred`` whose argmax is ``label``'s.

    ``label`` holds one value per row (any shape of that size); the totals are
    float64 device arrays of one element, written in place. Rows of more than
    ``MAX_WIDTH`` classes (up to ``MAX_WARP_WIDTH``) take a warp each.
    """
    rows, width = pred.shape
    totals = "raw float64 total, raw float64 global_total"
    if width > MAX_WIDTH:  # a warp a row (up to MAX_WARP_WIDTH: the caller's check)
        params = ("raw T pred, raw L label, int64 width", totals, _WIDE_ADD_CORRECT_BODY)
        kernel = _kernel(cupy, "rebind_add_correct_wide_rows", *params)
        kernel(pred, label.reshape(rows), width, total, global_total, size=rows * 32)
        return
    params = ("raw T pred, L label, int64 width", totals, _ADD_CORRECT_BODY)
    kernel = _kernel(cupy, "rebind_add_correct_rows", *params)
    kernel(pred, label.reshape(rows), width, total, global_total)


def add_equal(cupy, pred, label, total, global_total):
    """Add to both totals the positions where ``pred`` equals ``label`` as int32.

    ``pred`` and ``label`` have one value a position (the same size, any
    shapes: both are read flat); the totals as ``add_correct_rows``'s.
    """
    kernel = _kernel(
        cupy,
        "rebind_add_equal",
        "A pred, B label",
        "raw float64 total, raw float64 global_total",
        _ADD_EQUAL_BODY,
    )
    kernel(pred.reshape(-1), label.reshape(-1), total, global_total)


def column_sums(cupy, x):
    """The sums of the columns of the C-contiguous 2-D ``x`` (a new 1-D array)."""
    rows, width = x.shape
    kernel = _kernel(
        cupy, "rebind_column_sums", "raw T x, int64 rows, int64 width", "T out", _COLUMN_SUM_BODY
    )
    out = cupy.empty(width, dtype=x.dtype)
    kernel(x, rows, width, out)
    return out
