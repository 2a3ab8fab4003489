"""Replay of MXNet 1.9.1's sparse operator cases (tests/golden/sparse_ops/imperative.json).

Each case calls ``mx.nd.<func>`` on inputs of given storage types; MXNet's
output storage types, values, fallback warning and errors were recorded by
tests/recording/record_sparse_ops.py. On a GPU the values are checked (MXNet's
storage rules depend on the device: its recorded types are the CPU's).
"""

import json
import os
import warnings

import numpy as np
import pytest

import rebind as mx
from rebind.base import MXNetError
from rebind.ndarray.imperative_sparse import StorageFallbackWarning

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "sparse_ops", "imperative.json")
with open(GOLDEN) as handle:
    CASES = json.load(handle)["cases"]


def _decode(encoded):
    return np.array(encoded["values"], encoded["dtype"]).reshape(encoded["shape"])


def _input(encoded, stype, ctx):
    array = mx.nd.array(_decode(encoded), ctx=ctx, dtype=encoded["dtype"])
    return array if stype == "default" else array.tostype(stype)


def _function(func):
    target = mx.nd
    for part in func.split("."):
        target = getattr(target, part)
    return target


def _call(case, ctx):
    pairs = zip(case["inputs"], case["stypes"], strict=True)
    inputs = [_input(v, s, ctx) for v, s in pairs]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in case["params"].items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _function(case["func"])(*inputs, **params)
    fallback = any(issubclass(w.category, StorageFallbackWarning) for w in caught)
    return (out if isinstance(out, (list, tuple)) else [out]), fallback


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_sparse_case(case, ctx):
    cpu = ctx.device_type == "cpu"
    if "error" in case:
        if cpu:
            with pytest.raises((MXNetError, ValueError, IndexError)):
                outs, _ = _call(case, ctx)
                for out in outs:
                    out.asnumpy()
        return
    outs, fallback = _call(case, ctx)
    if cpu:
        assert [o.stype for o in outs] == case["out_stypes"]
    for out, expected in zip(outs, case["outputs"], strict=True):
        want = _decode(expected)
        got = out.asnumpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    if cpu:
        assert fallback == case["fallback"], "fallback warning differs from MXNet's"
