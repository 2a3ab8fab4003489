"""Symbol._gen_atomic_symbol: an operator and its attributes, applied to inputs later.

Expected names and attributes are MXNet 1.9.1's (printed by it for the same calls).
"""

import pytest

import rebind as mx


def test_an_rnn_node_gives_an_unnamed_atomic_symbol_with_every_output():
    data, p, h0, h1 = (mx.sym.var(n) for n in ("data", "param", "h0", "h1"))
    rnn = mx.sym.RNN(
        data, p, h0, h1, state_size=10, num_layers=2, bidirectional=True,
        state_outputs=True, mode="lstm", name="rnn",
    )  # fmt: skip
    atomic = rnn._gen_atomic_symbol()
    assert atomic.name == "" and len(atomic) == 3
    assert atomic.list_outputs() == ["output", "state_output", "statecell_output"]
    assert atomic.list_arguments() == []
    assert atomic.list_attr() == {
        "state_outputs": "True", "mode": "lstm", "bidirectional": "True",
        "num_layers": "2", "state_size": "10",
    }  # fmt: skip
    assert rnn[1]._gen_atomic_symbol().list_outputs() == atomic.list_outputs()


def test_calling_it_applies_the_operator_and_makes_missing_inputs():
    with mx.AttrScope(lr_mult="2"):
        fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    atomic = fc._gen_atomic_symbol()
    assert atomic.attr("num_hidden") == "3" and atomic.attr("lr_mult") == "2"
    x, w = mx.sym.var("x"), mx.sym.var("w")
    assert atomic(data=x).list_arguments() == ["x", "weight", "bias"]
    assert atomic(x, w).list_arguments() == ["x", "w", "bias"]
    named = atomic(x, name="zz")
    assert named.name == "zz" and named.list_arguments() == ["x", "zz_weight", "zz_bias"]
    assert named.attr_dict()["zz_weight"]["__lr_mult__"] == "2"
    assert atomic.list_arguments() == [] and atomic.name == ""  # calls leave it atomic
    composed = atomic(x, name="fc2")
    args, outs, _ = composed.infer_shape(x=(4, 5))
    assert args == [(4, 5), (3, 5), (3,)] and outs == [(4, 3)]


def test_batchnorm_gets_its_aux_states_and_their_init():
    atomic = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")._gen_atomic_symbol()
    bn = atomic(data=mx.sym.var("x"), name="bn2")
    assert bn.list_arguments() == ["x", "bn2_gamma", "bn2_beta"]
    assert bn.list_auxiliary_states() == ["bn2_moving_mean", "bn2_moving_var"]
    assert bn.attr_dict()["bn2_moving_var"]["__init__"] == '["one", {}]'


def test_only_one_operator_node_has_one():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    assert mx.sym.Group([fc, fc])._gen_atomic_symbol().list_outputs() == ["output"]
    with pytest.raises(ValueError, match="got a variable \\(data\\)"):
        data._gen_atomic_symbol()  # MXNet crashes (segmentation fault) here
    with pytest.raises(ValueError, match="several nodes"):
        mx.sym.Group([fc, data + 1])._gen_atomic_symbol()
