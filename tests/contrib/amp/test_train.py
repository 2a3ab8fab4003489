"""A converted MLP trains in a Module: float16 FullyConnected, float32 loss, close to float32."""

import numpy as np

import rebind as mx
from rebind.contrib import amp


def _blobs(n=256, seed=0):
    """Two Gaussian blobs in 6 dimensions, linearly separable with a margin."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    centers = np.where(labels[:, None] == 1, 1.5, -1.5) * np.array([1, -1, 1, 0, 0, 1.0])
    data = centers + rng.standard_normal((n, 6))
    return data.astype(np.float32), labels.astype(np.float32)


def _mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=2, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _fit(sym, ctx, arg_params=None):
    data, labels = _blobs()
    train = mx.io.NDArrayIter(data, labels, batch_size=32, shuffle=False)
    mod = mx.mod.Module(sym, context=ctx)
    mod.fit(
        train,
        num_epoch=4,
        arg_params=arg_params,
        allow_missing=arg_params is None,
        initializer=mx.init.Xavier(),
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "multi_precision": True},
    )
    test = mx.io.NDArrayIter(*_blobs(seed=1), batch_size=32)
    return mod, dict(mod.score(test, "acc"))["accuracy"]


def _initial_params(sym, ctx):
    mod = mx.mod.Module(sym, context=ctx)
    mod.bind(data_shapes=[("data", (32, 6))], label_shapes=[("softmax_label", (32,))])
    mx.random.seed(3)
    mod.init_params(mx.init.Xavier())
    return mod.get_params()[0]


def _internal_dtypes(sym, arg_params, ctx):
    """Output dtypes of fc1, fc2 and the loss, from a module over the converted internals."""
    internals = sym.get_internals()
    names = ["fc1_output", "fc2_output", "softmax_output"]
    probe = mx.sym.Group([internals[n] for n in names])
    mod = mx.mod.Module(probe, context=ctx)
    mod.bind(
        data_shapes=[("data", (32, 6))],
        label_shapes=[("softmax_label", (32,))],
        for_training=False,
    )
    mod.set_params(arg_params, {}, allow_missing=False)
    mod.forward(mx.io.DataBatch([mx.nd.array(_blobs()[0][:32])], [mx.nd.zeros((32,))]))
    return dict(zip(names, (np.dtype(o.dtype).name for o in mod.get_outputs()), strict=True))


def test_converted_mlp_trains_in_float16_close_to_float32(ctx):
    sym = _mlp()
    start = _initial_params(sym, ctx)
    _, fp32_accuracy = _fit(sym, ctx, dict(start))
    converted, args, _ = amp.convert_model(sym, dict(start), {})
    assert {np.dtype(v.dtype).name for v in args.values()} == {"float32"}
    mod, amp_accuracy = _fit(converted, ctx, args)
    assert fp32_accuracy > 0.9
    assert amp_accuracy > 0.9 and abs(amp_accuracy - fp32_accuracy) < 0.05
    trained = mod.get_params()[0]
    dtypes = _internal_dtypes(converted, trained, ctx)
    assert dtypes == {"fc1_output": "float16", "fc2_output": "float16", "softmax_output": "float32"}
    assert np.dtype(mod.get_outputs()[0].dtype) == np.float32


def test_float16_params_keep_float32_master_weights(ctx):
    sym = _mlp()
    start = _initial_params(sym, ctx)
    converted, args, _ = amp.convert_model(sym, dict(start), {}, cast_optional_params=True)
    assert {np.dtype(v.dtype).name for v in args.values()} == {"float16"}
    mod, accuracy = _fit(converted, ctx, args)
    assert accuracy > 0.9
    weights = mod.get_params()[0]
    assert np.dtype(weights["fc1_weight"].dtype) == np.float16
    # the optimizer's state holds a float32 master copy of each float16 weight
    weight = weights["fc1_weight"].asnumpy()
    states = [s for state in mod._updater.states.values() for s in _flatten(state)]
    masters = [
        s.asnumpy()
        for s in states
        if np.dtype(s.dtype) == np.float32
        and s.shape == weight.shape
        and np.array_equal(s.asnumpy().astype(np.float16), weight)
    ]
    assert masters and not np.array_equal(masters[0], weight.astype(np.float32))


def _flatten(state):
    if isinstance(state, (list, tuple)):
        return [x for s in state for x in _flatten(s)]
    return [] if state is None else [state]


def test_backward_through_casts_gives_float32_gradients(ctx):
    converted = amp.convert_symbol(_mlp())
    exe = converted.simple_bind(ctx, data=(4, 6), softmax_label=(4,))
    for array in exe.arg_dict.values():
        array[:] = np.random.default_rng(0).standard_normal(array.shape) * 0.1
    exe.arg_dict["softmax_label"][:] = np.array([0, 1, 1, 0])
    exe.forward(is_train=True)
    exe.backward()
    for name in ("fc1_weight", "fc2_weight", "fc1_bias"):
        grad = exe.grad_dict[name]
        assert np.dtype(grad.dtype) == np.float32
        assert np.all(np.isfinite(grad.asnumpy())) and np.abs(grad.asnumpy()).sum() > 0
