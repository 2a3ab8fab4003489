"""HostCupy's warps: a kernel that exchanges values within a warp, run on the host.

``__shfl_xor_sync`` has every lane of a warp give a value and get the value
of the lane whose number differs by the mask's bits. On the host each warp's
32 lanes are threads meeting at barriers; these cases check that model
against sums worked out in NumPy, so that kernels built on it (the LSTM
layer's warp kernels) are checked against something that is itself checked.
"""

import numpy as np
import pytest

from .host_kernels import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")

# every lane ends with its warp's sum (a butterfly: five exchanges)
_WARP_SUM = """
    T value = x[i];
    for (int mask = 16; mask > 0; mask >>= 1) {
        value += __shfl_xor_sync(0xffffffffu, value, mask);
    }
    y[i] = value;
"""
# each lane gets the value of the lane across the given mask, and keeps its own lane
_EXCHANGE = """
    const int lane = (int)(i & 31);
    y[i] = __shfl_xor_sync(0xffffffffu, x[i], (int)mask);
    lanes[i] = __shfl_xor_sync(0xffffffffu, lane, (int)mask);
"""


def test_a_butterfly_gives_every_lane_its_warps_sum(host_cupy):
    kernel = host_cupy.ElementwiseKernel("raw T x", "raw T y", _WARP_SUM, "rebind_probe_warp_sum")
    x = np.arange(96, dtype=np.float64) ** 2
    y = np.zeros_like(x)
    kernel(x, y, size=x.size)
    expected = np.repeat(x.reshape(3, 32).sum(axis=1), 32)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("mask", [1, 5, 16, 31])
def test_an_exchange_reads_the_partner_lane(host_cupy, mask):
    kernel = host_cupy.ElementwiseKernel(
        "raw T x, int64 mask", "raw T y, raw int32 lanes", _EXCHANGE, "rebind_probe_warp_exchange"
    )
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    y, lanes = np.zeros_like(x), np.zeros(64, dtype=np.int32)
    kernel(x, mask, y, lanes, size=64)
    partner = np.arange(64) ^ mask  # within the warp: the mask is below 32
    np.testing.assert_array_equal(y, x[partner])
    np.testing.assert_array_equal(lanes, partner % 32)


def test_a_partial_warp_is_refused(host_cupy):
    kernel = host_cupy.ElementwiseKernel("raw T x", "raw T y", _WARP_SUM, "rebind_probe_warp_sum")
    x = np.ones(40, dtype=np.float32)
    with pytest.raises(ValueError, match="not whole warps of 32"):
        kernel(x, np.zeros_like(x), size=40)
