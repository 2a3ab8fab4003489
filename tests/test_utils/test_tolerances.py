"""Default tolerance tables and their lookup, against numbers recorded from MXNet."""

import json
import os

import numpy as np

import rebind as mx
from rebind import test_utils as tu

with open(os.path.join(os.path.dirname(__file__), "data", "mxnet_test_utils.json")) as _f:
    MX = json.load(_f)


def test_tables_match_mxnet():
    assert {k.name: v for k, v in tu.default_rtols().items()} == MX["rtols"]
    assert {k.name: v for k, v in tu.default_atols().items()} == MX["atols"]
    assert {k.name: v for k, v in tu.default_numeric_eps().items()} == MX["numeric_eps"]


def test_lookup_helpers():
    assert tu.get_atol() == MX["get_atol_default"] and tu.get_rtol() == MX["get_rtol_default"]
    assert tu.get_rtol(dtype=np.float16) == 1e-2 and tu.get_atol(0.5) == 0.5
    half, single = np.zeros(1, np.float16), np.zeros(1, np.float32)
    assert list(tu.get_tols(half, single, None, None)) == MX["get_tols_f16_f32"]
    assert tu.get_tolerance(mx.nd.zeros((1,), dtype="float64"), None, tu.default_rtols()) == 1e-5
    assert tu.get_tolerance(single, {np.dtype(np.float16): 3}, tu.default_rtols()) == 1e-4
    assert tu.get_tols(1.0, 2.0, None, None) == (1e-5, 1e-20)
    assert tu.get_etol() == 0 and tu.get_etol(0.1) == 0.1


def test_default_context_follows_with_block_and_setter():
    assert tu.default_dtype() is np.float32
    before = tu.default_context()
    with mx.cpu(3):
        assert tu.default_context() == mx.cpu(3)
    try:
        tu.set_default_context(mx.cpu(5))
        assert tu.default_context() == mx.cpu(5)
    finally:
        tu.set_default_context(before)
    assert tu.default_context() == before
