"""Executors: bind, forward, backward, grad_req, monitor, parameters, and gradients vs numpy."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ContextMismatchError, ShapeError


def _fc(hidden=3):
    return mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=hidden, name="fc")


def _two_layer():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    act = mx.sym.Activation(fc1, act_type="tanh", name="act")
    return mx.sym.FullyConnected(act, num_hidden=3, name="fc2")


def _values(symbol, seed=0, dtype=np.float32, **shapes):
    rng = np.random.default_rng(seed)
    arg_shapes, _, _ = symbol.infer_shape(**shapes)
    return {
        n: rng.standard_normal(s).astype(dtype)
        for n, s in zip(symbol.list_arguments(), arg_shapes, strict=True)
    }


def _nd(values, ctx, dtype=None):
    return {k: mx.nd.array(v, ctx=ctx, dtype=dtype or v.dtype) for k, v in values.items()}


def _fc_numpy(v):
    return v["data"] @ v["fc_weight"].T + v["fc_bias"]


# -- bind ---------------------------------------------------------------------------


def test_bind_with_list_or_dict_computes_the_layer(ctx):
    values = _values(_fc(), data=(2, 4))
    expected = _fc_numpy(values)
    by_dict = _fc().bind(ctx, _nd(values, ctx))
    by_list = _fc().bind(ctx, [_nd(values, ctx)[n] for n in ("data", "fc_weight", "fc_bias")])
    for executor in (by_dict, by_list):
        np.testing.assert_allclose(executor.forward()[0].asnumpy(), expected, rtol=1e-5)


def test_bind_argument_errors():
    """Missing arrays and wrong list lengths fail; names a dict has beyond the symbol's are
    ignored, as MXNet does."""
    ctx = mx.cpu()
    args = _nd(_values(_fc(), data=(2, 4)), ctx)
    with pytest.raises(ValueError, match="no array given for \\['fc_bias'\\]"):
        _fc().bind(ctx, {k: v for k, v in args.items() if k != "fc_bias"})
    with pytest.raises(ValueError, match="2 arrays given for 3"):
        _fc().bind(ctx, [args["data"], args["fc_weight"]])
    assert sorted(_fc().bind(ctx, {**args, "unused": args["data"]}).arg_dict) == sorted(args)
    with pytest.raises(TypeError, match="must be an NDArray"):
        _fc().bind(ctx, {**args, "data": np.zeros((2, 4))})
    with pytest.raises(ShapeError, match="argument 'weight' has shape \\(3, 5\\)"):
        _fc().bind(ctx, {**args, "fc_weight": mx.nd.zeros((3, 5))})
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    with pytest.raises(ShapeError, match="gradient of 'fc_weight' has shape \\(3, 5\\)"):
        _fc().bind(ctx, args, args_grad={**grads, "fc_weight": mx.nd.zeros((3, 5))})
    with pytest.raises(ValueError, match="grad_req 'bogus'"):
        _fc().bind(ctx, args, args_grad=grads, grad_req="bogus")


def test_an_argument_lives_where_its_array_lives():
    """As in MXNet (test_model_parallel): an argument bound on another device is copied to
    its consumer's in forward, and its gradient copied back; a gradient array must live
    with its argument."""
    values = _values(_fc(), data=(2, 4))
    args = _nd(values, mx.cpu(0))
    here = _fc().bind(mx.cpu(0), args, args_grad={"data": mx.nd.zeros((2, 4))})
    elsewhere_args = {**args, "data": mx.nd.array(values["data"], ctx=mx.cpu(1))}
    elsewhere_grad = mx.nd.zeros((2, 4), ctx=mx.cpu(1))
    there = _fc().bind(mx.cpu(0), elsewhere_args, args_grad={"data": elsewhere_grad})
    for executor in (here, there):
        executor.forward(is_train=True)
        executor.backward([mx.nd.ones((2, 3), ctx=executor.outputs[0].context)])
    np.testing.assert_array_equal(there.outputs[0].asnumpy(), here.outputs[0].asnumpy())
    assert there.grad_dict["data"].context == mx.cpu(1)
    np.testing.assert_array_equal(
        there.grad_dict["data"].asnumpy(), here.grad_dict["data"].asnumpy()
    )


def test_a_gradient_away_from_its_argument_is_refused():
    args = _nd(_values(_fc(), data=(2, 4)), mx.cpu(0))
    grads = {k: mx.nd.zeros(v.shape, ctx=mx.cpu(1)) for k, v in args.items()}
    with pytest.raises(ContextMismatchError, match="gradient 'data'"):
        _fc().bind(mx.cpu(0), args, args_grad=grads)


def test_duplicate_argument_names_are_refused():
    x = mx.sym.var("x")
    twice = mx.sym.FullyConnected(
        mx.sym.FullyConnected(x, num_hidden=2, name="fc"), num_hidden=2, name="fc"
    )
    with pytest.raises(ValueError, match="duplicate argument name 'fc_weight'"):
        twice.simple_bind(mx.cpu(), x=(1, 2))


# -- forward ----------------------------------------------------------------------------


def test_outputs_exist_after_bind_and_stay_the_same_objects(ctx):
    executor = _fc().simple_bind(ctx, data=(2, 4))
    first = executor.outputs[0]
    assert first.shape == (2, 3) and not first.asnumpy().any()
    assert executor.output_dict == {"fc_output": first}
    values = _values(_fc(), seed=1, data=(2, 4))
    executor.copy_params_from(_nd(values, ctx))
    executor.forward()
    executor.forward(data=mx.nd.array(values["data"] * 2, ctx=ctx))
    assert executor.outputs[0] is first and executor.output_dict["fc_output"] is first
    doubled = dict(values, data=values["data"] * 2)
    np.testing.assert_allclose(first.asnumpy(), _fc_numpy(doubled), rtol=1e-5)


def test_forward_kwargs_copy_data_in(ctx):
    executor = _fc().simple_bind(ctx, data=(2, 4))
    bound = executor.arg_dict["data"]
    source = np.arange(8, dtype=np.float32).reshape(2, 4)
    executor.forward(data=source)
    assert executor.arg_dict["data"] is bound
    np.testing.assert_array_equal(bound.asnumpy(), source)
    with pytest.raises(ShapeError, match="bound with shape \\(2, 4\\), got .* \\(3, 4\\)"):
        executor.forward(data=mx.nd.zeros((3, 4), ctx=ctx))
    with pytest.raises(ValueError, match="'zz' is not an argument"):
        executor.forward(zz=source)


def test_eval_binds_and_runs(ctx):
    values = _values(_fc(), data=(2, 4))
    out = _fc().eval(ctx=ctx, **_nd(values, ctx))[0]
    np.testing.assert_allclose(out.asnumpy(), _fc_numpy(values), rtol=1e-5)


# -- backward ---------------------------------------------------------------------------


def _bound(ctx, grad_req="write", with_grads=True):
    values = _values(_fc(), data=(2, 4))
    args = _nd(values, ctx)
    grads = {k: mx.nd.zeros(v.shape, ctx=ctx) for k, v in values.items()} if with_grads else None
    return values, _fc().bind(ctx, args, args_grad=grads, grad_req=grad_req)


def test_grad_req_write_add_null(ctx):
    values, write = _bound(ctx, "write")
    head = np.ones((2, 3), np.float32)
    for _ in range(2):
        write.forward(is_train=True)
        write.backward(mx.nd.array(head, ctx=ctx))
    np.testing.assert_allclose(write.grad_dict["fc_bias"].asnumpy(), [2, 2, 2])
    np.testing.assert_allclose(
        write.grad_dict["fc_weight"].asnumpy(), head.T @ values["data"], rtol=1e-5
    )
    _, add = _bound(ctx, "add")
    for _ in range(2):
        add.forward(is_train=True)
        add.backward(mx.nd.array(head, ctx=ctx))
    np.testing.assert_allclose(add.grad_dict["fc_bias"].asnumpy(), [4, 4, 4])
    _, null = _bound(ctx, "null")  # the given arrays stay listed, as in MXNet, and untouched
    null.forward(is_train=True)
    null.backward(mx.nd.array(head, ctx=ctx))
    assert sorted(null.grad_dict) == ["data", "fc_bias", "fc_weight"]
    assert not any(g.asnumpy().any() for g in null.grad_arrays)


def test_grad_req_as_list_and_dict(ctx):
    _, by_list = _bound(ctx, ["null", "write", "add"])
    _, by_dict = _bound(ctx, {"fc_weight": "write", "fc_bias": "add"})  # missing: null
    for executor in (by_list, by_dict):
        for _ in range(2):
            executor.forward(is_train=True)
            executor.backward(mx.nd.ones((2, 3), ctx=ctx))
        np.testing.assert_allclose(executor.grad_dict["fc_bias"].asnumpy(), [4, 4, 4])  # add
        np.testing.assert_allclose(
            executor.grad_dict["fc_weight"].asnumpy(),
            np.tile(executor.arg_dict["data"].asnumpy().sum(0), (3, 1)),
            rtol=1e-5,
        )  # write
        assert not executor.grad_dict["data"].asnumpy().any()  # null
    with pytest.raises(ValueError, match="2 entries for 3 arguments"):
        _bound(ctx, ["write", "write"])


def test_gradient_views_keep_their_memory(ctx):
    """A gradient array that views a bigger buffer is written in place, not replaced."""
    values = _values(_fc(), data=(2, 4))
    buffer = mx.nd.zeros((2, 3), ctx=ctx)
    grads = {"fc_weight": mx.nd.zeros((3, 4), ctx=ctx), "fc_bias": buffer[1]}
    executor = _fc().bind(ctx, _nd(values, ctx), args_grad=grads)
    executor.forward(is_train=True)
    executor.backward(mx.nd.ones((2, 3), ctx=ctx))
    np.testing.assert_allclose(buffer.asnumpy(), [[0, 0, 0], [2, 2, 2]])


def test_no_gradient_arrays_still_runs_backward(ctx):
    _, executor = _bound(ctx, "write", with_grads=False)
    assert executor.grad_dict == {}
    executor.forward(is_train=True)
    executor.backward(mx.nd.ones((2, 3), ctx=ctx))


def test_backward_right_after_bind_runs_the_training_pass(ctx):
    # MXNet's test_repeat calls backward on a freshly bound executor
    _, fresh = _bound(ctx)
    fresh.backward(mx.nd.ones((2, 3), ctx=ctx))
    _, trained = _bound(ctx)
    trained.forward(is_train=True)
    trained.backward(mx.nd.ones((2, 3), ctx=ctx))
    for name, grad in trained.grad_dict.items():
        np.testing.assert_array_equal(fresh.grad_dict[name].asnumpy(), grad.asnumpy())


def test_backward_checks_head_gradients(ctx):
    _, executor = _bound(ctx)
    executor.forward(is_train=True)
    with pytest.raises(ValueError, match="0 head gradients for 1 outputs"):
        executor.backward([])
    # as MXNet, head gradients past the last output are ignored
    executor.backward([mx.nd.ones((2, 3), ctx=ctx), mx.nd.ones((7,), ctx=ctx)])


def test_backward_after_an_inference_forward_as_mxnet_tests_do(ctx):
    # MXNet's own tests call exe.forward() (is_train=False) and then exe.backward(...);
    # rebind replays the pass in training mode, keeping the outputs the user read
    data = mx.sym.Variable("data")
    net = mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="bn")
    executor = net.simple_bind(ctx, data=(4, 5))
    rng = np.random.default_rng(3)
    for array in executor.arg_dict.values():
        array[:] = rng.standard_normal(array.shape).astype(np.float32)
    executor.aux_dict["bn_moving_var"][:] = np.ones(3, np.float32)
    inference = executor.forward()[0].asnumpy()
    head = rng.standard_normal((4, 3)).astype(np.float32)
    executor.backward(mx.nd.array(head, ctx=ctx))
    np.testing.assert_array_equal(executor.outputs[0].asnumpy(), inference)
    replayed = {k: v.asnumpy() for k, v in executor.grad_dict.items() if v is not None}
    executor.forward(is_train=True)
    executor.backward(mx.nd.array(head, ctx=ctx))
    for name, value in replayed.items():
        np.testing.assert_allclose(executor.grad_dict[name].asnumpy(), value, rtol=1e-6)


def test_non_loss_heads_default_to_ones(ctx):
    """Where rebind differs from MXNet: ``backward()`` without ``out_grads`` on an output that
    is not a loss uses a gradient of ones (d sum(output)); MXNet raises and asks for
    out_grads. Loss heads (SoftmaxOutput) make their own gradient either way."""
    _, implicit = _bound(ctx)
    _, explicit = _bound(ctx)
    implicit.forward(is_train=True)
    implicit.backward()
    explicit.forward(is_train=True)
    explicit.backward(mx.nd.ones((2, 3), ctx=ctx))
    for name in implicit.grad_dict:
        np.testing.assert_array_equal(
            implicit.grad_dict[name].asnumpy(), explicit.grad_dict[name].asnumpy()
        )
    loss = mx.sym.SoftmaxOutput(_fc(), name="softmax")
    executor = loss.simple_bind(ctx, data=(2, 4))
    executor.copy_params_from(_nd(_values(_fc(), data=(2, 4)), ctx))
    executor.forward(is_train=True, softmax_label=np.array([0, 2], np.float32))
    executor.backward()
    plain = executor.grad_dict["fc_bias"].asnumpy().copy()
    executor.backward(mx.nd.ones((2, 3), ctx=ctx) * 5)
    np.testing.assert_allclose(executor.grad_dict["fc_bias"].asnumpy(), plain)
    probs = executor.outputs[0].asnumpy()
    np.testing.assert_allclose(plain, (probs - np.eye(3)[[0, 2]]).sum(0), rtol=1e-5)


def test_gradients_match_finite_differences():
    """A two-layer net in float64: executor gradients against numerical ones of sum(out * R)."""
    net = _two_layer()
    executor = net.simple_bind(mx.cpu(), data=(3, 5), type_dict={"data": np.float64})
    values = _values(net, seed=3, dtype=np.float64, data=(3, 5))
    executor.copy_params_from(_nd(values, mx.cpu()))
    weights = np.random.default_rng(4).standard_normal((3, 3))

    def loss():
        return float((executor.forward()[0].asnumpy() * weights).sum())

    executor.forward(is_train=True)
    executor.backward(mx.nd.array(weights, dtype=np.float64))
    for name, array in executor.arg_dict.items():
        numeric = np.zeros(array.shape)
        for index in np.ndindex(*array.shape):
            original = array.asnumpy()[index]
            array[index] = original + 1e-6
            up = loss()
            array[index] = original - 1e-6
            down = loss()
            array[index] = original
            numeric[index] = (up - down) / 2e-6
        np.testing.assert_allclose(
            executor.grad_dict[name].asnumpy(), numeric, rtol=1e-5, atol=1e-7, err_msg=name
        )


def test_batchnorm_moving_stats_change_in_backward(ctx):
    bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn", fix_gamma=False, momentum=0.9)
    executor = bn.simple_bind(ctx, data=(4, 3))
    data = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)
    executor.arg_dict["bn_gamma"][:] = 1
    executor.aux_dict["bn_moving_var"][:] = 1
    executor.forward(is_train=True, data=data)
    assert not executor.aux_dict["bn_moving_mean"].asnumpy().any()  # forward leaves them
    executor.backward(mx.nd.ones((4, 3), ctx=ctx))
    np.testing.assert_allclose(
        executor.aux_dict["bn_moving_mean"].asnumpy(), 0.1 * data.mean(0), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        executor.aux_dict["bn_moving_var"].asnumpy(), 0.9 + 0.1 * data.var(0), rtol=1e-5
    )


# -- parameters, monitoring, description ------------------------------------------------


def test_copy_params_from(ctx):
    executor = _fc().simple_bind(ctx, data=(2, 4))
    weight = mx.nd.ones((3, 4), ctx=ctx) * 4
    executor.copy_params_from({"fc_weight": weight, "fc_bias": np.arange(3)})
    assert executor.arg_dict["fc_weight"] is not weight
    assert executor.arg_dict["fc_weight"].asnumpy().sum() == 48
    np.testing.assert_array_equal(executor.arg_dict["fc_bias"].asnumpy(), [0, 1, 2])
    with pytest.raises(ValueError, match="'zz' is not an argument"):
        executor.copy_params_from({"zz": weight})
    executor.copy_params_from({"zz": weight}, {"yy": weight}, allow_extra_params=True)
    bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn").simple_bind(ctx, data=(2, 3))
    bn.copy_params_from({}, {"bn_moving_var": mx.nd.ones((3,), ctx=ctx) * 2})
    np.testing.assert_array_equal(bn.aux_dict["bn_moving_var"].asnumpy(), [2, 2, 2])


def test_monitor_callback_sees_outputs_and_with_monitor_all_inputs(ctx):
    net = mx.sym.SoftmaxOutput(_fc(), name="sm")
    executor = net.simple_bind(ctx, data=(2, 4))
    seen = []
    executor.set_monitor_callback(lambda name, array: seen.append((name, array.asnumpy())))
    executor.forward(data=np.ones((2, 4)))
    assert [name for name, _ in seen] == ["fc_output", "sm_output"]
    np.testing.assert_allclose(seen[1][1], executor.outputs[0].asnumpy())
    seen.clear()
    executor.set_monitor_callback(
        lambda name, array: seen.append((name, array.asnumpy())), monitor_all=True
    )
    executor.forward(is_train=True)
    assert [name for name, _ in seen] == [  # MXNet's order and names
        "data",
        "fc_data",
        "fc_weight",
        "fc_weight",
        "fc_bias",
        "fc_bias",
        "fc_output",
        "sm_data",
        "sm_label",
        "sm_label",
        "sm_output",
    ]
    np.testing.assert_array_equal(seen[0][1], np.ones((2, 4)))
    seen.clear()
    executor.set_monitor_callback(None)
    executor.forward()
    assert seen == []


def test_debug_str_mentions_every_op():
    text = _two_layer().simple_bind(mx.cpu(), data=(2, 5)).debug_str()
    for part in ("FullyConnected", "fc1", "Activation", "act", "fc2", "fc2_output"):
        assert part in text


# -- the generated forward ----------------------------------------------------------


def _branchy():
    """Several outputs per op, an aux state, a value read twice, and two heads."""
    data = mx.sym.var("data")
    bn = mx.sym.BatchNorm(data, fix_gamma=False, name="bn")
    halves = mx.sym.SliceChannel(bn, num_outputs=2, axis=1, name="split")
    left = mx.sym.Activation(halves[0], act_type="tanh", name="left")
    mixed = left * halves[1] + left
    fc = mx.sym.FullyConnected(mixed, num_hidden=3, name="fc")
    loss = mx.sym.MakeLoss(mx.sym.sum(fc * fc), name="loss")
    return mx.sym.Group([loss, mx.sym.BlockGrad(halves[1], name="seen")])


def _run_branchy(ctx, monkeypatch, generated_max):
    from rebind.executor import plan as plan_module

    monkeypatch.setattr(plan_module, "GENERATED_STEPS_MAX", generated_max)
    symbol = _branchy()
    values = _values(symbol, seed=3, data=(5, 4))
    executor = symbol.simple_bind(ctx, data=(5, 4))
    for name, value in values.items():
        executor.arg_dict[name][:] = value
    results = []
    for is_train in (True, False, True):
        outputs = [o.asnumpy() for o in executor.forward(is_train=is_train)]
        results.append(outputs)
        if is_train:
            executor.backward()
            results.append([g.asnumpy() for g in executor.grad_arrays if g is not None])
    results.append([a.asnumpy() for a in executor.aux_arrays])  # moved by both passes
    return executor, results


def test_generated_passes_equal_the_step_loops(ctx, monkeypatch):
    generated, expected = _run_branchy(ctx, monkeypatch, 10_000)
    looped, got = _run_branchy(ctx, monkeypatch, 0)
    assert generated._plan.forward_function(True) is not None
    assert generated._plan.backward_function() is not None
    # too many steps: the loops run
    assert looped._plan.forward_function(True) is None
    assert looped._plan.backward_function() is None
    assert len(got) == len(expected)
    for a_list, b_list in zip(got, expected, strict=True):
        for a, b in zip(a_list, b_list, strict=True):
            np.testing.assert_array_equal(a, b)


def _reused_twice():
    """A value read by three steps and a head read again: sums of several terms."""
    data = mx.sym.var("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    mixed = mx.sym.tanh(hidden) * hidden + mx.sym.sigmoid(hidden) + data * data
    return mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(mixed * mixed)), hidden])


@pytest.mark.parametrize("grad_req", ["write", "add"])
@pytest.mark.parametrize("single", [False, True])
def test_generated_backward_sums_as_the_loop_does(ctx, monkeypatch, grad_req, single):
    from rebind.executor import plan as plan_module
    from rebind.executor.executor import single_backward

    symbol = _reused_twice()
    values = _values(symbol, seed=5, data=(3, 4))
    results = []
    for generated_max in (10_000, 0):
        monkeypatch.setattr(plan_module, "GENERATED_STEPS_MAX", generated_max)
        executor = symbol.simple_bind(ctx, grad_req=grad_req, data=(3, 4))
        for name, value in values.items():
            executor.arg_dict[name][:] = value
        for _ in range(2):  # 'add' accumulates over passes
            executor.forward(is_train=True)
            head = mx.nd.ones((3, 4), ctx=ctx) * 0.5
            if single:
                with single_backward():
                    executor.backward([None, head])
            else:
                executor.backward([None, head])
        assert (executor._plan.backward_function() is None) == (generated_max == 0)
        results.append({n: g.asnumpy() for n, g in executor.grad_dict.items()})
    generated, looped = results
    assert set(generated) == {"data", "fc_weight", "fc_bias"}
    for name, value in looped.items():
        np.testing.assert_array_equal(generated[name], value, err_msg=name)
        assert np.abs(value).sum() > 0, name  # a gradient arrived


def test_generated_forward_is_made_once_per_mode(ctx):
    executor = _two_layer().simple_bind(ctx, data=(2, 5))
    plan = executor._plan
    executor.forward(is_train=True)
    executor.forward(is_train=False)
    train, infer = plan.forward_function(True), plan.forward_function(False)
    assert train is not infer
    executor.forward(is_train=True)
    assert plan.forward_function(True) is train
    assert "training" in train.__code__.co_filename and "inference" in infer.__code__.co_filename


def test_simple_bind_ignores_keywords_that_are_not_shapes(ctx):
    # MXNet's test_take: simple_bind(ctx, a=shape, indices=shape, axis=axis, mode=mode)
    take = mx.sym.take(mx.sym.Variable("a"), mx.sym.Variable("indices"), axis=0, mode="clip")
    executor = take.simple_bind(ctx, a=(3, 4), indices=(2,), axis=0, mode="clip")
    assert executor.outputs[0].shape == (2, 4)


def test_stop_gradient_blocks_the_gradient_of_what_it_follows(ctx):
    # MXNet's test_zero_prop2: batch_take has no gradient, and stop_gradient after it
    # means none is asked of it
    x, idx = mx.sym.Variable("x"), mx.sym.Variable("idx")
    taken = mx.sym.batch_take(x, idx)
    types = {"x": np.float32, "idx": np.int32}
    blocked = mx.sym.stop_gradient(taken).simple_bind(ctx, x=(4, 3), idx=(4,), type_dict=types)
    blocked.forward(is_train=True)
    blocked.backward()
    np.testing.assert_array_equal(blocked.grad_dict["x"].asnumpy(), np.zeros((4, 3), np.float32))
    # without it, binding with a gradient for x fails as in MXNet, naming the node
    with pytest.raises(RuntimeError, match="batch_take node 'batch_take.*' is non-differentiable"):
        taken.simple_bind(ctx, x=(4, 3), idx=(4,), type_dict=types)
    # and without gradients it binds and runs
    plain = taken.simple_bind(ctx, grad_req="null", x=(4, 3), idx=(4,), type_dict=types)
    plain.arg_dict["x"][:] = np.arange(12, dtype=np.float32).reshape(4, 3)
    plain.arg_dict["idx"][:] = np.array([0, 2, 1, 0], dtype=np.int32)
    np.testing.assert_array_equal(plain.forward()[0].asnumpy(), [0, 5, 7, 9])


def test_monitor_all_names_inputs_of_ops_without_input_names_by_index(ctx):
    """MXNet 1.9.1's names (recorded with its monitor): <node>_input<i> where the
    operator has no FListInputNames, its input names elsewhere."""
    data, other = mx.sym.var("data"), mx.sym.var("w")
    cases = [
        (mx.sym.Activation(data, act_type="relu", name="act"), ["act_input0"]),
        (mx.sym.relu(data, name="r"), ["r_input0"]),
        (mx.sym.sum(data, name="s"), ["s_input0"]),
        (mx.sym.Reshape(data, shape=(3, 2), name="rs"), ["rs_input0"]),
        (mx.sym.clip(data, 0, 1, name="g"), ["g_input0"]),
        (mx.sym.softmin(data, name="a"), ["a_input0"]),
        (mx.sym.log_softmax(data, name="b"), ["b_data"]),
        (mx.sym.broadcast_add(data, other, name="b"), ["b_lhs", "b_rhs"]),
        (mx.sym.slice_like(data, other, name="h"), ["h_data", "h_shape_like"]),
    ]
    for sym, expected in cases:
        shapes = {name: (2, 3) for name in sym.list_arguments()}
        executor = sym.simple_bind(ctx, grad_req="null", **shapes)
        seen = []
        executor.set_monitor_callback(
            lambda name, _, seen=seen: seen.append(name), monitor_all=True
        )
        executor.forward()
        inputs = [n for n in seen if n.startswith(sym.name + "_") and n != sym.name + "_output"]
        assert inputs == expected


def test_binding_a_symbol_again_reuses_its_compiled_passes(ctx):
    """MXNet's test_convolution_independent_gradients binds one conv ~10,000 times:
    the generated forward/backward code is compiled once, not per bind."""
    from rebind.executor import codegen

    net = mx.sym.Convolution(mx.sym.var("x"), num_filter=2, kernel=(3, 3), name="c")
    shapes = {"x": (1, 1, 5, 5), "c_weight": (2, 1, 3, 3), "c_bias": (2,)}
    args = {k: mx.nd.ones(s, ctx=ctx) for k, s in shapes.items()}
    grads = {k: mx.nd.zeros(s, ctx=ctx) for k, s in shapes.items()}
    outputs, misses = [], []
    for _ in range(2):
        executor = net.bind(ctx, args, args_grad=grads, grad_req="write")
        executor.forward(is_train=True)
        executor.backward(executor.outputs[0])
        outputs.append(executor.outputs[0].asnumpy())
        misses.append(codegen._code.cache_info().misses)
    assert misses[1] == misses[0]  # the second bind compiled nothing
    np.testing.assert_array_equal(outputs[0], np.full((1, 2, 3, 3), 10.0))
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_reshape_keeps_the_monitor_callback(ctx):
    """As MXNet's Executor.reshape (its test_monitor_with_variable_input_shape)."""
    net = mx.sym.Convolution(mx.sym.var("data"), kernel=(1, 1), num_filter=1, name="conv")
    executor = net.simple_bind(ctx, grad_req="null", data=(1, 3, 10, 10))
    seen = []
    executor.set_monitor_callback(lambda name, _: seen.append(name), monitor_all=True)
    reshaped = executor.reshape(allow_up_sizing=True, data=(1, 3, 10, 14))
    reshaped.forward()
    assert seen == ["data", "conv_data", "conv_weight", "conv_weight", "conv_bias", "conv_bias"] + [
        "conv_output"
    ]
