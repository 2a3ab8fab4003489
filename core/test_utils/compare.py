"""Array comparisons with MXNet's tolerances and its worst-element failure message."""

import json

import numpy as np
import numpy.testing as npt

from .. import ndarray as nd
from .tolerances import get_atol, get_etol, get_rtol, get_tols


def _host(a):
    """A NumPy view of an NDArray (anything else passes through)."""
    return a.asnumpy() if isinstance(a, nd.NDArray) else a


def _find_max_violation(a, b, rtol, atol):
    """Index and size of the largest |a-b| / (atol + rtol*|b|); equal infs count as equal."""
    with np.errstate(invalid="ignore"):
        absdiff = np.where(np.equal(a, b), 0, np.abs(a - b))
    violation = absdiff / (atol + rtol * np.abs(b) + 1e-20)
    loc = np.argmax(violation)
    # plain ints so messages read (1, 2) rather than (np.int64(1), np.int64(2))
    index = tuple(int(i) for i in np.unravel_index(loc, violation.shape))
    return index, np.max(violation)


def same(a, b):
    """True when the two arrays have equal shapes and elements."""
    return np.array_equal(_host(a), _host(b))


def checkShapes(a, b):  # noqa: N802 - MXNet's name
    """Raise AssertionError when ``a`` and ``b`` differ in shape."""
    if a.shape != b.shape:
        msg = f"a.shape = {a.shape} and b.shape = {b.shape} are not equal"
        raise AssertionError(npt.build_err_msg([_host(a), _host(b)], err_msg=msg))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """``np.allclose`` with MXNet's defaults (float64 table when a tolerance is None)."""
    if not use_broadcast:
        checkShapes(a, b)
    return np.allclose(
        _host(a), _host(b), rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan
    )


def locationError(a, b, index, names, maxError=False):  # noqa: N802,N803 - MXNet's names
    """The 'Location of error' line naming ``index`` and both values there."""
    maximum = "maximum " if maxError else ""
    return (
        f"Location of {maximum}error: {index}, {names[0]}={a[index]:.8f}, {names[1]}={b[index]:.8f}"
    )


def _mismatch_message(a, b, rtol, atol, names, equal_nan, mismatches):
    """Print the worst ``mismatches[0]`` elements and build the assertion text."""
    index, rel = _find_max_violation(a, b, rtol, atol)
    if index == ():
        return f"Error {rel:f} exceeds tolerance rtol={rtol:e}, atol={atol:e}.\n"
    worst_index, worst = index, rel
    print(f"\n*** Maximum errors for vector of size {a.size}:  rtol={rtol}, atol={atol}\n")
    a_left, b_left = a.copy(), b.copy()
    count = 1
    while count <= a.size:
        if count <= mismatches[0]:
            print(f"{count:3d}: Error {rel:f}  {locationError(a, b, index, names)}")
        a_left[index] = b_left[index] = 0
        if np.allclose(a_left, b_left, rtol=rtol, atol=atol, equal_nan=equal_nan):
            break
        count += 1
        if not (count <= mismatches[1] or mismatches[1] <= 0):
            break
        index, rel = _find_max_violation(a_left, b_left, rtol, atol)
    degree = "at least " if mismatches[1] > 0 and count > mismatches[1] else ""
    location = locationError(a, b, worst_index, names, maxError=True)
    return (
        f"Error {worst:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
        f"(mismatch {degree}{100 * count / a.size:f}%).\n{location}"
    )


def _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches):
    text = _mismatch_message(a, b, rtol, atol, names, equal_nan, mismatches)
    with np.printoptions(threshold=4, suppress=True):
        raise AssertionError(npt.build_err_msg([a, b], err_msg=text))


def assert_almost_equal(
    a,
    b,
    rtol=None,
    atol=None,
    names=("a", "b"),
    equal_nan=False,
    use_broadcast=True,
    mismatches=(10, 10),
):
    """Raise AssertionError naming the worst element unless ``a`` and ``b`` are close.

    Tolerances default per dtype (the looser of the two inputs); NDArrays and NumPy arrays
    are both accepted. ``mismatches`` = (how many to print, how many to count).
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_host(a)), np.asarray(_host(b))
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        npt.assert_equal(a, b)
        return
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a, b = np.broadcast_arrays(a, b)
    _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``assert_almost_equal`` with NumPy's ``assert_allclose`` defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(
    a, b, rtol=None, atol=None, etol=None, names=("a", "b"), equal_nan=False, mismatches=(10, 10)
):
    """Like ``assert_almost_equal`` but pass while at most ``etol`` of elements mismatch."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_host(a)), np.asarray(_host(b))
    equals = np.isclose(a, b, rtol=rtol, atol=atol)
    if 1 - np.count_nonzero(equals) / equals.size > etol:
        _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """``assert_almost_equal`` after zeroing every position where either input is NaN."""
    a, b = np.copy(_host(a)), np.copy(_host(b))
    nan_mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan_mask] = 0
    b[nan_mask] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type}")


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce ``dat`` over ``axis`` (int, sequence or None) one axis at a time."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else range(len(dat.shape))
    ret = dat
    for i in reversed(sorted(axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axis:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def collapse_sum_like(a, shape):
    """Sum ``a`` down to ``shape`` (the reverse of broadcasting ``shape`` up to ``a``)."""
    assert len(a.shape) >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, size in enumerate(shape):
        if size != a.shape[i + lead]:
            assert size == 1
            axes.append(i + lead)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def same_array(array1, array2):
    """True when two NDArrays share memory (writing one shows in the other)."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """``assert_almost_equal`` over (nested tuples of) arrays; None on either side skips."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2, strict=False):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def same_symbol_structure(sym1, sym2):
    """True when the two symbols' node lists have the same ops in the same order."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2, strict=False))
