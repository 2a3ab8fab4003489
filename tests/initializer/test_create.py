"""Names and JSON: dumps, create, register, alias, third-party plugins, unknown names."""

import importlib
import json
import sys
import textwrap

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.errors import UnknownNameError
from rebind.initializer import InitDesc

FUSED_GRU_JSON = (
    '["fusedrnn", {"init": null, "num_hidden": 12, "num_layers": 2, "mode": "gru", '
    '"bidirectional": true, "forget_bias": 1.0}]'
)

# the texts MXNet 1.9.1 writes for each built-in (defaults unless given)
DUMPS = [
    (lambda: mx.init.Uniform(), '["uniform", {"scale": 0.07}]'),
    (lambda: mx.init.Normal(0.5), '["normal", {"sigma": 0.5}]'),
    (
        lambda: mx.init.Xavier(),
        '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]',
    ),
    (lambda: mx.init.MSRAPrelu(), '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'),
    (lambda: mx.init.Orthogonal(), '["orthogonal", {"scale": 1.414, "rand_type": "uniform"}]'),
    (lambda: mx.init.Bilinear(), '["bilinear", {}]'),
    (lambda: mx.init.Zero(), '["zero", {}]'),
    (lambda: mx.init.One(), '["one", {}]'),
    (lambda: mx.init.Constant(0.25), '["constant", {"value": 0.25}]'),
    (lambda: mx.init.Constant(np.array([[1, 2]])), '["constant", {"value": [[1, 2]]}]'),
    (lambda: mx.init.Constant(mx.nd.array([0.5, 1])), '["constant", {"value": [0.5, 1.0]}]'),
    (lambda: mx.init.LSTMBias(), '["lstmbias", {"forget_bias": 1.0}]'),
    (lambda: mx.init.FusedRNN(None, 12, 2, "gru", True), FUSED_GRU_JSON),
]


@pytest.mark.parametrize("make, text", DUMPS, ids=[t.split('"')[1] for _, t in DUMPS])
def test_dumps_writes_mxnet_json_and_create_reads_it_back(make, text):
    init = make()
    assert init.dumps() == text
    again = mx.init.create(text)
    assert type(again) is type(init)
    assert again.dumps() == text


def test_fused_rnn_dumps_its_inner_initializer():
    fused = mx.init.FusedRNN(mx.init.Xavier(magnitude=2), 4, 1, "lstm")
    inner = '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2}]'
    assert fused.dumps() == (
        r'["fusedrnn", {"init": "[\"xavier\", {\"rnd_type\": \"uniform\", '
        r'\"factor_type\": \"avg\", \"magnitude\": 2}]", "num_hidden": 4, "num_layers": 1, '
        r'"mode": "lstm", "bidirectional": false, "forget_bias": 1.0}]'
    )
    assert mx.init.create(fused.dumps()) == fused
    assert mx.init.FusedRNN(inner, 4, 1, "lstm") == fused


def test_equality_is_by_class_and_arguments():
    assert mx.init.Xavier(magnitude=2) == mx.init.Xavier(magnitude=2)
    assert mx.init.Xavier(magnitude=2) != mx.init.Xavier(magnitude=3)
    assert mx.init.Zero() != mx.init.One()
    assert len({mx.init.Xavier(), mx.init.Xavier(), mx.init.Uniform()}) == 2


def test_create_forms():
    assert mx.init.create("xavier", magnitude=2) == mx.init.Xavier(magnitude=2)
    assert mx.init.create("XAVIER", "gaussian") == mx.init.Xavier("gaussian")
    assert mx.init.create(initializer="normal", sigma=0.2) == mx.init.Normal(0.2)
    assert mx.init.create({"initializer": "uniform", "scale": 0.1}) == mx.init.Uniform(0.1)
    assert mx.init.create('{"initializer": "constant", "value": 2}') == mx.init.Constant(2)
    assert mx.init.create('["Constant", {"value": 0.25}]') == mx.init.Constant(0.25)
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    assert isinstance(mx.init.create("ones"), mx.init.One)
    instance = mx.init.Normal()
    assert mx.init.create(instance) is instance


def test_create_refusals():
    with pytest.raises(ValueError, match="already an instance"):
        mx.init.create(mx.init.Normal(), sigma=2)
    with pytest.raises(TypeError, match="must be a string"):
        mx.init.create(3)
    with pytest.raises(TypeError, match="needs an initializer"):
        mx.init.create()
    with pytest.raises(ValueError, match="not valid JSON"):
        mx.init.create("[normal")
    with pytest.raises(ValueError, match="extra arguments"):
        mx.init.create('["normal", {}]', sigma=1)
    with pytest.raises(ValueError, match='"name", {kwargs}'):
        mx.init.create('["normal"]')


def test_unknown_name_lists_known_ones_and_suggests():
    with pytest.raises(UnknownNameError) as info:
        mx.init.create("xavir")
    message = str(info.value)
    assert "unknown initializer 'xavir'" in message
    assert "Did you mean 'xavier'?" in message
    for name in ("bilinear", "constant", "fusedrnn", "lstmbias", "msraprelu", "orthogonal"):
        assert name in message
    assert isinstance(info.value, ValueError)


def test_invalid_choices_are_refused_when_made():
    with pytest.raises(ValueError, match="rnd_type must be one of uniform, gaussian"):
        mx.init.Xavier(rnd_type="normal")
    with pytest.raises(ValueError, match="factor_type must be one of avg, in, out"):
        mx.init.Xavier(factor_type="fan")
    with pytest.raises(ValueError, match="rand_type must be one of uniform, normal"):
        mx.init.Orthogonal(rand_type="gaussian")
    with pytest.raises(ValueError, match="mode must be one of"):
        mx.init.FusedRNN(None, 4, 1, "LSTM")


def test_namespace():
    assert mx.init is mx.initializer
    assert mx.init.Xavier.__module__ == "rebind.plugins.initializers_random"
    assert "Xavier" in dir(mx.init) and "FusedRNN" in dir(mx.init)
    assert not hasattr(mx.init, "NoSuchInitializer")
    assert registry.get_registry("initializers").owner("lstmbias") == (
        "rebind.plugins.initializers_rnn"
    )


def test_register_decorator_and_alias(fresh_registry, ctx):
    @mx.init.register
    @mx.init.alias("halves", "one_half")
    class Half(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.5

    for name in ("half", "HALVES", "one_half"):
        init = mx.init.create(name)
        arr = mx.nd.zeros((2,), ctx=ctx)
        init(InitDesc("w_weight"), arr)
        np.testing.assert_array_equal(arr.asnumpy(), [0.5, 0.5])
    assert Half().dumps() == '["half", {}]'
    # a variable may name it in its __init__ attribute
    arr = mx.nd.zeros((2,), ctx=ctx)
    mx.init.Zero()(InitDesc("x", {"__init__": Half().dumps()}), arr)
    np.testing.assert_array_equal(arr.asnumpy(), [0.5, 0.5])
    with pytest.raises(TypeError, match="subclass of Initializer"):
        mx.init.register(dict)


THIRD_PARTY = """
import rebind as mx
from rebind import hookimpl


class Ramp(mx.init.Initializer):
    def __init__(self, step=1.0):
        super().__init__(step=step)
        self.step = step

    def _init_weight(self, _, arr):
        xp = arr.context.backend.xp
        arr.data[...] = (xp.arange(arr.size) * self.step).reshape(arr.shape)


@hookimpl
def rebind_add_initializers(registry):
    registry.add("ramp", Ramp)
"""


@pytest.fixture
def third_party(tmp_path, monkeypatch, fresh_registry):
    """A fake installed package whose entry point (group 'rebind') adds the 'ramp' initializer."""
    (tmp_path / "ramp_init_pkg.py").write_text(textwrap.dedent(THIRD_PARTY))
    dist = tmp_path / "ramp_init_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ramp_init_pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rebind]\nramp_init_pkg = ramp_init_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "ramp_init_pkg", raising=False)
    registry.reset()


def test_third_party_initializer_through_an_entry_point(third_party, ctx):
    assert registry.get_registry("initializers").owner("ramp") == "ramp_init_pkg"
    init = mx.init.create("Ramp", step=0.5)
    arr = mx.nd.zeros((2, 3), ctx=ctx)
    init(InitDesc("fc_weight"), arr)
    np.testing.assert_array_equal(arr.asnumpy(), np.arange(6).reshape(2, 3) * 0.5)
    # used by name from a variable's __init__, and from FusedRNN's JSON
    var = mx.sym.Variable("table", init=init)
    arr = mx.nd.zeros((4,), ctx=ctx)
    mx.init.Xavier()(InitDesc("table", var.attr_dict()["table"]), arr)
    np.testing.assert_array_equal(arr.asnumpy(), [0, 0.5, 1, 1.5])
    assert isinstance(mx.init.Ramp(), mx.init.Initializer)
    with pytest.raises(UnknownNameError, match="Did you mean 'ramp'"):
        mx.init.create("rampp")


@pytest.mark.parametrize("value", [np.ones((2, 3)), "ndarray"])
def test_constant_dumps_leaves_its_kwargs_serialisable_as_mxnet_does(value):
    """MXNet's test_const_init_dumps serialises init._kwargs itself after dumps()."""
    value = mx.nd.ones((2, 3)) if isinstance(value, str) else value
    init = mx.init.Constant(value)
    text = init.dumps()
    assert text == json.dumps(["constant", init._kwargs])
    assert json.loads(text)[1]["value"] == [[1.0] * 3] * 2
    arr = mx.nd.zeros((2, 3))
    init("fc_weight", arr)
    assert arr.asnumpy().tolist() == [[1.0] * 3] * 2
