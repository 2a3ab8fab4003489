"""Default contexts, dtypes and the per-dtype tolerance tables of ``mx.test_utils``."""

import numbers

import numpy as np

from ..context import Context, current_context


def default_context():
    """The context tests run on: the current one (``with ctx:`` or the process default)."""
    return current_context()


def set_default_context(ctx):
    """Make ``ctx`` this thread's default context (what ``default_context`` returns)."""
    Context.default_ctx = ctx


def default_dtype():
    """The dtype tests generate data in: float32, as MXNet."""
    return np.float32


def _table(float16, float32, float64):
    table = {
        np.dtype(np.float16): float16,
        np.dtype(np.float32): float32,
        np.dtype(np.float64): float64,
    }
    # exact dtypes compare exactly
    for name in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64):
        table[np.dtype(name)] = 0
    return table


def default_rtols():
    """Relative tolerance per dtype: 1e-2 (float16), 1e-4 (float32), 1e-5 (float64), 0 exact."""
    return _table(1e-2, 1e-4, 1e-5)


def default_atols():
    """Absolute tolerance per dtype: 1e-1 (float16), 1e-3 (float32), 1e-20 (float64), 0 exact."""
    return _table(1e-1, 1e-3, 1e-20)


def default_numeric_eps():
    """Finite-difference step per float dtype (powers of two, so the step is exact)."""
    return {
        np.dtype(np.float16): 1.0 / 2**6,
        np.dtype(np.float32): 1.0 / 2**9,
        np.dtype(np.float64): 1.0 / 2**14,
    }


def effective_dtype(dat):
    """The dtype whose tolerances apply to ``dat`` (its own: rebind has no TF32 path)."""
    return np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol):
    """``tol`` if a number, else its (or ``default_tol``'s) entry for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    return tol.get(dtype, default_tol[dtype])


def get_tols(x, y, rtol, atol):
    """The (rtol, atol) to compare ``x`` with ``y``: the looser default of the two dtypes."""
    x = np.array(x) if isinstance(x, numbers.Number) else x
    y = np.array(y) if isinstance(y, numbers.Number) else y
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_atol(atol=None, dtype=np.float64):
    """``atol``, or the default absolute tolerance of ``dtype`` (float64) when None."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=np.float64):
    """``rtol``, or the default relative tolerance of ``dtype`` (float64) when None."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol=None):
    """``etol`` (allowed fraction of mismatching elements), 0 when None."""
    return 0 if etol is None else etol
