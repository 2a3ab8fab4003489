"""mx.base: MXNet's error root catches rebind's errors; the small helpers behave as MXNet's."""

import numpy as np
import pytest

import rebind as mx
from rebind import errors
from rebind.base import MXNetError, NotImplementedForSymbol, data_dir, py_str


def _error_classes():
    found = []
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            found.append(value)
    return found


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: c.__name__)
def test_every_rebind_error_is_an_mxnet_error(cls):
    assert issubclass(cls, mx.base.MXNetError)
    assert mx.MXNetError is MXNetError
    assert issubclass(MXNetError, RuntimeError)


def test_a_shape_error_is_caught_both_ways():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    with pytest.raises(MXNetError):
        net.infer_shape(data=(2, 3), fc_weight=(5, 7))
    with pytest.raises(ValueError):
        net.infer_shape(data=(2, 3), fc_weight=(5, 7))


def test_not_implemented_for_symbol_message():
    def norm():
        pass

    text = str(NotImplementedForSymbol(norm, "_norm", 1, "a"))
    assert text == (
        "Function norm (namely operator \"_norm\") with arguments (<class 'int'>, "
        "<class 'str'>) is not implemented for Symbol and only available in NDArray."
    )
    assert isinstance(NotImplementedForSymbol(norm, None), MXNetError)


def test_type_tuples_and_py_str():
    assert isinstance(np.int64(3), mx.base.integer_types)
    assert isinstance(np.float32(1), mx.base.numeric_types)
    assert not isinstance(b"x", mx.base.string_types)
    assert py_str("é".encode()) == "é"


def test_data_dir_follows_mxnet_home(monkeypatch, tmp_path):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    assert data_dir() == str(tmp_path)
    monkeypatch.delenv("MXNET_HOME")
    assert data_dir().endswith(".mxnet") or data_dir().endswith("mxnet")


def test_as_list_wraps_single_values_only():
    from rebind.base import _as_list

    pair = (1, 2)
    assert _as_list(pair) is pair
    assert _as_list(3) == [3]
    assert _as_list(None) == [None]
