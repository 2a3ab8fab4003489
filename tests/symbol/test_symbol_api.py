"""Symbol construction and description: Variable, op functions, names, attributes, compose.

Expected values were checked against MXNet 1.9.1 (see each test's docstring
where rebind deliberately differs).
"""

import copy
import json
import pickle

import numpy as np
import pytest

import rebind as mx
from rebind.errors import RebindError
from rebind.ops.params import ParamError


class ZeroInit:
    """Stands for an initializer object: Variable stores its ``dumps()``."""

    def dumps(self):
        return '["zero", {}]'


def _mlp():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _last_node(symbol):
    return json.loads(symbol.tojson())["nodes"][-1]


# -- Variable -------------------------------------------------------------------------


def test_variable_stores_hidden_attributes_as_mxnet_strings():
    v = mx.sym.Variable(
        "w",
        shape=(2, 3),
        lr_mult=0.5,
        wd_mult=2,
        dtype=np.float16,
        init='["normal", {"sigma": 0.01}]',
        stype="default",
        __layout__="NC",
    )
    assert v.list_attr() == {
        "__shape__": "(2, 3)",
        "__lr_mult__": "0.5",
        "__wd_mult__": "2",
        "__dtype__": "2",
        "__init__": '["normal", {"sigma": 0.01}]',
        "__storage_type__": "0",
        "__layout__": "NC",
        "lr_mult": "0.5",
        "wd_mult": "2",
    }
    assert v.name == "w" and v.list_arguments() == ["w"] and v.list_outputs() == ["w"]


@pytest.mark.parametrize(
    "dtype, flag",
    [
        ("float32", "0"),
        (np.float64, "1"),
        ("float16", "2"),
        (np.uint8, "3"),
        ("int32", "4"),
        ("int64", "6"),
    ],
)
def test_variable_dtype_is_the_mxnet_flag(dtype, flag):
    assert mx.sym.var("x", dtype=dtype).attr("__dtype__") == flag


def test_variable_init_object_and_list_shape_follow_str():
    assert mx.sym.var("x", init=ZeroInit()).attr("__init__") == '["zero", {}]'
    assert mx.sym.var("x", shape=[2, 3]).attr("__shape__") == "[2, 3]"  # str(), as MXNet


def test_variable_rejects_bad_arguments():
    with pytest.raises(ValueError, match="'foo' must start and end with '__'"):
        mx.sym.Variable("x", foo=1)
    with pytest.raises(TypeError, match="name must be a string"):
        mx.sym.Variable(3)
    with pytest.raises(ValueError, match="attribute 'a' must be a string"):
        mx.sym.Variable("x", attr={"a": 1})
    with pytest.raises(ValueError, match="'dense' is not a storage type"):
        mx.sym.Variable("x", stype="dense")


def test_variable_stype_is_mxnet_storage_id():
    # MXNet 1.9.1 writes __storage_type__ as its integer id: default 0, row_sparse 1, csr 2
    assert mx.sym.Variable("x", stype="row_sparse").attr("__storage_type__") == "1"
    assert mx.sym.Variable("x", stype="csr").attr("__storage_type__") == "2"
    assert mx.sym.Variable("x", stype="default").attr("__storage_type__") == "0"


def test_variable_attr_dict_maps_hidden_keys():
    v = mx.sym.var("v", attr={"ctx_group": "a", "mine": "b"})
    assert v.list_attr() == {"__ctx_group__": "a", "ctx_group": "a", "mine": "b"}
    assert v.attr("ctx_group") == v.attr("__ctx_group__") == "a"


# -- structure ------------------------------------------------------------------------


def test_list_functions_follow_graph_order():
    net = mx.sym.BatchNorm(_mlp(), name="bn")
    assert net.list_arguments() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
        "softmax_label",
        "bn_gamma",
        "bn_beta",
    ]
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert net.list_inputs() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
        "softmax_label",
        "bn_gamma",
        "bn_beta",
        "bn_moving_mean",
        "bn_moving_var",
    ]
    assert net.list_outputs() == ["bn_output"]


def test_group_concatenates_outputs_and_dedups_arguments():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    group = mx.sym.Group([fc, x, mx.sym.split(x, num_outputs=2, name="sp")])
    assert group.list_outputs() == ["fc_output", "x", "sp_output0", "sp_output1"]
    assert group.list_arguments() == ["x", "fc_weight", "fc_bias"]
    assert len(group) == 4 and group.name is None
    assert repr(group) == "<Symbol group [fc, x, sp, sp]>"  # node names, as MXNet
    with pytest.raises(TypeError):
        mx.sym.Group([])
    with pytest.raises(TypeError):
        mx.sym.Group([x, 1])


def test_internals_and_children():
    net = _mlp()
    internals = net.get_internals()
    assert internals.list_outputs() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc1_output",
        "relu1_output",
        "fc2_weight",
        "fc2_bias",
        "fc2_output",
        "softmax_label",
        "softmax_output",
    ]
    assert internals["relu1_output"].list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert net.get_children().list_outputs() == ["fc2_output", "softmax_label"]
    assert mx.sym.var("x").get_children() is None
    split = mx.sym.split(mx.sym.var("x"), num_outputs=3, name="sp")
    assert split.get_children().list_outputs() == ["x"]  # one node: its inputs once


def test_getitem_iteration_name_and_repr():
    split = mx.sym.split(mx.sym.var("x"), num_outputs=3, name="sp")
    assert split.name == "sp" and repr(split) == "<Symbol sp>"  # one node, three outputs
    assert split[1].list_outputs() == ["sp_output1"]
    assert split["sp_output2"].list_outputs() == ["sp_output2"]
    assert split[1:].list_outputs() == ["sp_output1", "sp_output2"]
    assert split[-1].list_outputs() == ["sp_output2"]
    assert [s.list_outputs() for s in split] == [["sp_output0"], ["sp_output1"], ["sp_output2"]]
    with pytest.raises(IndexError):
        split[3]
    with pytest.raises(TypeError):
        split[1.0]
    with pytest.raises(ValueError, match="no output named 'nope'"):
        split["nope"]
    twice = mx.sym.Group([split[0], split[0]])
    with pytest.raises(ValueError, match="several"):
        twice["sp_output0"]


# -- op functions ---------------------------------------------------------------------


def test_positional_and_keyword_inputs_build_the_same_graph():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    by_position = mx.sym.FullyConnected(x, w, num_hidden=4, no_bias=True, name="fc")
    by_name = mx.sym.FullyConnected(data=x, weight=w, num_hidden=4, no_bias=True, name="fc")
    assert by_position.tojson() == by_name.tojson()
    assert by_name.list_arguments() == ["x", "w"]
    explicit_none = mx.sym.FullyConnected(data=x, weight=None, num_hidden=4, name="fc")
    assert explicit_none.list_arguments() == ["x", "fc_weight", "fc_bias"]


def test_auto_created_variables_carry_the_op_attrs():
    fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=10, name="fc1")
    assert fc.attr_dict()["fc1_weight"] == {"num_hidden": "10"}
    assert fc.attr_dict()["fc1_bias"] == {"num_hidden": "10"}
    assert "x" not in fc.attr_dict()


def test_batchnorm_gives_moving_stats_an_init_as_mxnet():
    bn = mx.sym.BatchNorm(mx.sym.var("x"), name="bn", moving_var=mx.sym.var("mv", init="x"))
    attrs = bn.attr_dict()
    assert attrs["bn_moving_mean"]["__init__"] == '["zero", {}]'
    assert attrs["mv"]["__init__"] == "x"  # an explicit initializer is kept
    assert "bn_gamma" not in attrs  # no attributes at all


def test_attribute_values_are_stored_as_mxnet_strings():
    x = mx.sym.var("x")
    conv = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, no_bias=True, stride=[1, 1], name="c")
    assert conv.list_attr() == {
        "kernel": "(3, 3)",
        "num_filter": "4",
        "no_bias": "True",
        "stride": "[1, 1]",
    }
    assert mx.sym.Cast(x, dtype=np.float32).attr("dtype") == "float32"
    assert mx.sym.LeakyReLU(x, slope=0.25).attr("slope") == "0.25"
    assert mx.sym.Concat(x, x, dim=1).list_attr() == {"dim": "1", "num_args": "2"}


def test_name_manager_counters_and_prefix():
    x = mx.sym.var("x")
    with mx.name.NameManager():
        first = mx.sym.FullyConnected(x, num_hidden=2)
        second = mx.sym.FullyConnected(x, num_hidden=2)
        relu = mx.sym.Activation(x, act_type="relu")
    assert (first.name, second.name, relu.name) == (
        "fullyconnected0",
        "fullyconnected1",
        "activation0",
    )
    assert second.list_arguments() == ["x", "fullyconnected1_weight", "fullyconnected1_bias"]
    with mx.name.Prefix("enc_"):
        auto = mx.sym.Activation(x, act_type="relu")
        named = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
        variable = mx.sym.var("v")
    assert auto.name == "enc_activation0"
    assert named.list_arguments() == ["x", "enc_fc_weight", "enc_fc_bias"]
    assert variable.name == "v"  # variables are not renamed


def test_attr_scope_nests_and_reaches_auto_variables():
    with mx.AttrScope(ctx_group="dev1", lr_mult="0.5"):
        v = mx.sym.var("v")
        with mx.AttrScope(ctx_group="dev2", __group__="5"):
            fc = mx.sym.FullyConnected(v, num_hidden=2, name="f", attr={"wd_mult": "0"})
    assert v.list_attr() == {
        "__ctx_group__": "dev1",
        "__lr_mult__": "0.5",
        "ctx_group": "dev1",
        "lr_mult": "0.5",
    }
    expected = {
        "num_hidden": "2",
        "__ctx_group__": "dev2",
        "__lr_mult__": "0.5",
        "__wd_mult__": "0",
        "__group__": "5",
        "ctx_group": "dev2",
        "lr_mult": "0.5",
        "wd_mult": "0",
    }
    assert fc.list_attr() == expected
    assert fc.attr_dict()["f_weight"] == expected
    assert mx.sym.var("after").list_attr() == {}
    with pytest.raises(ValueError, match="must be a string"):
        mx.AttrScope(lr_mult=1)


def test_attr_scope_keeps_other_keys_plain():
    """As in MXNet, a plain key is an attribute of a variable but a parameter of an op."""
    with mx.AttrScope(group="4"):
        assert mx.sym.var("v").list_attr() == {"group": "4"}
        with pytest.raises(ParamError, match="unknown parameter 'group'"):
            mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2)


def test_hidden_keys_given_to_an_op_become_attributes():
    fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, lr_mult=2, name="q")
    assert fc.list_attr() == {"num_hidden": "3", "__lr_mult__": "2", "lr_mult": "2"}
    assert fc.attr_dict()["q_weight"]["__lr_mult__"] == "2"


@pytest.mark.parametrize(
    "build, error, message",
    [
        (
            lambda x: mx.sym.FullyConnected(x, foo=x, num_hidden=1),
            ValueError,
            "unknown input 'foo'",
        ),
        (lambda x: mx.sym.Activation(x, x, act_type="relu"), ValueError, "2 inputs given"),
        (
            lambda x: mx.sym.Activation(mx.sym.split(x, num_outputs=2), act_type="relu"),
            ValueError,
            "has 2 outputs",
        ),
        (lambda x: mx.sym.Activation(x, data=x, act_type="relu"), ValueError, "given twice"),
        # values after the inputs are parameters in declaration order, as in MXNet
        (lambda x: mx.sym.Activation(3, act_type="relu"), TypeError, "'act_type' given twice"),
        (lambda x: mx.sym.Activation(x, "relu", x), TypeError, "inputs must come before"),
        (
            lambda x: mx.sym.FullyConnected(x, num_hidden="abc"),
            ParamError,
            "FullyConnected: parameter num_hidden='abc'",
        ),
        (lambda x: mx.sym.Activation(x, act_type="bogus"), ParamError, "act_type='bogus'"),
        (lambda x: mx.sym.FullyConnected(x), ParamError, "'num_hidden' is missing"),
        (lambda x: mx.sym.FullyConnected(x, num_hidden=1, foo=2), ParamError, "unknown parameter"),
    ],
)
def test_op_function_errors(build, error, message):
    with pytest.raises(error, match=message):
        build(mx.sym.var("x"))


def test_unknown_op_is_an_attribute_error_that_suggests():
    with pytest.raises(AttributeError, match="NoSuchOp.*available: .*FullyConnected"):
        mx.sym.NoSuchOp  # noqa: B018
    with pytest.raises(AttributeError, match="Did you mean 'FullyConnected'"):
        mx.sym.FullyConected  # noqa: B018


# -- Python operators -----------------------------------------------------------------

x, y = mx.sym.var("x"), mx.sym.var("y")
ARITHMETIC = [
    (lambda: x + y, "elemwise_add", "_plus", None, lambda a, b: a + b),
    (lambda: x - y, "elemwise_sub", "_minus", None, lambda a, b: a - b),
    (lambda: x * y, "elemwise_mul", "_mul", None, lambda a, b: a * b),
    (lambda: x / y, "elemwise_div", "_div", None, lambda a, b: a / b),
    (lambda: x**y, "_power", "_power", None, lambda a, b: a**b),
    (lambda: x + 2, "_plus_scalar", "_plusscalar", "2", lambda a, b: a + 2),
    (lambda: 2 + x, "_plus_scalar", "_plusscalar", "2", lambda a, b: 2 + a),
    (lambda: x - 2.0, "_minus_scalar", "_minusscalar", "2.0", lambda a, b: a - 2),
    (lambda: 2 - x, "_rminus_scalar", "_rminusscalar", "2", lambda a, b: 2 - a),
    (lambda: x * 2.5, "_mul_scalar", "_mulscalar", "2.5", lambda a, b: a * 2.5),
    (lambda: 3 * x, "_mul_scalar", "_mulscalar", "3", lambda a, b: 3 * a),
    (lambda: x / 2, "_div_scalar", "_divscalar", "2", lambda a, b: a / 2),
    (lambda: 2.0 / x, "_rdiv_scalar", "_rdivscalar", "2.0", lambda a, b: 2 / a),
    (lambda: x**2, "_power_scalar", "_powerscalar", "2", lambda a, b: a**2),
    (lambda: 2.0**x, "_rpower_scalar", "_rpower_scalar", "2.0", lambda a, b: 2**a),
    (lambda: -x, "_mul_scalar", "_mulscalar", "-1.0", lambda a, b: -a),
    (lambda: mx.sym.pow(2, x), "_rpower_scalar", "_rpowerscalar", "2", lambda a, b: 2**a),
    (
        lambda: mx.sym.maximum(x, 0.3),
        "_maximum_scalar",
        "_maximumscalar",
        "0.3",
        lambda a, b: np.maximum(a, 0.3),
    ),
]


@pytest.mark.parametrize("build, op, hint, scalar, reference", ARITHMETIC)
def test_arithmetic_ops_names_attrs_and_values(build, op, hint, scalar, reference, ctx):
    with mx.name.NameManager():
        symbol = build()
    node = _last_node(symbol)
    assert (node["op"], node["name"]) == (op, hint + "0")
    assert node.get("attrs") == (None if scalar is None else {"scalar": scalar})
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0.5, 2, (2, 3)).astype(np.float32) for _ in range(2))
    arrays = {"x": mx.nd.array(a, ctx=ctx), "y": mx.nd.array(b, ctx=ctx)}
    args = {n: arrays[n] for n in symbol.list_arguments()}
    out = symbol.bind(ctx, args).forward()[0].asnumpy()
    np.testing.assert_allclose(out, reference(a, b), rtol=1e-5, atol=1e-6)


def test_unsupported_operand_is_a_type_error():
    with pytest.raises(TypeError):
        x + "a"  # noqa: B018


# -- attributes and copies -----------------------------------------------------------


def test_attr_list_attr_and_set_attr():
    fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
    fc._set_attr(lr_mult="3", __mine__="m")
    assert fc.attr("lr_mult") == fc.attr("__lr_mult__") == "3"
    assert fc.attr("name") == "fc" and fc.attr("missing") is None
    assert fc.list_attr() == {
        "num_hidden": "3",
        "__lr_mult__": "3",
        "__mine__": "m",
        "lr_mult": "3",
    }
    assert fc.attr_dict()["fc"] == fc.list_attr()
    with pytest.raises(ValueError, match="must be a string"):
        fc._set_attr(lr_mult=3)
    with pytest.raises(ParamError, match="unknown parameter 'foo'"):
        fc._set_attr(foo="bar")  # the op re-parses, as in MXNet
    assert fc.attr("foo") is None
    with pytest.raises(DeprecationWarning):
        fc.list_attr(recursive=True)
    fc._set_attr(name="renamed")
    assert fc.name == "renamed" and fc.list_arguments()[1] == "fc_weight"


def test_attr_on_groups_and_multi_output_nodes():
    split = mx.sym.split(mx.sym.var("x"), num_outputs=3, name="sp")
    assert split.attr("num_outputs") == "3"
    group = mx.sym.Group([mx.sym.var("x"), split[0]])
    assert group.attr("num_outputs") is None
    assert group.list_attr() == {}  # the first output's node, as MXNet
    with pytest.raises(ValueError, match="one node"):
        group._set_attr(lr_mult="1")


def test_copies_are_independent():
    fc = mx.sym.FullyConnected(mx.sym.var("a"), num_hidden=2, name="fc")
    shallow, deep = copy.copy(fc), copy.deepcopy(fc)
    shallow._set_attr(lr_mult="5")
    deep._set_attr(num_hidden="7")
    assert fc.attr("lr_mult") is None and fc.attr("num_hidden") == "2"
    assert shallow.attr("lr_mult") == "5" and deep.attr("num_hidden") == "7"
    assert copy.deepcopy(fc).tojson() == fc.tojson()


def test_pickle_round_trips_through_json():
    net = _mlp()
    again = pickle.loads(pickle.dumps(net))
    assert again.tojson() == net.tojson()


# -- compose --------------------------------------------------------------------------


def test_compose_replaces_inputs_and_leaves_the_original():
    a = mx.sym.var("a")
    net = mx.sym.FullyConnected(a, num_hidden=2, name="fc")
    composed = net(a=mx.sym.var("x") * 2, name="fcx")
    assert composed.name == "fcx"
    assert composed.list_arguments() == ["x", "fc_weight", "fc_bias"]
    assert net.list_arguments() == ["a", "fc_weight", "fc_bias"] and net.name == "fc"
    assert net(mx.sym.var("y")).list_arguments() == ["y", "fc_weight", "fc_bias"]


def test_compose_errors():
    net = mx.sym.FullyConnected(mx.sym.var("a"), num_hidden=2, name="fc")
    with pytest.raises(ValueError, match="'zz' is not an input"):
        net(zz=mx.sym.var("y"))
    with pytest.raises(TypeError, match="not both"):
        net(mx.sym.var("y"), a=mx.sym.var("y"))
    with pytest.raises(TypeError, match="must be a Symbol"):
        net(a=3)


def test_errors_share_the_rebind_base():
    with pytest.raises(RebindError):
        mx.sym.FullyConnected(mx.sym.var("x"), num_hidden="abc")


def test_parameters_may_follow_inputs_positionally():
    x = mx.sym.Variable("x")
    assert mx.sym.Activation(x, "relu").list_attr() == {"act_type": "relu"}
    assert mx.sym.Reshape(x, (0, -1)).list_attr()["shape"] == "(0, -1)"
    with pytest.raises(TypeError, match="positional parameters"):
        mx.sym.Activation(x, "relu", "extra")


def test_fluent_methods_build_the_same_graph_as_functions():
    x = mx.sym.Variable("x")
    chained = x.sum(axis=1, keepdims=True).reshape((0, -1)).astype("float16")
    assert [n["op"] for n in json.loads(chained.tojson())["nodes"]] == [
        "null",
        "sum",
        "Reshape",
        "Cast",
    ]
    (arg_shape,), (out_shape,), _ = chained.infer_shape(x=(2, 3))
    assert arg_shape == (2, 3) and out_shape == (2, 1)
    assert chained.infer_type(x="float32")[1] == [np.float16]


@pytest.mark.parametrize(
    "expression, expected",
    [
        (lambda x, y: x == y, lambda a, b: a == b),
        (lambda x, y: x != y, lambda a, b: a != b),
        (lambda x, y: x > y, lambda a, b: a > b),
        (lambda x, y: x >= y, lambda a, b: a >= b),
        (lambda x, y: x < y, lambda a, b: a < b),
        (lambda x, y: x <= y, lambda a, b: a <= b),
        (lambda x, y: x > 1.5, lambda a, b: a > 1.5),
        (lambda x, y: x % y, np.mod),
        (lambda x, y: x % 3, lambda a, b: np.mod(a, 3)),
        (lambda x, y: 7 % x, lambda a, b: 7 % a),
    ],
)
def test_comparisons_and_modulo_evaluate_like_numpy(expression, expected):
    a = np.array([[1.0, 4.0], [5.0, -2.0]], dtype=np.float32)
    b = np.array([[1.0, 2.0], [6.0, -3.0]], dtype=np.float32)
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    symbol = expression(x, y)
    given = {"x": mx.nd.array(a), "y": mx.nd.array(b)}
    out = symbol.eval(**{k: v for k, v in given.items() if k in symbol.list_arguments()})[0]
    np.testing.assert_allclose(out.asnumpy(), expected(a, b).astype(np.float32))
