"""Initializer dispatch (parameter names, ``__init__`` attributes), InitDesc, verbosity."""

import logging
import math

import numpy as np
import pytest

import rebind as mx
from rebind.initializer import InitDesc, Initializer

from .distribution import assert_normal

FILL = 7.0  # what the test initializer writes for weights
START = 5.0  # every array starts here, so that writing 0 or 1 shows


class Sevens(Initializer):
    """Fills weights with FILL and remembers the descriptions it saw."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def _init_weight(self, desc, arr):
        self.seen.append(desc)
        arr[:] = FILL


def _start(ctx, shape=(6,)):
    return mx.nd.full(shape, START, ctx=ctx)


def test_initdesc_is_a_string_with_attrs_and_global_init():
    desc = InitDesc("fc1_weight", {"__lr_mult__": "2"})
    assert isinstance(desc, str) and desc == "fc1_weight" and desc.endswith("weight")
    assert desc.attrs == {"__lr_mult__": "2"}
    assert desc.global_init is None
    assert InitDesc("b").attrs == {}


@pytest.mark.parametrize(
    "name, expected",
    [
        ("fc1_weight", FILL),
        ("fc1_bias", 0.0),
        ("bn_gamma", 1.0),
        ("bn_beta", 0.0),
        ("q_min", 0.0),
        ("q_max", 1.0),
        ("fc_bias_quantize", 0.0),
        # 'weight' is tried first, then bias, gamma, beta, min, max
        ("gamma_weight", FILL),
        ("weight_bias", 0.0),
        ("beta_gamma", 1.0),
    ],
)
def test_desc_dispatch_on_the_end_of_the_name(ctx, name, expected):
    arr = _start(ctx)
    Sevens()(InitDesc(name), arr)
    np.testing.assert_array_equal(arr.asnumpy(), np.full(6, expected, np.float32))


def test_quantized_weight_is_one_random_integer_as_mxnet(ctx):
    arr = mx.nd.zeros((3, 4), ctx=ctx, dtype=np.int8)
    Sevens()(InitDesc("fc_weight_quantize"), arr)
    values = arr.asnumpy()
    assert (values == values.flat[0]).all() and -127 <= values.flat[0] < 127


@pytest.mark.parametrize(
    "name", ["bn_moving_mean", "bn_moving_var", "moving_avg", "upsampling0_weightx", "data"]
)
def test_desc_without_attr_for_other_names_is_an_error(ctx, name):
    # in MXNet the operators mark these inputs with __init__ when a symbol is composed
    with pytest.raises(ValueError, match=f"Unknown initialization pattern for {name}"):
        Sevens()(InitDesc(name), _start(ctx))


@pytest.mark.parametrize(
    "name, expected",
    [
        ("stn_loc_weight", [0.0] * 6),
        ("stn_loc_bias", [1, 0, 0, 0, 1, 0]),
        ("fc_bias", [0.0] * 6),
        ("bn_gamma", [1.0] * 6),
        ("bn_beta", [0.0] * 6),
        ("fc_weight", [FILL] * 6),
        ("bn_moving_mean", [0.0] * 6),
        ("bn_moving_var", [1.0] * 6),
        ("bn_moving_inv_var", [0.0] * 6),
        ("bn_moving_avg", [0.0] * 6),
        ("q_min", [0.0] * 6),
        ("q_max", [1.0] * 6),
    ],
)
def test_legacy_string_dispatch(ctx, name, expected):
    arr = _start(ctx)
    with pytest.warns(DeprecationWarning, match="InitDesc"):
        Sevens()(name, arr)
    np.testing.assert_array_equal(arr.asnumpy(), np.asarray(expected, np.float32))


def test_legacy_upsampling_gets_the_bilinear_kernel(ctx):
    arr = mx.nd.zeros((1, 1, 4, 4), ctx=ctx)
    with pytest.warns(DeprecationWarning):
        Sevens()("upsampling0_weight", arr)
    row = np.array([0.25, 0.75, 0.75, 0.25])  # f = 2, c = 0.375 for width 4
    np.testing.assert_allclose(arr.asnumpy()[0, 0], np.outer(row, row), rtol=1e-6)


def test_legacy_errors(ctx):
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="pattern for data"):
        Sevens()("data", _start(ctx))
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="NDArray"):
        Sevens()("fc_weight", np.zeros(3))
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="string"):
        Sevens()(3, _start(ctx))


def test_init_attr_from_variable_overrides_dispatch(ctx):
    mx.random.seed(11)
    var = mx.sym.Variable("embedding_table", init=mx.init.Normal(0.5))
    attrs = var.attr_dict()["embedding_table"]
    assert attrs["__init__"] == '["normal", {"sigma": 0.5}]'
    arr = mx.nd.zeros((64, 64), ctx=ctx)
    # no name pattern applies, and the global initializer is not used
    Sevens()(InitDesc("embedding_table", attrs), arr)
    assert_normal(arr.asnumpy(), 0.5, "Normal(0.5) from __init__ (seed 11)")


def test_init_attr_beats_the_name(ctx):
    arr = _start(ctx)
    Sevens()(InitDesc("fc_bias", {"__init__": '["constant", {"value": 3.5}]'}), arr)
    np.testing.assert_array_equal(arr.asnumpy(), np.full(6, 3.5, np.float32))


def test_init_attrs_as_mxnet_writes_them(ctx, golden):
    # BatchNorm's moving statistics and PReLU's gamma carry __init__ in MXNet's JSON
    symbol = mx.sym.load(str(golden / "checkpoints/lenet_bn/lenet_bn-symbol.json"))
    attrs = symbol.attr_dict()
    for name, expected in (("bn1_moving_mean", 0.0), ("bn1_moving_var", 1.0)):
        arr = _start(ctx, (4,))
        mx.init.Xavier()(InitDesc(name, attrs[name]), arr)
        np.testing.assert_array_equal(arr.asnumpy(), np.full(4, expected, np.float32))
    arr = _start(ctx, (3,))
    Sevens()(InitDesc("lrelu_gamma", {"__init__": '["Constant", {"value": 0.25}]'}), arr)
    np.testing.assert_array_equal(arr.asnumpy(), np.full(3, 0.25, np.float32))


def test_global_init_is_recorded_on_the_desc(ctx):
    outer = Sevens()
    desc = InitDesc("fc_weight")
    outer(desc, _start(ctx))
    assert desc.global_init is outer and outer.seen == ["fc_weight"]
    other = Sevens()
    kept = InitDesc("fc_weight", global_init=other)
    outer(kept, _start(ctx))
    assert kept.global_init is other


def test_base_class_has_no_weight_rule(ctx):
    with pytest.raises(NotImplementedError, match="_init_weight"):
        Initializer()(InitDesc("fc_weight"), _start(ctx))


def test_verbosity_logs_each_array(ctx, caplog):
    init = mx.init.One().set_verbosity(True)
    assert isinstance(init, mx.init.One)
    with caplog.at_level(logging.INFO, logger="rebind.initializer"):
        init(InitDesc("fc_weight"), mx.nd.zeros((2, 2), ctx=ctx))
        init(InitDesc("fc_bias"), mx.nd.zeros((4,), ctx=ctx))
    assert caplog.messages == [
        "Initialized fc_weight as weight: 1.0",
        "Initialized fc_bias as bias: 0.0",
    ]
    caplog.clear()
    init.set_verbosity(True, print_func=lambda arr: f"shape {arr.shape}")
    with caplog.at_level(logging.INFO, logger="rebind.initializer"):
        init(InitDesc("w", {"__init__": '["zero", {}]'}), mx.nd.ones((3,), ctx=ctx))
    assert caplog.messages == ['Initialized w as ["zero", {}]: shape (3,)']
    caplog.clear()
    init.set_verbosity(False)
    with caplog.at_level(logging.INFO, logger="rebind.initializer"):
        init(InitDesc("fc_weight"), mx.nd.zeros((2, 2), ctx=ctx))
    assert caplog.messages == []


def test_default_verbose_statistic_is_rms(ctx, caplog):
    init = mx.init.Constant([[3.0, 4.0]]).set_verbosity(True)
    with caplog.at_level(logging.INFO, logger="rebind.initializer"):
        init(InitDesc("w_weight"), mx.nd.zeros((1, 2), ctx=ctx))
    expected = np.float32(5.0 / math.sqrt(2))
    assert caplog.messages == ["Initialized w_weight as weight: " + str(expected)]
