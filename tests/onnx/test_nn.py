"""Export of the layer operators, run in ONNX Runtime against rebind's own forward.

One test per converter family, parametrized over the attributes that change
the ONNX graph: padding, strides, groups, dilation, pooling conventions,
fix_gamma, axes, temperatures.
"""

import numpy as np
import pytest

import rebind as mx

from .harness import check_export


def random_params(net, inputs, seed=0):
    """Random arguments and aux states for every non-input of ``net`` (variances positive)."""
    rng = np.random.default_rng(seed)
    shapes = {name: value.shape for name, value in inputs.items()}
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    args = {
        name: mx.nd.array(rng.normal(size=shape).astype(np.float32))
        for name, shape in zip(net.list_arguments(), arg_shapes, strict=True)
        if name not in inputs and not name.endswith("label")
    }
    aux = {
        name: mx.nd.array(rng.uniform(0.5, 1.5, size=shape).astype(np.float32))
        for name, shape in zip(net.list_auxiliary_states(), aux_shapes, strict=True)
    }
    return args, aux


def export_and_compare(net, tmp_path, seed=0, **inputs_and_options):
    """check_export with random parameters; ``data`` etc. are inputs, the rest options."""
    inputs = {k: v for k, v in inputs_and_options.items() if isinstance(v, np.ndarray)}
    options = {k: v for k, v in inputs_and_options.items() if k not in inputs}
    args, aux = random_params(net, inputs, seed)
    return check_export(net, args, aux, inputs, tmp_path, **options)


def data(*shape, seed=1):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


# -- FullyConnected ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,flatten,no_bias",
    [
        ((3, 5), True, False),
        ((2, 3, 4), True, True),
        ((2, 3, 4), False, False),
        ((2, 4), False, True),
    ],
)
def test_fully_connected(tmp_path, shape, flatten, no_bias):
    net = mx.sym.FullyConnected(
        mx.sym.var("data"), num_hidden=6, flatten=flatten, no_bias=no_bias, name="fc"
    )
    export_and_compare(net, tmp_path, data=data(*shape))


# -- Convolution ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((2, 3, 9), {"kernel": (3,), "pad": (1,), "stride": (2,)}),
        ((2, 4, 8, 7), {"kernel": (3, 3), "pad": (1, 2), "stride": (2, 1), "dilate": (1, 2)}),
        ((1, 4, 6, 6), {"kernel": (3, 3), "num_group": 2, "no_bias": True}),
        ((1, 4, 6, 6), {"kernel": (1, 1), "num_group": 4}),  # depthwise
        ((1, 2, 5, 4, 6), {"kernel": (2, 3, 2), "pad": (1, 0, 1), "stride": (1, 2, 2)}),
    ],
)
def test_convolution(tmp_path, shape, attrs):
    net = mx.sym.Convolution(mx.sym.var("data"), num_filter=4, name="conv", **attrs)
    export_and_compare(net, tmp_path, data=data(*shape))


@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((2, 3, 5), {"kernel": (3,), "stride": (2,), "pad": (1,), "adj": (1,)}),
        ((1, 4, 4, 5), {"kernel": (3, 3), "stride": (2, 2), "num_group": 2, "no_bias": False}),
        ((1, 2, 4, 4), {"kernel": (4, 4), "stride": (2, 2), "pad": (1, 1), "dilate": (1, 1)}),
        ((1, 2, 5, 5), {"kernel": (3, 3), "stride": (2, 2), "target_shape": (10, 10)}),
        ((1, 2, 3, 3, 2), {"kernel": (2, 2, 2), "stride": (2, 1, 2), "pad": (0, 1, 0)}),
    ],
)
def test_deconvolution(tmp_path, shape, attrs):
    net = mx.sym.Deconvolution(mx.sym.var("data"), num_filter=4, name="deconv", **attrs)
    export_and_compare(net, tmp_path, data=data(*shape))


# -- Pooling ----------------------------------------------------------------------------
POOLINGS = [
    {"kernel": (3, 3), "stride": (2, 2)},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pooling_convention": "full"},
    {"kernel": (2, 3), "stride": (2, 2), "pad": (1, 1), "count_include_pad": False},
    {"kernel": (3, 2), "stride": (3, 2), "pooling_convention": "full"},
    {"kernel": (2, 2), "pad": (1, 0), "count_include_pad": True},
]


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("attrs", POOLINGS)
def test_pooling_2d(tmp_path, pool_type, attrs):
    net = mx.sym.Pooling(mx.sym.var("data"), pool_type=pool_type, name="pool", **attrs)
    export_and_compare(net, tmp_path, data=data(2, 3, 7, 8))


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum", "lp"])
@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((2, 3, 9), {"kernel": (3,), "stride": (2,), "pad": (1,)}),
        ((2, 3, 10), {"kernel": (3,), "stride": (3,), "pooling_convention": "same"}),
        ((1, 2, 5, 4, 6), {"kernel": (2, 2, 3), "stride": (2, 1, 2), "pooling_convention": "full"}),
    ],
)
def test_pooling_1d_3d(tmp_path, pool_type, shape, attrs):
    extra = {"p_value": 2} if pool_type == "lp" else {}
    net = mx.sym.Pooling(mx.sym.var("data"), pool_type=pool_type, name="pool", **attrs, **extra)
    export_and_compare(net, tmp_path, data=data(*shape), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p_value", [1, 2, 3])
@pytest.mark.parametrize("global_pool", [False, True])
def test_lp_pooling(tmp_path, p_value, global_pool):
    net = mx.sym.Pooling(
        mx.sym.var("data"),
        kernel=(2, 2),
        stride=(2, 2),
        pool_type="lp",
        p_value=p_value,
        global_pool=global_pool,
    )
    x = np.abs(data(2, 3, 6, 6)) + 0.1 if p_value == 3 else data(2, 3, 6, 6)
    export_and_compare(net, tmp_path, data=x, atol=1e-5)


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 2)])
def test_global_pooling(tmp_path, pool_type, shape):
    net = mx.sym.Pooling(mx.sym.var("data"), kernel=(1,), global_pool=True, pool_type=pool_type)
    export_and_compare(net, tmp_path, data=data(*shape), atol=1e-5)


# -- BatchNorm and the other normalizations --------------------------------------------
@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((4, 3, 5, 5), {}),  # fix_gamma=True by default: gamma counts as 1
        ((4, 3, 5, 5), {"fix_gamma": False, "eps": 1e-5}),
        ((4, 3), {"fix_gamma": False, "use_global_stats": True}),
        ((2, 3, 4), {"fix_gamma": False, "axis": -1}),
        ((2, 3, 4, 5), {"fix_gamma": False, "axis": 2}),
    ],
)
def test_batch_norm(tmp_path, shape, attrs):
    net = mx.sym.BatchNorm(mx.sym.var("data"), name="bn", **attrs)
    export_and_compare(net, tmp_path, data=data(*shape) * 3 + 1)


def test_batch_norm_output_mean_var(tmp_path):
    net = mx.sym.BatchNorm(mx.sym.var("data"), fix_gamma=False, output_mean_var=True, name="bn")
    model = export_and_compare(net, tmp_path, data=data(4, 3, 2, 2))
    assert [o.name for o in model.graph.output] == net.list_outputs()


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 4)])
def test_instance_norm(tmp_path, shape):
    net = mx.sym.InstanceNorm(mx.sym.var("data"), eps=1e-4, name="inorm")
    export_and_compare(net, tmp_path, data=data(*shape), atol=1e-5)


@pytest.mark.parametrize("axis,output_mean_var", [(-1, False), (1, True), (0, False)])
def test_layer_norm(tmp_path, axis, output_mean_var):
    net = mx.sym.LayerNorm(mx.sym.var("data"), axis=axis, output_mean_var=output_mean_var)
    export_and_compare(net, tmp_path, data=data(3, 4, 5), atol=1e-5)


@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
def test_l2_normalization(tmp_path, mode):
    net = mx.sym.L2Normalization(mx.sym.var("data"), mode=mode)
    export_and_compare(net, tmp_path, data=data(2, 3, 4, 2))


@pytest.mark.parametrize("nsize,knorm", [(3, 2.0), (5, 1.0)])
def test_lrn(tmp_path, nsize, knorm):
    net = mx.sym.LRN(mx.sym.var("data"), nsize=nsize, knorm=knorm, alpha=1e-3, beta=0.75)
    export_and_compare(net, tmp_path, data=data(2, 6, 3, 3))


# -- activations ---------------------------------------------------------------------------
@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation(tmp_path, act_type):
    net = mx.sym.Activation(mx.sym.var("data"), act_type=act_type)
    export_and_compare(net, tmp_path, data=data(3, 4) * 3)


@pytest.mark.parametrize(
    "attrs",
    [
        {"act_type": "leaky", "slope": 0.1},
        {"act_type": "elu", "slope": 0.7},
        {"act_type": "selu"},
        {"act_type": "gelu"},
        {"act_type": "rrelu", "lower_bound": 0.1, "upper_bound": 0.3},
    ],
)
def test_leaky_relu(tmp_path, attrs):
    net = mx.sym.LeakyReLU(mx.sym.var("data"), **attrs)
    export_and_compare(net, tmp_path, data=data(3, 4, 2) * 2)


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (3, 5)])
def test_prelu(tmp_path, shape):
    net = mx.sym.LeakyReLU(mx.sym.var("data"), act_type="prelu", name="prelu")
    export_and_compare(net, tmp_path, data=data(*shape))


def test_dropout_is_identity_at_inference(tmp_path):
    net = mx.sym.Dropout(mx.sym.var("data"), p=0.5, axes=(1,))
    model = export_and_compare(net, tmp_path, data=data(3, 4))
    assert [n.op_type for n in model.graph.node] == ["Identity"]


def test_embedding_clips_and_truncates_indices(tmp_path):
    net = mx.sym.Embedding(mx.sym.var("data"), input_dim=5, output_dim=3, name="embed")
    indices = np.array([[0, 1.7, 4], [7, -2, 3.2]], dtype=np.float32)
    export_and_compare(net, tmp_path, data=indices)


# -- softmax -----------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("attrs", [{}, {"axis": 1, "temperature": 2.5}, {"axis": 0}])
def test_softmax_family(tmp_path, op, attrs):
    net = getattr(mx.sym, op)(mx.sym.var("data"), **attrs)
    export_and_compare(net, tmp_path, data=data(2, 3, 4) * 3)


def test_softmax_dtype_output(tmp_path):
    net = mx.sym.softmax(mx.sym.var("data"), dtype="float64")
    model = export_and_compare(net, tmp_path, data=data(2, 5))
    assert model.graph.output[0].type.tensor_type.elem_type == 11  # DOUBLE


@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((3, 5), {}),
        ((2, 3, 4), {}),  # rows of the (N, -1) view
        ((2, 3, 4), {"multi_output": True}),
        ((2, 3, 4), {"preserve_shape": True}),
    ],
)
def test_softmax_output(tmp_path, shape, attrs):
    net = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="softmax", **attrs)
    model = export_and_compare(net, tmp_path, data=data(*shape))
    assert [i.name for i in model.graph.input] == ["data"]  # the label is not an input


@pytest.mark.parametrize("mode", ["instance", "channel"])
def test_softmax_activation(tmp_path, mode):
    net = mx.sym.SoftmaxActivation(mx.sym.var("data"), mode=mode)
    export_and_compare(net, tmp_path, data=data(2, 3, 4))


@pytest.mark.parametrize(
    "op,shape,attrs,length",
    [
        ("softmax", (3, 5), {}, np.array([0, 2.5, 7], np.float32)),  # empty, partial, whole
        ("softmax", (3, 5), {}, np.array([1, 5, 3], np.int32)),
        ("softmax", (2, 4, 3), {"axis": 1}, np.array([[4, 0, 1], [2, 3, 4]], np.float32)),
        ("log_softmax", (3, 4), {}, np.array([0, 1, 4], np.int64)),
        ("softmin", (2, 3, 4), {"temperature": 2.0}, np.array([[1, 2, 3], [4, 0, 2]], "f4")),
        ("softmax", (6,), {"axis": 0}, np.array([4], np.float32)),
    ],
)
def test_softmax_with_length(tmp_path, op, shape, attrs, length):
    net = getattr(mx.sym, op)(mx.sym.var("data"), mx.sym.var("length"), use_length=True, **attrs)
    export_and_compare(net, tmp_path, data=data(*shape) * 3, length=length)


# -- UpSampling ----------------------------------------------------------------------------
def test_upsampling_nearest(tmp_path):
    net = mx.sym.UpSampling(mx.sym.var("data"), scale=2, sample_type="nearest", num_args=1)
    export_and_compare(net, tmp_path, data=data(1, 2, 3, 4))


@pytest.mark.parametrize("scale", [2, 3])
def test_upsampling_bilinear(tmp_path, scale):
    net = mx.sym.UpSampling(
        mx.sym.var("data"), scale=scale, sample_type="bilinear", num_filter=2, num_args=2
    )
    export_and_compare(net, tmp_path, data=data(1, 2, 3, 4), dynamic=True)


@pytest.mark.parametrize("mode", ["concat", "sum"])
def test_upsampling_several_inputs(tmp_path, mode):
    net = mx.sym.UpSampling(
        mx.sym.var("a"),
        mx.sym.var("b"),
        scale=2,
        sample_type="nearest",
        num_args=2,
        multi_input_mode=mode,
    )
    export_and_compare(net, tmp_path, a=data(1, 2, 2, 3), b=data(1, 2, 4, 6, seed=2))
