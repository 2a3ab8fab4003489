"""erf against math.erf: relative error far below 1e-7 over the whole real line."""

import math

import numpy as np

from rebind.ops.special import erf


def _points():
    rng = np.random.default_rng(6)
    return np.concatenate(
        [
            np.linspace(-7, 7, 20001),
            rng.standard_normal(5000) * 3,
            np.geomspace(1e-300, 1e-2, 400),
            -np.geomspace(1e-300, 1e-2, 400),
            [2.5, -2.5, np.nextafter(2.5, 3), np.nextafter(2.5, 0), 10.0, 26.0, 30.0, 1e300],
        ]
    )


def test_erf_matches_math_erf(xp, ctx):
    points = _points()
    expected = np.array([math.erf(v) for v in points])
    got = np.asarray(
        ctx.backend.to_host(erf(xp, ctx.backend.asarray(points, "float64", ctx.device_id)))
    )
    assert np.all(got[expected == 0] == 0)
    nonzero = expected != 0
    relative = np.abs(got - expected)[nonzero] / np.abs(expected[nonzero])
    assert relative.max() < 1e-13, points[nonzero][np.argmax(relative)]


def test_erf_special_values(xp, ctx):
    values = ctx.backend.asarray([0.0, -0.0, np.inf, -np.inf, np.nan], "float64", ctx.device_id)
    got = np.asarray(ctx.backend.to_host(erf(xp, values)))
    np.testing.assert_array_equal(got[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(got[1]) and np.isnan(got[4])


def test_erf_of_float32_input_is_float64(xp, ctx):
    got = erf(xp, ctx.backend.asarray([0.5], "float32", ctx.device_id))
    assert got.dtype == np.float64
    assert abs(float(ctx.backend.to_host(got)[0]) - math.erf(0.5)) < 1e-15
