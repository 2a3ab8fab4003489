"""Operators without parameters ignore extra attributes, as MXNet's do; the others refuse them."""

import json

import numpy as np
import pytest

import rebind as mx
from rebind.ops.params import ParamError


def test_an_op_without_parameters_ignores_extra_attributes(ctx):
    a = mx.nd.array([[1.0, 2.0]], ctx=ctx)
    b = mx.nd.array([[10.0], [20.0]], ctx=ctx)
    with pytest.warns(UserWarning, match="broadcast_add takes no parameters; 'axis'"):
        out = mx.nd.broadcast_add(a, b, axis=0)  # MXNet 1.9 runs this (SVRG's tests do)
    np.testing.assert_array_equal(out.asnumpy(), [[11, 12], [21, 22]])
    with pytest.warns(UserWarning, match="'foo'"):
        np.testing.assert_array_equal(mx.nd.relu(a * -1, foo=1).asnumpy(), [[0, 0]])


@pytest.mark.filterwarnings("ignore:broadcast_add takes no parameters")
def test_the_symbol_keeps_the_attribute_in_its_json():
    net = mx.sym.broadcast_add(mx.sym.var("a"), mx.sym.var("b"), axis=0)
    node = json.loads(net.tojson())["nodes"][-1]
    assert node["op"] == "broadcast_add" and node["attrs"] == {"axis": "0"}


def test_an_op_with_parameters_still_refuses_unknown_ones():
    with pytest.raises(ParamError, match="unknown parameter 'foo'"):
        mx.nd.FullyConnected(
            mx.nd.ones((2, 3)), mx.nd.ones((2, 3)), num_hidden=2, no_bias=True, foo=1
        )
