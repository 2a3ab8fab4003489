"""Operators that tag their variable inputs with an initializer on compose, as MXNet does."""

import rebind as mx


def test_batchnorm_moving_statistics():
    attrs = mx.sym.BatchNorm(mx.sym.Variable("x"), name="bn").attr_dict()
    assert attrs["bn_moving_mean"]["__init__"] == '["zero", {}]'
    assert attrs["bn_moving_var"]["__init__"] == '["one", {}]'


def test_prelu_gamma_starts_at_a_quarter():
    attrs = mx.sym.LeakyReLU(mx.sym.Variable("x"), act_type="prelu", name="p").attr_dict()
    assert attrs["p_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'
    leaky = mx.sym.LeakyReLU(mx.sym.Variable("x"), act_type="leaky", name="l")
    assert leaky.list_arguments() == ["x"]


def test_upsampling_second_input_gets_bilinear():
    up = mx.sym.UpSampling(
        mx.sym.Variable("a"),
        mx.sym.Variable("b"),
        scale=2,
        sample_type="nearest",
        num_args=2,
        name="up",
    )
    assert up.attr_dict()["b"]["__init__"] == '["bilinear", {}]'
    assert "__init__" not in up.attr_dict().get("a", {})


def test_an_initializer_the_user_gave_is_kept():
    gamma = mx.sym.Variable("g", init='["zero", {}]')
    net = mx.sym.LeakyReLU(mx.sym.Variable("x"), gamma=gamma, act_type="prelu")
    assert net.attr_dict()["g"]["__init__"] == '["zero", {}]'
