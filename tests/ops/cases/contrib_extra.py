"""Golden cases: hawkesll (count_sketch, fft and ifft are GPU-only in MXNet 1.9.1: their
tests check definitions instead)."""

from tests.ops.cases import arg, case


def _hawkes(case_id, n, t, k, valid, max_time, dtype="float32"):
    args = {
        "lda": arg((n, k), dtype, "positive"),
        "alpha": arg((k,), dtype, "uniform", 0.1, 0.6),
        "beta": arg((k,), dtype, "uniform", 0.5, 3.0),
        "state": arg((n, k), dtype, "uniform", 0.0, 1.0, grad=False),
        "lags": arg((n, t), dtype, "uniform", 0.1, 2.0, grad=False),
        "marks": arg((n, t), "int32", "int", 0, k),
        "valid_length": arg((n,), dtype, "values", values=valid, grad=False),
        "max_time": arg((n,), dtype, "values", values=max_time, grad=False),
    }
    return case(case_id, "_contrib_hawkesll", args, {}, sym_func="contrib.hawkesll")


CASES = [
    _hawkes("hawkesll_default", 3, 6, 2, [6, 3, 0], [20.0, 15.0, 5.0]),
    _hawkes("hawkesll_fractional_length", 2, 5, 3, [2.5, 5], [12.0, 30.0]),
    _hawkes("hawkesll_f64", 4, 7, 4, [7, 1, 4, 6], [16.0, 9.0, 20.0, 14.5], dtype="float64"),
]
