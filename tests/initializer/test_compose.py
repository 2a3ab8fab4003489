"""Load (from saved arrays) and Mixed (by name pattern)."""

import logging

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.initializer import InitDesc


@pytest.fixture
def saved(tmp_path):
    """A file written by mx.nd.save with checkpoint-style prefixes, and its values."""
    values = {
        "arg:fc_weight": np.arange(6, dtype=np.float32).reshape(2, 3),
        "arg:fc_bias": np.array([0.5, -0.5], np.float32),
        "aux:bn_moving_var": np.array([2.0, 3.0, 4.0], np.float32),
    }
    path = tmp_path / "model-0001.params"
    mx.nd.save(str(path), {name: mx.nd.array(v) for name, v in values.items()})
    return str(path), {name[4:]: v for name, v in values.items()}


def test_load_from_a_params_file(ctx, saved):
    path, values = saved
    init = mx.init.Load(path)
    assert sorted(init.param) == sorted(values)
    for name, expected in values.items():
        arr = mx.nd.zeros(expected.shape, ctx=ctx)
        init(InitDesc(name), arr)
        assert arr.context == ctx
        np.testing.assert_array_equal(arr.asnumpy(), expected)


def test_load_from_a_dict_with_default(ctx, caplog):
    init = mx.init.Load(
        {"w": mx.nd.array([1.0, 2.0])}, default_init=mx.init.Constant(7.0), verbose=True
    )
    with caplog.at_level(logging.INFO, logger="rebind.plugins.initializers_compose"):
        loaded, other = mx.nd.zeros((2,), ctx=ctx), mx.nd.zeros((3,), ctx=ctx)
        init(InitDesc("w"), loaded)
        init(InitDesc("other_weight"), other)
    np.testing.assert_array_equal(loaded.asnumpy(), [1, 2])
    np.testing.assert_array_equal(other.asnumpy(), [7, 7, 7])
    assert caplog.messages == ["Initialized w by loading", "Initialized other_weight by default"]


def test_load_refusals(ctx, saved, tmp_path):
    path, _ = saved
    init = mx.init.Load(path)
    with pytest.raises(ShapeError) as info:
        init(InitDesc("fc_weight"), mx.nd.zeros((3, 2), ctx=ctx))
    assert "Parameter fc_weight cannot be initialized from loading" in str(info.value)
    assert "target (3, 2) vs loaded (2, 3)" in str(info.value)
    with pytest.raises(ValueError, match="Cannot Initialize conv_weight. Not found"):
        init(InitDesc("conv_weight"), mx.nd.zeros((1,), ctx=ctx))
    listed = tmp_path / "list.params"
    mx.nd.save(str(listed), [mx.nd.zeros((1,))])
    with pytest.raises(TypeError, match="must hold named arrays"):
        mx.init.Load(str(listed))


def test_load_reproduces_a_mxnet_checkpoint(ctx, golden):
    path = golden / "checkpoints/mlp/mlp-0000.params"
    init = mx.init.Load(str(path))
    for name, expected in mx.nd.load(str(path)).items():
        arr = mx.nd.zeros(expected.shape, ctx=ctx)
        init(InitDesc(name[4:]), arr)
        np.testing.assert_array_equal(arr.asnumpy(), expected.asnumpy())


def test_mixed_picks_the_first_matching_pattern(ctx):
    init = mx.init.Mixed(
        ["fc2_.*", "fc.*_weight", ".*"],
        [mx.init.Constant(2.0), mx.init.Constant(3.0), mx.init.One()],
    )
    for name, expected in (
        ("fc2_weight", 2.0),
        ("fc1_weight", 3.0),
        ("conv_weight", 1.0),  # '.*' catches it, and One fills weights with 1
        ("fc1_bias", 0.0),  # '.*' again; a bias is zeros
        ("xfc2_weight", 1.0),  # re.match anchors at the start
    ):
        arr = mx.nd.full((2,), 9.0, ctx=ctx)
        init(InitDesc(name), arr)
        np.testing.assert_array_equal(arr.asnumpy(), [expected] * 2, err_msg=name)


def test_mixed_refusals(ctx):
    with pytest.raises(ValueError, match="2 patterns but 1 initializers"):
        mx.init.Mixed(["a", "b"], [mx.init.One()])
    init = mx.init.Mixed(["fc.*"], [mx.init.One()])
    with pytest.raises(ValueError, match="conv_weight did not match any pattern \\('fc.\\*'\\)"):
        init(InitDesc("conv_weight"), mx.nd.zeros((1,), ctx=ctx))


def test_load_and_mixed_are_registered_but_not_json(saved):
    path, _ = saved
    assert isinstance(mx.init.create("load", path), mx.init.Load)
    assert not isinstance(mx.init.Load(path), mx.init.Initializer)
    assert not hasattr(mx.init.Mixed([], []), "dumps")
