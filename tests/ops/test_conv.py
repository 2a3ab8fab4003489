"""Convolution and Deconvolution: golden cases, a direct reference, gradients, inference."""

import itertools

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext, conv_utils
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("Convolution", "Deconvolution"))
def test_golden(case_id, ctx):
    # deconv2d_target_shape was recorded with MXNet's native CPU kernels (its oneDNN
    # kernel fails on that case); it is a valid reference all the same.
    replay_golden(case_id, ctx)


# -- a direct (slow, obviously right) reference ---------------------------------


def _reference_conv(x, w, b, stride, dilate, pad, groups):
    """Cross-correlation by explicit loops over output positions (NumPy, float64)."""
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    f, cg = w.shape[0], w.shape[1]
    extent = [d * (k - 1) + 1 for k, d in zip(w.shape[2:], dilate, strict=True)]
    out_size = [(n - e) // s + 1 for n, e, s in zip(x.shape[2:], extent, stride, strict=True)]
    out = np.zeros((x.shape[0], f, *out_size))
    fg = f // groups
    for pos in itertools.product(*map(range, out_size)):
        index = tuple(
            slice(o * s, o * s + e, d)
            for o, s, e, d in zip(pos, stride, extent, dilate, strict=True)
        )
        patch = x[(slice(None), slice(None), *index)]
        for g in range(groups):
            part = patch[:, g * cg : (g + 1) * cg].reshape(x.shape[0], -1)
            out[(slice(None), slice(g * fg, (g + 1) * fg), *pos)] = (
                part @ w[g * fg : (g + 1) * fg].reshape(fg, -1).T
            )
    if b is not None:
        out += b.reshape(1, -1, *(1,) * nd)
    return out


def _run(ctx, op_name, attrs, inputs, is_train=True):
    op = opdef(op_name)
    params = op.parse(attrs)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, saved = op.forward(OpContext(is_train, ctx.backend, ctx.device_id), params, arrays, [])
    return np.asarray(ctx.backend.to_host(outs[0])), saved, params


CONV_VARIANTS = [
    ((2, 3, 9), (4, 3, 3), dict(stride=(2,), pad=(1,))),
    ((2, 3, 21), (4, 3, 3), dict(dilate=(2,))),  # long rows: the (C, N, W) layout
    ((2, 4, 6, 7), (6, 2, 3, 2), dict(stride=(2, 1), pad=(1, 0), groups=2)),
    ((2, 3, 5, 20), (2, 3, 2, 3), dict(dilate=(2, 1), pad=(1, 1))),
    ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), pad=(1, 0, 1))),
    ((2, 3, 4, 4), (3, 1, 3, 3), dict(pad=(1, 1), groups=3)),  # depthwise
]


def _conv_attrs(w_shape, opts):
    nd = len(w_shape) - 2
    attrs = {
        "kernel": str(tuple(w_shape[2:])),
        "num_filter": str(w_shape[0]),
        "num_group": str(opts.get("groups", 1)),
    }
    for name in ("stride", "dilate", "pad"):
        if name in opts:
            attrs[name] = str(tuple(opts[name]))
    return attrs, [
        opts.get("stride", (1,) * nd),
        opts.get("dilate", (1,) * nd),
        opts.get("pad", (0,) * nd),
        opts.get("groups", 1),
    ]


@pytest.mark.parametrize("x_shape, w_shape, opts", CONV_VARIANTS)
def test_convolution_matches_direct_reference(x_shape, w_shape, opts, ctx):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    b = rng.standard_normal(w_shape[0])
    attrs, geometry = _conv_attrs(w_shape, opts)
    out, _, _ = _run(ctx, "Convolution", attrs, [x, w, b])
    np.testing.assert_allclose(out, _reference_conv(x, w, b, *geometry), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("x_shape, w_shape, opts", CONV_VARIANTS)
def test_convolution_numeric_gradient(x_shape, w_shape, opts, ctx):
    rng = np.random.default_rng(4)
    attrs, _ = _conv_attrs(w_shape, opts)
    inputs = [
        rng.standard_normal(x_shape),
        rng.standard_normal(w_shape),
        rng.standard_normal(w_shape[0]),
    ]
    check_numeric_gradient("Convolution", attrs, inputs, ctx)


def test_convolution_without_bias_numeric_gradient(ctx):
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((2, 2, 4, 5)), rng.standard_normal((3, 2, 2, 2))]
    check_numeric_gradient(
        "Convolution", {"kernel": "(2, 2)", "num_filter": "3", "no_bias": "True"}, inputs, ctx
    )


def _deconv_reference(x, w, attrs, ctx, pad):
    """A deconvolution is the data gradient of the matching convolution."""
    conv = opdef("Convolution")
    conv_attrs = {k: v for k, v in attrs.items() if k in ("kernel", "stride", "dilate", "pad")}
    conv_attrs.update({"pad": pad} if pad else {})
    out_shape = _run(ctx, "Deconvolution", attrs, [x, w])[0].shape
    groups = int(attrs.get("num_group", 1))
    conv_attrs.update(num_filter=str(x.shape[1]), num_group=str(groups), no_bias="True")
    params = conv.parse(conv_attrs)
    xp = ctx.backend.xp
    probe = xp.zeros(out_shape)
    weight = ctx.backend.asarray(w, w.dtype, ctx.device_id)
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    _, saved = conv.forward(op_ctx, params, [probe, weight], [])
    head = ctx.backend.asarray(x, x.dtype, ctx.device_id)
    return np.asarray(
        ctx.backend.to_host(conv.backward(op_ctx, params, saved, [head], [True, False])[0])
    )


DECONV_VARIANTS = [  # data, weight, attrs, pad of the matching convolution if derived
    (
        (2, 3, 4),
        (3, 2, 3),
        {"kernel": "(3,)", "stride": "(2,)", "pad": "(1,)", "adj": "(1,)"},
        None,
    ),
    ((2, 4, 3, 3), (4, 1, 3, 2), {"kernel": "(3, 2)", "stride": "(2, 1)", "num_group": "2"}, None),
    ((1, 2, 3, 9), (2, 2, 2, 3), {"kernel": "(2, 3)", "dilate": "(2, 2)", "pad": "(1, 1)"}, None),
    ((1, 2, 2, 3, 2), (2, 2, 2, 2, 2), {"kernel": "(2, 2, 2)", "stride": "(2, 1, 2)"}, None),
    # target (7, 8) from (3, 4): 2*2+4-7 = 1 -> pad 1, adj 1; 2*3+4-8 = 2 -> pad 1, adj 0
    (
        (2, 2, 3, 4),
        (2, 3, 4, 4),
        {"kernel": "(4, 4)", "stride": "(2, 2)", "target_shape": "(7, 8)"},
        "(1, 1)",
    ),
    ((1, 2, 17), (2, 2, 3), {"kernel": "(3,)", "stride": "(2,)"}, None),  # long rows
]


@pytest.mark.parametrize("x_shape, w_shape, attrs, conv_pad", DECONV_VARIANTS)
def test_deconvolution_is_the_convolution_data_gradient(x_shape, w_shape, attrs, conv_pad, ctx):
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    attrs = {"num_filter": str(w_shape[1] * int(attrs.get("num_group", 1))), **attrs}
    out = _run(ctx, "Deconvolution", attrs, [x, w])[0]
    np.testing.assert_allclose(
        out, _deconv_reference(x, w, attrs, ctx, conv_pad), rtol=1e-10, atol=1e-10
    )


@pytest.mark.parametrize("x_shape, w_shape, attrs, conv_pad", DECONV_VARIANTS)
def test_deconvolution_numeric_gradient(x_shape, w_shape, attrs, conv_pad, ctx):
    rng = np.random.default_rng(7)
    filters = w_shape[1] * int(attrs.get("num_group", 1))
    attrs = {"num_filter": str(filters), "no_bias": "False", **attrs}
    inputs = [
        rng.standard_normal(x_shape),
        rng.standard_normal(w_shape),
        rng.standard_normal(filters),
    ]
    check_numeric_gradient("Deconvolution", attrs, inputs, ctx)


# -- kernels: layouts, modes, dtypes --------------------------------------------


@pytest.mark.parametrize("batch_last", [True, False])
@pytest.mark.parametrize("use_view", [True, False])
def test_col2im_is_the_adjoint_of_im2col(batch_last, use_view, ctx):
    rng, xp = np.random.default_rng(8), ctx.backend.xp
    window = conv_utils.Window((2, 3), (2, 1), (1, 2), (1, 2), (5, 6), (3, 6))
    shape = (3, 5, 6, 2) if batch_last else (3, 2, 5, 6)
    x = rng.standard_normal(shape)
    cols = conv_utils.im2col(xp, xp.asarray(x), window, batch_last, use_view)
    im2col_host = np.asarray(ctx.backend.to_host(cols))
    probe = rng.standard_normal(im2col_host.shape)
    back = conv_utils.col2im(xp, xp.asarray(probe), window, 3, 2, batch_last)
    back = np.asarray(ctx.backend.to_host(back))
    np.testing.assert_allclose(np.sum(im2col_host * probe), np.sum(x * back), rtol=1e-12)


@pytest.mark.parametrize("batch_last", [True, False])
def test_col2im_of_kernel_major_rows_gives_the_same_sums(batch_last):
    """Rows ordered (kernel offset, channel): the same additions, so the same bits."""
    rng = np.random.default_rng(10)
    window = conv_utils.Window((2, 3), (2, 1), (1, 2), (1, 2), (5, 6), (3, 6))
    channels, batch = 3, 2
    rows = channels * 6
    cols = rng.standard_normal((rows, 3 * 6 * batch)).astype(np.float32)
    reordered = cols.reshape(channels, 6, -1).transpose(1, 0, 2).reshape(rows, -1)
    plain = conv_utils.col2im(np, cols, window, channels, batch, batch_last)
    major = conv_utils.col2im(np, reordered.copy(), window, channels, batch, batch_last, True)
    np.testing.assert_array_equal(major, plain)


def test_im2col_without_stride_tricks_matches_the_strided_view(ctx):
    rng, xp = np.random.default_rng(9), ctx.backend.xp
    window = conv_utils.Window((3,), (2,), (2,), (1,), (9,), (3,))
    x = xp.asarray(rng.standard_normal((2, 9, 4)))
    fast = conv_utils.im2col(xp, x, window, True)
    slow = conv_utils.im2col(xp, x, window, True, use_view=False)
    np.testing.assert_array_equal(ctx.backend.to_host(fast), ctx.backend.to_host(slow))


def test_backward_after_inference_forward_and_twice(ctx):
    rng = np.random.default_rng(10)
    x, w, b = (rng.standard_normal(s) for s in ((2, 3, 6, 6), (4, 3, 3, 3), (4,)))
    attrs = {"kernel": "(3, 3)", "num_filter": "4", "pad": "(1, 1)"}
    head = ctx.backend.asarray(rng.standard_normal((2, 4, 6, 6)), np.float64, ctx.device_id)
    op, op_ctx = opdef("Convolution"), OpContext(True, ctx.backend, ctx.device_id)
    results = []
    for is_train in (True, False):
        _, saved, params = _run(ctx, "Convolution", attrs, [x, w, b], is_train=is_train)
        for _ in range(2):  # a second backward must not see reused column memory
            grads = op.backward(op_ctx, params, saved, [head], [True, True, True])
            results.append([np.asarray(ctx.backend.to_host(g)) for g in grads])
    for other in results[1:]:
        for got, want in zip(other, results[0], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_backward_never_writes_over_the_inputs(ctx):
    # kernel (2, 1) dilated by 2 on height 4 makes the columns a plain reshape of a
    # batch of one: backward must not reuse that memory for its own columns.
    rng = np.random.default_rng(12)
    x, w = rng.standard_normal((1, 2, 4, 3)), rng.standard_normal((2, 2, 2, 1))
    attrs = {"kernel": "(2, 1)", "dilate": "(2, 1)", "num_filter": "2", "no_bias": "True"}
    op, op_ctx = opdef("Convolution"), OpContext(True, ctx.backend, ctx.device_id)
    params = op.parse(attrs)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in (x, w)]
    outs, saved = op.forward(op_ctx, params, arrays, [])
    head = ctx.backend.xp.ones_like(outs[0])
    first = [
        ctx.backend.to_host(g) for g in op.backward(op_ctx, params, saved, [head], [True, True])
    ]
    second = [
        ctx.backend.to_host(g) for g in op.backward(op_ctx, params, saved, [head], [True, True])
    ]
    np.testing.assert_array_equal(ctx.backend.to_host(arrays[0]), x)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def test_float16_computes_in_float32_and_keeps_dtype(ctx):
    rng = np.random.default_rng(11)
    x, w, b = (
        rng.standard_normal(s).astype(np.float16) for s in ((2, 3, 6, 6), (4, 3, 3, 3), (4,))
    )
    attrs = {"kernel": "(3, 3)", "num_filter": "4"}
    out16, saved, params = _run(ctx, "Convolution", attrs, [x, w, b])
    out32 = _run(ctx, "Convolution", attrs, [a.astype(np.float32) for a in (x, w, b)])[0]
    assert out16.dtype == np.float16
    np.testing.assert_allclose(out16, out32, rtol=2e-2, atol=2e-2)
    head = ctx.backend.xp.ones(out16.shape, dtype=np.float16)
    grads = opdef("Convolution").backward(
        OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True, True, True]
    )
    assert [g.dtype for g in grads] == [np.float16] * 3


# -- shape inference -------------------------------------------------------------


def test_convolution_infers_weight_bias_and_output():
    ins, outs, _ = infer(
        "Convolution",
        {
            "kernel": "(3, 3)",
            "num_filter": "8",
            "num_group": "2",
            "stride": "(2, 2)",
            "pad": "(1, 1)",
        },
        [(4, 6, 9, 10), None, None],
    )
    assert ins == [(4, 6, 9, 10), (8, 3, 3, 3), (8,)] and outs == [(4, 8, 5, 5)]
    ins, outs, _ = infer(
        "Convolution",
        {"kernel": "(2,)", "num_filter": "3", "dilate": "(3,)", "no_bias": "True"},
        [(2, 5, 11), None],
    )
    assert ins == [(2, 5, 11), (3, 5, 2)] and outs == [(2, 3, 8)]


def test_convolution_learns_batch_sizes_and_channels_backwards():
    ins, outs, _ = infer(
        "Convolution",
        {"kernel": "(3, 3)", "num_filter": "4"},
        [(0, 0, 0, 7), (4, 3, 3, 3), None],
        out_shapes=[(5, 4, 6, 5)],
    )
    assert ins[0] == (5, 3, 8, 7) and outs == [(5, 4, 6, 5)]
    ins, _, _ = infer(
        "Convolution",
        {"kernel": "(3,)", "num_filter": "4", "stride": "(2,)"},
        [(0, 3, 0), None, None],
        out_shapes=[(5, 4, 6)],
    )
    assert ins[0] == (5, 3, 0)  # a strided size cannot be recovered


def test_convolution_without_data_shape_only_fills_bias():
    ins, outs, _ = infer("Convolution", {"kernel": "(3, 3)", "num_filter": "4"}, [None, None, None])
    assert ins == [None, None, (4,)] and outs == [None]


@pytest.mark.parametrize(
    "attrs, shapes, fragments",
    [
        (
            {"kernel": "(3, 3)", "num_filter": "4"},
            [(2, 3, 5, 5), (4, 2, 3, 3), None],
            ["'weight'", "(4, 2, 3, 3)", "(4, 3, 3, 3)"],
        ),
        (
            {"kernel": "(3, 3)", "num_filter": "4"},
            [(2, 3, 5), None, None],
            ["'data'", "(2, 3, 5)", "4-D"],
        ),
        (
            {"kernel": "(3, 3)", "num_filter": "4", "num_group": "2"},
            [(2, 3, 5, 5), None, None],
            ["'data'", "num_group=2"],
        ),
        (
            {"kernel": "(3, 3)", "num_filter": "4", "dilate": "(2, 2)"},
            [(2, 3, 4, 9), None, None],
            ["'data'", "exceeds"],
        ),
        ({"kernel": "(3,)", "num_filter": "4"}, [(2, 3, 5), None, (5,)], ["'bias'", "(4,)"]),
    ],
)
def test_convolution_shape_errors_name_node_argument_and_shapes(attrs, shapes, fragments):
    with pytest.raises(ShapeError) as info:
        infer("Convolution", attrs, shapes)
    message = str(info.value)
    assert "node0" in message
    for fragment in fragments:
        assert fragment in message


def test_deconvolution_infers_weight_and_output():
    ins, outs, _ = infer(
        "Deconvolution",
        {
            "kernel": "(3, 3)",
            "num_filter": "6",
            "num_group": "2",
            "stride": "(2, 2)",
            "pad": "(1, 1)",
            "adj": "(1, 0)",
        },
        [(2, 4, 5, 6), None],
    )
    assert ins == [(2, 4, 5, 6), (4, 3, 3, 3)] and outs == [(2, 6, 10, 11)]
    ins, outs, _ = infer(
        "Deconvolution",
        {
            "kernel": "(4, 4)",
            "num_filter": "2",
            "stride": "(2, 2)",
            "target_shape": "(9, 12)",
            "no_bias": "False",
        },
        [(1, 3, 5, 6), None, None],
    )
    assert ins[1:] == [(3, 2, 4, 4), (2,)] and outs == [(1, 2, 9, 12)]


def test_deconvolution_rejects_unreachable_target_shape():
    with pytest.raises(ShapeError, match="target_shape"):
        infer(
            "Deconvolution",
            {"kernel": "(2,)", "num_filter": "2", "target_shape": "(20,)"},
            [(1, 3, 5), None],
        )


@pytest.mark.parametrize(
    "op_name, attrs, fragment",
    [
        ("Convolution", {"num_filter": "2"}, "required parameter 'kernel'"),
        ("Convolution", {"kernel": "(3, 3)"}, "required parameter 'num_filter'"),
        ("Convolution", {"kernel": "(3, 3)", "num_filter": "0"}, "num_filter must be positive"),
        (
            "Convolution",
            {"kernel": "(3, 3)", "num_filter": "3", "num_group": "2"},
            "multiple of num_group",
        ),
        (
            "Convolution",
            {"kernel": "(3, 3)", "num_filter": "3", "stride": "(1,)"},
            "stride=(1,) is invalid",
        ),
        (
            "Convolution",
            {"kernel": "(3, 3)", "num_filter": "3", "stride": "(0, 1)"},
            "stride=(0, 1) is invalid",
        ),
        ("Convolution", {"kernel": "(3, 3, 3, 3)", "num_filter": "3"}, "kernel="),
        (
            "Convolution",
            {"kernel": "(3,)", "num_filter": "3", "cudnn_tune": "slow"},
            "cudnn_tune='slow'",
        ),
        (
            "Convolution",
            {"kernel": "(3,)", "num_filter": "3", "layout": "NCHW"},
            "layout='NCHW' is invalid",
        ),
        (
            "Deconvolution",
            {"kernel": "(3,)", "num_filter": "3", "stride": "(2,)", "adj": "(2,)"},
            "adj=(2,) is invalid",
        ),
    ],
)
def test_bad_params(op_name, attrs, fragment):
    with pytest.raises(ParamError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        opdef(op_name).parse(attrs)


@pytest.mark.parametrize("op_name", ["Convolution", "Deconvolution"])
def test_channel_last_layout_is_not_implemented(op_name):
    with pytest.raises(NotImplementedError, match="NHWC"):
        opdef(op_name).parse({"kernel": "(3, 3)", "num_filter": "2", "layout": "NHWC"})


def test_defaults_and_argument_names():
    conv, deconv = opdef("Convolution"), opdef("Deconvolution")
    params = conv.parse(
        {
            "kernel": "(3, 3)",
            "num_filter": "2",
            "cudnn_tune": "fastest",
            "workspace": "512",
            "cudnn_off": "True",
            "layout": "NCHW",
        }
    )
    assert conv.arguments(params) == ("data", "weight", "bias") and params.workspace == 512
    params = deconv.parse({"kernel": "(3,)", "num_filter": "2"})
    assert params.no_bias and deconv.arguments(params) == ("data", "weight")
    assert conv.outputs(params) == ("output",) and conv.num_hidden(params) == 0
