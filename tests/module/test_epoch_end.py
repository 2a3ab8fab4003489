"""fit's epoch end: the parameters handed to the callbacks, and the devices made one again."""

import numpy as np
import pytest

import rebind as mx

from .core_nets import separable


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("REBIND_PROGRESS", "0")


def _bn_net():
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, name="fc1", num_hidden=5)
    h = mx.sym.BatchNorm(h, name="bn", fix_gamma=False)
    h = mx.sym.FullyConnected(h, name="fc2", num_hidden=3)
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _fit(context, monkeypatch, epochs=2):
    x, y = separable(48)
    train = mx.io.NDArrayIter(x, y, batch_size=12)
    mod = mx.mod.Module(_bn_net(), context=context)
    calls, seen = [], []
    original = mx.mod.Module.set_params

    def counting(self, *args, **kwargs):
        calls.append(len(seen))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(mx.mod.Module, "set_params", counting)

    def at_epoch_end(epoch, symbol, arg_params, aux_params):
        seen.append({k: v.asnumpy().copy() for k, v in {**arg_params, **aux_params}.items()})

    mod.fit(
        train,
        num_epoch=epochs,
        optimizer_params={"learning_rate": 0.1},
        initializer=mx.init.Xavier(),
        epoch_end_callback=at_epoch_end,
    )
    return mod, calls, seen


def _device_values(mod, index):
    group = mod._exec_group
    arrays = dict(zip(group.param_names, group.param_arrays, strict=True))
    arrays.update(zip(group.aux_names, group.aux_arrays, strict=True))
    return {name: block[index].asnumpy() for name, block in arrays.items()}


def test_one_device_hands_the_callbacks_its_values_without_writing_them_back(monkeypatch):
    mod, calls, seen = _fit(mx.cpu(), monkeypatch)
    assert calls == []  # the values just read would only be written back
    assert len(seen) == 2
    for name, value in _device_values(mod, 0).items():
        np.testing.assert_array_equal(seen[-1][name], value, err_msg=name)


def test_several_devices_are_made_one_again_at_each_epoch_end(monkeypatch):
    mod, calls, seen = _fit([mx.cpu(0), mx.cpu(1)], monkeypatch)
    assert calls == [0, 1]  # once per epoch, before its callbacks
    first, second = _device_values(mod, 0), _device_values(mod, 1)
    for name in ("bn_moving_mean", "bn_moving_var"):
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
        np.testing.assert_array_equal(seen[-1][name], first[name], err_msg=name)
