"""What the tests of the convolution kernel libraries share (test_conv_ort, _torch, _dnnl).

``run_conv`` runs one Convolution's forward (training) and the asked
gradients through the operator, so whichever kernels ``REBIND_CONV_KERNELS``
picks; ``use_kernels`` sets that variable (otherwise read once); ``SHAPES``
covers strides, padding, dilation, groups, depthwise, 1x1, batch 1, 1-D and 3-D.
"""

import numpy as np
import pytest

from rebind.ops import OpContext, conv_ort, dnnl_lib
from tests.conftest import BACKEND_CONTEXTS
from tests.ops.harness import assert_close, opdef

CPU = BACKEND_CONTEXTS["numpy"]
# (data shape, num_filter, attributes)
SHAPES = [
    ((2, 3, 9, 9), 4, {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}),
    ((1, 4, 10, 11), 6, {"kernel": (3, 2), "stride": (2, 3), "dilate": (2, 1), "pad": (1, 0)}),
    ((2, 4, 8, 7), 6, {"kernel": (3, 3), "pad": (2, 1), "num_group": 2}),
    ((3, 6, 8, 8), 6, {"kernel": (3, 3), "pad": (1, 1), "num_group": 6}),
    ((2, 8, 7, 7), 16, {"kernel": (1, 1), "stride": (2, 2)}),
    ((2, 5, 13), 3, {"kernel": (4,), "stride": (3,), "dilate": (2,), "pad": (1,)}),
    ((2, 2, 5, 6, 7), 3, {"kernel": (2, 3, 2), "stride": (2, 1, 2), "pad": (1, 0, 1)}),
    ((1, 3, 30, 30), 8, {"kernel": (7, 7), "stride": (2, 2), "pad": (3, 3)}),
]
# tests of oneDNN's kernels: skipped with the loader's reason where the library did not load
needs_onednn = pytest.mark.skipif(
    dnnl_lib.library() is None, reason=f"oneDNN did not load: {dnnl_lib.missing_reason()}"
)
# input layouts: MXNet's, a view with the last two axes' strides swapped, channels last
LAYOUTS = ("plain", "transposed", "channels_last")


def use_kernels(monkeypatch, setting):
    """Set ``REBIND_CONV_KERNELS`` for the rest of the test."""
    monkeypatch.setenv(conv_ort.KERNELS_VARIABLE, setting)
    conv_ort.kernels_setting.cache_clear()


def in_layout(x, layout):
    """``x`` with the same values, laid out in memory as ``layout`` says."""
    if layout == "transposed":
        return np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    if layout == "channels_last":
        return np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    return x


def run_conv(shape, filters, attrs, no_bias, layout="plain", dtype=np.float32, need=None, ctx=CPU):
    """Output and the asked gradients (None for the others) of one Convolution, host arrays."""
    rng = np.random.default_rng(31)
    op = opdef("Convolution")
    params = op.parse({**attrs, "num_filter": filters, "no_bias": no_bias})
    groups = attrs.get("num_group", 1)
    x = in_layout(rng.standard_normal(shape).astype(dtype), layout)
    w = rng.standard_normal((filters, shape[1] // groups, *attrs["kernel"])).astype(dtype)
    inputs = [x, w] + ([] if no_bias else [rng.standard_normal(filters).astype(dtype)])
    backend, device = ctx.backend, ctx.device_id
    arrays = [backend.asarray(a, a.dtype, device) if layout == "plain" else a for a in inputs]
    op_ctx = OpContext(True, backend, device)
    outs, saved = op.forward(op_ctx, params, arrays, [])
    head = in_layout(rng.standard_normal(outs[0].shape).astype(dtype), layout)
    if layout == "plain":
        head = backend.asarray(head, dtype, device)
    need = [True] * len(inputs) if need is None else need
    grads = op.backward(op_ctx, params, saved, [head], need)
    return [None if a is None else np.asarray(backend.to_host(a)) for a in (outs[0], *grads)]


def recording(monkeypatch, module, names):
    """The names of ``module``'s functions ``names`` called during the test, in order."""
    calls = []
    for name in names:
        kernel = getattr(module, name)
        monkeypatch.setattr(module, name, _recorded(calls, name, kernel))
    return calls


def _recorded(calls, name, kernel):
    def run(*args, **kwargs):
        calls.append(name)
        return kernel(*args, **kwargs)

    return run


def check_only_the_asked_gradients(use, setting, need):
    """Under ``setting`` (``use`` sets it) the asked gradients match NumPy's, the others None."""
    shape, filters, attrs = SHAPES[2]
    use("numpy")
    expected = run_conv(shape, filters, attrs, False, need=need)
    use(setting)
    actual = run_conv(shape, filters, attrs, False, need=need)
    for asked, a, e in zip([True, *need], actual, expected, strict=True):
        assert (a is None) == (not asked)
        if asked:
            assert_close(a, e, "gradient")


def check_other_dtypes_run_numpy(use, setting, dtype, calls):
    """Under ``setting``, ``dtype`` convolutions run NumPy's kernels (no ``calls``), bit for bit."""
    shape, filters, attrs = SHAPES[0]
    use("numpy")
    expected = run_conv(shape, filters, attrs, False, dtype=dtype)
    use(setting)
    actual = run_conv(shape, filters, attrs, False, dtype=dtype)
    assert calls == []
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)
