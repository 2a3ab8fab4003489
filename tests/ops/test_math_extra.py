"""gamma, gammaln, erfinv, hard_sigmoid, logical_not, and the special-function kernels."""

import math

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops.special import digamma, erf, erfinv, gamma, lgamma
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

MATH_OPS = ("gamma", "gammaln", "erfinv", "hard_sigmoid", "logical_not")
EULER_GAMMA = 0.57721566490153286


# MXNet's float64 digamma (cephes psi) is off by up to 1.6e-7 absolute; ours by 1e-14
_PSI_TOLERANCE = (1e-6, 1e-6)


@pytest.mark.parametrize("case_id", case_ids(*MATH_OPS))
def test_golden(case_id, ctx):
    loose = case_id.startswith(("math_gamma", "math_gammaln")) and "64" in case_id
    replay_golden(case_id, ctx, tolerance=_PSI_TOLERANCE if loose else None)


def test_every_op_has_golden_cases():
    for name in MATH_OPS:
        assert len(case_ids(name)) >= 4, name


def _run(xp_function, values, xp=np):
    with np.errstate(all="ignore"):
        return np.asarray(xp_function(xp, xp.asarray(values, dtype="float64")))


# -- accuracy against Python's math module ----------------------------------------


def _positive_grid():
    return np.concatenate([np.geomspace(1e-8, 1, 200), np.linspace(1, 171.6, 1500)])


def _negative_grid():
    x = np.linspace(-40.3, -0.01, 1700)
    return x[np.abs(x - np.round(x)) > 1e-3]


@pytest.mark.parametrize("grid", [_positive_grid, _negative_grid])
def test_gamma_matches_math_gamma(grid):
    x = grid()
    expected = np.array([math.gamma(v) for v in x])
    np.testing.assert_allclose(_run(gamma, x), expected, rtol=1e-13)


def test_gamma_of_integers_is_the_factorial():
    n = np.arange(1, 171)
    expected = np.array([float(math.factorial(k - 1)) for k in n])
    np.testing.assert_allclose(_run(gamma, n), expected, rtol=5e-15)


@pytest.mark.parametrize("grid", [_positive_grid, _negative_grid])
def test_gammaln_matches_math_lgamma(grid):
    x = np.concatenate([grid(), np.geomspace(171, 1e300, 50)])
    expected = np.array([math.lgamma(v) for v in x])
    # absolute near the roots of log Gamma (x = 1, 2, ...), relative elsewhere
    np.testing.assert_allclose(_run(lgamma, x), expected, rtol=1e-13, atol=1e-14)


def test_poles_and_limits_follow_c():
    x = [0.0, -0.0, -1.0, -7.0, math.inf, -math.inf, math.nan, 200.0]
    np.testing.assert_array_equal(
        _run(gamma, x),
        [math.inf, -math.inf, math.nan, math.nan, math.inf, math.nan, math.nan, math.inf],
    )
    np.testing.assert_allclose(
        _run(lgamma, x), [math.inf] * 6 + [math.nan, math.lgamma(200.0)], rtol=1e-14
    )


def test_digamma_identities():
    x = np.linspace(-6.4, 40.2, 1000)
    x = x[np.abs(x - np.round(x)) > 1e-2]
    psi = _run(digamma, x)
    np.testing.assert_allclose(_run(digamma, x + 1) - psi, 1 / x, rtol=1e-12, atol=1e-13)
    reflection = _run(digamma, 1 - x) - psi
    np.testing.assert_allclose(reflection, math.pi / np.tan(math.pi * x), rtol=1e-11, atol=1e-12)
    assert abs(_run(digamma, [1.0])[0] + EULER_GAMMA) < 1e-15
    assert abs(_run(digamma, [0.5])[0] - (-EULER_GAMMA - 2 * math.log(2))) < 1e-15


def test_digamma_is_the_derivative_of_gammaln():
    x = np.array([0.3, 1.7, 4.2, 25.0, -0.4, -2.6])
    h = 1e-6
    numeric = (_run(lgamma, x + h) - _run(lgamma, x - h)) / (2 * h)
    np.testing.assert_allclose(_run(digamma, x), numeric, rtol=1e-8)


def test_erfinv_inverts_erf():
    y = np.concatenate(
        [
            np.linspace(-0.999, 0.999, 4001),
            np.geomspace(1e-300, 1e-3, 60),
            1 - np.geomspace(1e-16, 1e-3, 60),
        ]
    )
    x = _run(erfinv, y)
    back = _run(erf, x)
    np.testing.assert_allclose(back, y, rtol=1e-14, atol=2e-16)
    # the tails keep relative accuracy in 1 - y (erfc), not only in y
    tail = y > 0.9
    expected = 1 - y[tail]
    erfc = np.array([math.erfc(v) for v in x[tail]])
    # limited by special.erf's erfc near 2.5 (about 1e-11 relative), not by the inversion
    np.testing.assert_allclose(erfc, expected, rtol=3e-11)


def test_erfinv_matches_mxnet_values():
    y = np.array([0.5, -0.3, 1e-8, 0.9, -0.99, 0.1, 0.999999, 1 - 1e-12])
    # mx.nd.erfinv in float64, MXNet 1.9.1
    mxnet = [
        4.7693627620446988e-01,
        -2.7246271472675443e-01,
        8.8622692545275805e-09,
        1.1630871536766738e00,
        -1.8213863677184496e00,
        8.8855990494257783e-02,
        3.4589107372600512e00,
        5.0420210941134727e00,
    ]
    got = _run(erfinv, y)
    np.testing.assert_allclose(got[:6], mxnet[:6], rtol=1e-13)
    # near 1 MXNet's ndtri(0.5 (y + 1)) loses the low bits of 1 - y; ours keeps them
    np.testing.assert_allclose(got[6:], mxnet[6:], rtol=3e-6)
    np.testing.assert_allclose([math.erfc(v) for v in got[6:]], 1 - y[6:], rtol=1e-11)


def test_erfinv_edges():
    got = _run(erfinv, [1.0, -1.0, 1.5, -2.0, math.nan, 0.0, -0.0])
    np.testing.assert_array_equal(got, [math.inf, -math.inf, math.nan, math.nan, math.nan, 0, 0])
    assert math.copysign(1, got[-1]) == -1


def test_gamma_and_gammaln_match_mxnet_values():
    x = [0.1, 0.5, 3.3, 10.0, 40.5, -0.5, -2.5, -3.7]
    # mx.nd.gamma / mx.nd.gammaln in float64, MXNet 1.9.1
    mx_gamma = [9.5135076986687306, 1.7724538509055161, 2.6834373819557680, 3.6288e05]
    mx_gamma += [
        1.2860502482549919e47,
        -3.5449077018110318,
        -0.9453087204829419,
        0.2516439959024227,
    ]
    mx_lgamma = [2.2527126517342055, 0.57236494292470008, 0.98709857789473432, 12.801827480081471]
    mx_lgamma += [
        108.47307506906537,
        1.2655121234846454,
        -0.056243716497674068,
        -1.3797399049658243,
    ]
    np.testing.assert_allclose(_run(gamma, x), mx_gamma, rtol=1e-13)
    np.testing.assert_allclose(_run(lgamma, x), mx_lgamma, rtol=1e-13)


# -- the operators ----------------------------------------------------------------


@pytest.mark.parametrize(
    "op, values",
    [
        ("gamma", [[0.3, 1.2, 2.5], [4.1, -0.5, -2.3]]),
        ("gammaln", [[0.3, 1.2, 2.5], [14.1, -0.5, -2.3]]),
        ("erfinv", [[0.0, 0.3, -0.7], [0.9, -0.95, 0.05]]),
        ("logical_not", [[0.5, -1.0, 2.0], [3.0, -0.2, 1.1]]),
    ],
)
def test_numeric_gradient(op, values, ctx):
    check_numeric_gradient(op, {}, [np.array(values)], ctx, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("attrs", [{}, {"alpha": "0.3", "beta": "0.4"}, {"alpha": "-0.5"}])
def test_hard_sigmoid_numeric_gradient(attrs, ctx):
    # the kinks of each attribute set lie between these values
    data = np.array([[-4.1, -1.9, -0.7], [0.2, 1.3, 3.6]])
    check_numeric_gradient("hard_sigmoid", attrs, [data], ctx)


def test_hard_sigmoid_clips_to_unit_interval(ctx):
    op = opdef("hard_sigmoid")
    from rebind.ops import OpContext

    data = np.linspace(-5, 5, 11)
    outs, _ = op.forward(
        OpContext(False, ctx.backend, ctx.device_id),
        op.parse({"alpha": "0.25"}),
        [ctx.backend.asarray(data, data.dtype, ctx.device_id)],
        [],
    )
    expected = np.clip(np.float64(np.float32(0.25)) * data + np.float64(np.float32(0.5)), 0, 1)
    np.testing.assert_allclose(np.asarray(ctx.backend.to_host(outs[0])), expected, rtol=1e-15)


def test_hard_sigmoid_defaults_and_parsing():
    params = opdef("hard_sigmoid").parse({})
    assert (params.alpha, params.beta) == (0.2, 0.5)
    assert opdef("hard_sigmoid").parse({"alpha": "0.3"}).alpha == 0.3


@pytest.mark.parametrize("name", MATH_OPS)
def test_shape_inference_is_elementwise(name):
    attrs = {}
    in_shapes, out_shapes, _ = infer(name, attrs, [(2, 0, 3)], [(0, 4, 3)])
    assert in_shapes == [(2, 4, 3)] and out_shapes == [(2, 4, 3)]


@pytest.mark.parametrize("name", MATH_OPS)
def test_bad_shape_names_the_argument(name):
    with pytest.raises(ShapeError, match="output"):
        infer(name, {}, [(2, 3)], [(3, 2)])


@pytest.mark.parametrize("name", MATH_OPS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_type_inference_keeps_the_dtype(name, dtype):
    op = opdef(name)
    _, out_types, _ = op.infer_types(op.parse({}), [dtype])
    assert out_types == [dtype]


def test_logical_not_keeps_integer_dtype(ctx):
    from rebind.ops import OpContext

    op = opdef("logical_not")
    data = np.array([-2, 0, 3, 0], dtype=np.int32)
    outs, _ = op.forward(
        OpContext(False, ctx.backend, ctx.device_id),
        op.parse({}),
        [ctx.backend.asarray(data, data.dtype, ctx.device_id)],
        [],
    )
    got = np.asarray(ctx.backend.to_host(outs[0]))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [0, 1, 0, 1])
