"""count_sketch, fft, ifft and hawkesll (mx.contrib)."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("_contrib_hawkesll"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs, is_train=True):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(
        OpContext(is_train, ctx.backend, ctx.device_id), op.parse(attrs), arrays, []
    )
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def test_count_sketch_by_definition(ctx):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 2, 4, 6))
    h = rng.integers(0, 5, (1, 6)).astype(np.float64)
    s = rng.choice([-1.0, 1.0], (1, 6))
    (out,) = _run(ctx, "_contrib_count_sketch", {"out_dim": 5}, [data, h, s])
    want = np.zeros((3, 2, 4, 5))
    for i in range(6):
        want[..., int(h[0, i])] += s[0, i] * data[..., i]
    np.testing.assert_allclose(out, want, atol=1e-12)
    check_numeric_gradient(
        "_contrib_count_sketch", {"out_dim": 5}, [data[0, 0], h, s], ctx, grad_args=[0]
    )


def test_count_sketch_rejects_bad_buckets(ctx):
    data, h, s = np.ones((2, 3)), np.array([[0.0, 1.0, 4.0]]), np.ones((1, 3))
    with pytest.raises(ValueError, match=r"out_dim=4"):
        _run(ctx, "_contrib_count_sketch", {"out_dim": 4}, [data, h, s])


@pytest.mark.parametrize("shape", [(3, 8), (2, 1, 3, 5)])
def test_fft_interleaves_numpy_fft(ctx, shape):
    data = np.random.default_rng(1).standard_normal(shape)
    (out,) = _run(ctx, "_contrib_fft", {}, [data])
    spectrum = np.fft.fft(data, axis=-1)
    want = np.stack([spectrum.real, spectrum.imag], axis=-1).reshape(*shape[:-1], -1)
    np.testing.assert_allclose(out, want, atol=1e-12)
    (back,) = _run(ctx, "_contrib_ifft", {}, [out])
    np.testing.assert_allclose(back, data * shape[-1], atol=1e-12)  # unnormalised, as cuFFT


@pytest.mark.parametrize("name", ["_contrib_fft", "_contrib_ifft"])
def test_fft_numeric_gradient(ctx, name):
    data = np.random.default_rng(2).standard_normal((2, 6))
    check_numeric_gradient(name, {}, [data], ctx)


def test_fft_shapes_and_errors():
    assert infer("_contrib_fft", {}, [(2, 3, 4, 5)])[1] == [(2, 3, 4, 10)]
    assert infer("_contrib_ifft", {}, [(3, 10)])[1] == [(3, 5)]
    with pytest.raises(ShapeError, match=r"_contrib_fft.*'data'.*\(2, 3, 4\).*2-D"):
        infer("_contrib_fft", {}, [(2, 3, 4)])
    with pytest.raises(ShapeError, match=r"_contrib_count_sketch.*'h'.*\(1, 4\)"):
        infer("_contrib_count_sketch", {"out_dim": 3}, [(2, 5), (1, 4), None])


def _hawkes_inputs():
    # MXNet's test_contrib_hawkesll.py::test_hawkesll_backward_correct
    mu = np.tile(np.array([1.5, 2.0, 3.0]), (2, 1))
    lags = np.array([[6, 7, 8, 9, 3, 2, 5, 1, 7], [1, 2, 3, 4, 2, 1, 2, 1, 4]], np.float64)
    marks = np.array([[0, 0, 0, 1, 0, 0, 1, 2, 0], [1, 2, 0, 0, 0, 2, 2, 1, 0]], np.int32)
    return [
        mu,
        np.array([0.2, 0.3, 0.4]),
        np.array([2.0, 2.0, 2.0]),
        np.zeros((2, 3)),
        lags,
        marks,
        np.array([9.0, 9.0]),
        np.array([100.0, 100.0]),
    ]


def test_hawkesll_numeric_gradient(ctx):
    inputs = _hawkes_inputs()
    inputs[7] = np.array([60.0, 30.0])
    check_numeric_gradient(
        "_contrib_hawkesll", {}, inputs, ctx, grad_args=[0, 1, 2], rtol=1e-5, atol=1e-6
    )


def test_hawkesll_shapes_and_errors(ctx):
    shapes = [(2, 3), (3,), (3,), (2, 3), (2, 9), (2, 9), (2,), (2,)]
    _, outs, _ = infer("_contrib_hawkesll", {}, shapes)
    assert outs == [(2,), (2, 3)]
    with pytest.raises(ShapeError, match=r"_contrib_hawkesll.*'alpha'.*\(4,\)"):
        infer("_contrib_hawkesll", {}, [(2, 3), (4,), *shapes[2:]])
    op = opdef("_contrib_hawkesll")
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in _hawkes_inputs()]
    context = OpContext(True, ctx.backend, ctx.device_id)
    _, saved = op.forward(context, op.parse({}), arrays, [])
    head = ctx.backend.asarray(np.ones(2), np.float64, ctx.device_id)
    with pytest.raises(ValueError, match="no gradient for lags"):
        op.backward(
            context, op.parse({}), saved, [head, None], [True] + [False] * 3 + [True] + [False] * 3
        )


def test_hawkesll_gradients_are_mxnets_test_values():
    # test_contrib_hawkesll.py::test_hawkesll_backward_correct (it needs autograd: here a
    # bound symbol); mu is tiled over the 2 rows there, so its gradient sums lda's rows
    inputs = _hawkes_inputs()
    names = ["lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"]
    net = mx.sym.contrib.hawkesll(*[mx.sym.var(n) for n in names])
    args = {
        n: mx.nd.array(a, dtype="int32" if n == "marks" else "float32")
        for n, a in zip(names, inputs, strict=True)
    }
    grads = {n: mx.nd.zeros(a.shape) for n, a in args.items() if n in ("lda", "alpha", "beta")}
    reqs = {n: "write" if n in grads else "null" for n in names}
    exe = net.bind(mx.cpu(), args, args_grad=grads, grad_req=reqs)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2,)), mx.nd.zeros((2, 3))])
    np.testing.assert_allclose(
        grads["lda"].asnumpy().sum(0), [-193.33987481, -198.0, -198.66828681], rtol=1e-5
    )
    np.testing.assert_allclose(
        grads["alpha"].asnumpy(), [-9.95093892, -4.0, -3.98784892], rtol=1e-5
    )
    want_beta = [-1.49052169e-02, -5.87469511e-09, -7.29065224e-03]
    np.testing.assert_allclose(grads["beta"].asnumpy(), want_beta, rtol=1e-5, atol=1e-8)
