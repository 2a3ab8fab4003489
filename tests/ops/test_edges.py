"""Edge values MXNet 1.9.1 cannot record (issue 30): integer division by zero.

MXNet's integer division by zero ends the process (SIGFPE), so there is no
value to record; rebind gives 0 there, as MXNet's own modulo by zero and
NumPy's integer division do (a documented difference). The recorded edges
are replayed by test_golden_edges.py.
"""

import numpy as np
import pytest

from rebind.ops import OpContext
from tests.ops.harness import opdef

INTEGERS = ["int32", "int8", "uint8", "int64"]


def _forward(op_name, attrs, inputs, ctx):
    op = opdef(op_name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return np.asarray(ctx.backend.to_host(outs[0]))


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op_name", ["broadcast_div", "elemwise_div"])
def test_integer_division_by_zero_gives_zero(op_name, dtype, ctx):
    lhs = np.array([7, 7, 0, 9], dtype)
    rhs = np.array([0, 2, 0, 3], dtype)
    out = _forward(op_name, {}, [lhs, rhs], ctx)
    np.testing.assert_array_equal(out, np.array([0, 3, 0, 3], dtype))
    assert out.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_division_by_a_zero_scalar_gives_zero(dtype, ctx):
    data = np.array([7, 0, 9], dtype)
    # 256 is 0 once converted to an 8-bit dtype, as MXNet's C cast makes it
    for scalar in ("0", "256") if dtype in ("int8", "uint8") else ("0",):
        out = _forward("_div_scalar", {"scalar": scalar}, [data], ctx)
        np.testing.assert_array_equal(out, np.zeros(3, dtype))


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_scalar_divided_by_zero_elements_gives_zero(dtype, ctx):
    data = np.array([0, 2, 0, 3], dtype)
    out = _forward("_rdiv_scalar", {"scalar": "7"}, [data], ctx)
    np.testing.assert_array_equal(out, np.array([0, 3, 0, 2], dtype))


def test_float_division_by_zero_keeps_ieee_values(ctx):
    lhs = np.array([1.0, -1.0, 0.0], "float32")
    out = _forward("broadcast_div", {}, [lhs, np.zeros(3, "float32")], ctx)
    np.testing.assert_array_equal(out, [np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("index", [3.0, -4.0])
def test_scatter_nd_refuses_an_index_out_of_range(index, ctx):
    # MXNet writes past the output's buffer here (undefined); gather_nd's bounds apply
    data = np.array([1.0, 2.0], "float32")
    indices = np.array([[0.0, index]], "float32")
    with pytest.raises(IndexError, match=r"scatter_nd: .* axis 0 with size 3"):
        _forward("scatter_nd", {"shape": "(3,)"}, [data, indices], ctx)


def test_scatter_nd_counts_negative_indices_from_the_end(ctx):
    data = np.array([1.0, 2.0], "float32")
    indices = np.array([[0.0, -1.0]], "float32")
    out = _forward("scatter_nd", {"shape": "(3,)"}, [data, indices], ctx)
    np.testing.assert_array_equal(out, [1.0, 0.0, 2.0])
