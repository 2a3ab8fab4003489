"""Convolution's data gradient computed as a convolution of the gradient (ops/conv_cpu.py)."""

import numpy as np
import pytest

from rebind.ops import OpContext, conv_cpu
from rebind.ops.conv_utils import Window
from tests.ops.harness import opdef
from tests.ops.test_conv import _reference_conv

CASES = [
    # x shape, w shape, pad, dilate
    ((2, 16, 5, 4), (3, 16, 3, 3), (1, 1), (1, 1)),
    ((2, 16, 7, 6), (4, 16, 3, 3), (2, 2), (2, 2)),  # dilated
    ((3, 16, 9), (5, 16, 5), (2,), (1,)),  # 1-D, long rows: the (C, N, W) layout
    ((2, 16, 3, 4, 3), (2, 16, 3, 3, 3), (1, 1, 1), (1, 1, 1)),  # 3-D
]


@pytest.mark.parametrize("x_shape, w_shape, pad, dilate", CASES)
def test_data_gradient_is_the_adjoint_of_the_convolution(x_shape, w_shape, pad, dilate):
    """<conv(x), g> = <x, dx(g)>: the convolution is linear in x, dx its adjoint."""
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    op = opdef("Convolution")
    params = op.parse(
        {
            "kernel": str(w_shape[2:]),
            "num_filter": str(w_shape[0]),
            "pad": str(pad),
            "dilate": str(dilate),
            "no_bias": "True",
        }
    )
    ctx = OpContext(True, _numpy_backend(), 0)
    outs, saved = op.forward(ctx, params, [x, w], [])
    assert conv_cpu.applies(np, saved.window, 1, x_shape[1])
    head = rng.standard_normal(outs[0].shape)
    dx = op.backward(ctx, params, saved, [head], [True, False])[0]
    out = _reference_conv(x, w, None, (1,) * len(pad), dilate, pad, 1)
    np.testing.assert_allclose(out, outs[0], rtol=1e-10, atol=1e-10)
    assert np.sum(out * head) == pytest.approx(np.sum(x * dx), rel=1e-10)
    # and every element: the gradient at each unit vector of the input
    for index in [(0,) * x.ndim, tuple(s - 1 for s in x_shape), (1, 3) + (0,) * (x.ndim - 2)]:
        unit = np.zeros(x_shape)
        unit[index] = 1
        want = np.sum(_reference_conv(unit, w, None, (1,) * len(pad), dilate, pad, 1) * head)
        assert dx[index] == pytest.approx(want, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize(
    "kernel, stride, pad, channels, groups, expected",
    [
        ((3, 3), (1, 1), (1, 1), 16, 1, True),
        ((3, 3), (1, 1), (1, 1), 15, 1, False),  # few rows in the product
        ((3, 3), (1, 1), (1, 1), 16, 2, False),  # groups
        ((3, 3), (2, 2), (1, 1), 16, 1, False),  # strided
        ((5, 5), (1, 1), (0, 0), 64, 1, False),  # no padding: a larger gradient to pad
        ((1, 1), (1, 1), (0, 0), 64, 1, False),  # pointwise: no columns at all
    ],
)
def test_applies_where_it_pays(kernel, stride, pad, channels, groups, expected):
    window = Window(kernel, stride, (1, 1), pad, (8, 8), (8, 8))
    assert conv_cpu.applies(np, window, groups, channels) is expected
    assert not conv_cpu.applies(object(), window, groups, channels)  # NumPy only


def _numpy_backend():
    from tests.conftest import BACKEND_CONTEXTS

    return BACKEND_CONTEXTS["numpy"].backend
