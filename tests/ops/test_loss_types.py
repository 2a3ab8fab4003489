"""Loss layers' dtype rule (ops/loss_types.py): data and label share one dtype.

Expected behaviour recorded from MXNet 1.9.1 (``infer_type``, ``simple_bind`` and
``mx.nd`` calls): a label whose dtype differs from the data's raises in all six
layers; a missing dtype is filled in from the data, and from the label too except
in SoftmaxOutput and SVMOutput.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import DTypeMismatchError
from rebind.ops.base import ArgTypeMismatch
from rebind.ops.loss_types import data_led_type, uniform_type

F32, F64 = np.float32, np.float64
# (op, label shape for data of shape (4, 3), whether the label alone fixes the dtype)
LAYERS = [
    ("SoftmaxOutput", (4,), False),
    ("SVMOutput", (4,), False),
    ("softmax_cross_entropy", (4,), True),
    ("LinearRegressionOutput", (4, 3), True),
    ("LogisticRegressionOutput", (4, 3), True),
    ("MAERegressionOutput", (4, 3), True),
]
NAMES = [layer[0] for layer in LAYERS]


def _layer(op_name, label_stype=None):
    label = mx.sym.Variable("label", stype=label_stype) if label_stype else mx.sym.Variable("label")
    return getattr(mx.sym, op_name)(mx.sym.Variable("data"), label, name="head")


@pytest.mark.parametrize("op_name", NAMES)
@pytest.mark.parametrize(
    "data, label",
    [("float64", "float32"), ("float32", "float64"), ("float16", "float32"), ("float32", "int32")],
)
def test_label_of_another_dtype_raises_naming_node_argument_and_dtypes(op_name, data, label):
    with pytest.raises(DTypeMismatchError) as info:
        _layer(op_name).infer_type(data=data, label=label)
    message = str(info.value)
    assert f"{op_name} node 'head'" in message
    assert f"argument 'label' has dtype {label}, expected {data}" in message
    assert f".astype('{data}')" in message


@pytest.mark.parametrize("op_name", NAMES)
def test_label_takes_the_data_dtype(op_name):
    args, outs, _ = _layer(op_name).infer_type(data="float64")
    assert args == [F64, F64] and outs == [F64]


@pytest.mark.parametrize("op_name", NAMES)
def test_same_dtype_is_accepted(op_name):
    args, outs, _ = _layer(op_name).infer_type(data="float64", label="float64")
    assert args == [F64, F64] and outs == [F64]


@pytest.mark.parametrize("op_name, fixes", [(name, fixes) for name, _, fixes in LAYERS])
def test_label_alone_fixes_the_data_dtype_only_where_mxnet_lets_it(op_name, fixes):
    args, outs, _ = _layer(op_name).infer_type_partial(label="float64")
    # MXNet: ElemwiseType layers fill data from label; SoftmaxOutput leaves data unknown
    # (SVMOutput raises "First input must have specified type": docs/migration.md)
    assert args == ([F64, F64] if fixes else [None, F64])
    assert outs == ([F64] if fixes else [None])


def test_softmax_output_data_dtype_comes_from_its_output():
    head = _layer("SoftmaxOutput") + mx.sym.Variable("x", dtype="float64")
    assert head.infer_type() == ([F64, F64, F64], [F64], [])
    with pytest.raises(DTypeMismatchError, match="'label' has dtype float32, expected float64"):
        head.infer_type(label="float32")


@pytest.mark.parametrize("op_name, label_shape", [(name, shape) for name, shape, _ in LAYERS])
def test_simple_bind_rejects_a_float32_label_with_float64_data(op_name, label_shape):
    layer = _layer(op_name)
    with pytest.raises(DTypeMismatchError, match="argument 'label' has dtype float32"):
        layer.simple_bind(mx.cpu(), data=(4, 3), type_dict={"data": "float64", "label": "float32"})
    executor = layer.simple_bind(mx.cpu(), data=(4, 3), type_dict={"data": "float64"})
    assert executor.arg_dict["label"].dtype == F64
    assert executor.arg_dict["label"].shape == label_shape
    assert executor.forward()[0].dtype == F64


@pytest.mark.parametrize("op_name", NAMES[3:])
def test_simple_bind_checks_a_sparse_label_too(op_name):
    layer = _layer(op_name, label_stype="csr")
    shapes = {"data": (4, 3), "label": (4, 3)}
    stypes = {"data": "default", "label": "csr"}
    with pytest.raises(DTypeMismatchError, match="argument 'label' has dtype float32"):
        layer.simple_bind(
            mx.cpu(), type_dict={"data": "float64", "label": "float32"}, stype_dict=stypes, **shapes
        )
    executor = layer.simple_bind(
        mx.cpu(), type_dict={"data": "float64"}, stype_dict=stypes, **shapes
    )
    assert executor.arg_dict["label"].dtype == F64 and executor.arg_dict["label"].stype == "csr"


@pytest.mark.parametrize("op_name, label_shape", [(name, shape) for name, shape, _ in LAYERS])
def test_imperative_call_rejects_a_label_of_another_dtype(op_name, label_shape):
    data = mx.nd.ones((4, 3), dtype="float64")
    label = mx.nd.zeros(label_shape, dtype="float32")
    with pytest.raises(DTypeMismatchError, match=f"{op_name}: argument 'label' has dtype float32"):
        getattr(mx.nd, op_name)(data, label)
    assert getattr(mx.nd, op_name)(data, label.astype("float64")).dtype == F64


@pytest.mark.parametrize("op_name", NAMES[3:])
def test_imperative_call_rejects_a_sparse_label_of_another_dtype(op_name):
    data = mx.nd.ones((4, 3), dtype="float64")
    label = mx.nd.ones((4, 3), dtype="float32").tostype("csr")
    with pytest.raises(DTypeMismatchError, match="'label' has dtype float32, expected float64"):
        getattr(mx.nd, op_name)(data, label)


def test_rules_fill_and_check():
    # data_led_type: the data (else the output) decides; a label alone does not
    assert data_led_type(None, [None, "float64"], [None], []) == ([None, "float64"], [None], [])
    assert data_led_type(None, [None, None], ["float16"], []) == (
        ["float16", "float16"],
        ["float16"],
        [],
    )
    assert uniform_type(None, [None, "float64"], [None], []) == (
        ["float64", "float64"],
        ["float64"],
        [],
    )
    with pytest.raises(ArgTypeMismatch) as info:
        uniform_type(None, ["float32", None], ["float64"], [])
    assert (info.value.argument, info.value.got, info.value.expected) == (
        "output",
        "float64",
        "float32",
    )
