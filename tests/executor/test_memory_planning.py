"""What a training pass keeps for backward, and for how long.

A training forward keeps for backward only what each operator's backward
reads: an addition's operands are not kept (its gradient is the head's), a
relu/sigmoid/tanh keeps its output but not its input, a product its inputs.
Every other intermediate value is dropped after its last reader, and inside
``fit``'s step (``single_backward``) what was kept goes as backward passes it.
The executors of a BucketingModule's buckets share one pool: only the bucket
that ran last holds a pass. ``memory_report()["intermediates_saved"]``
measures what a held pass keeps.
"""

import gc
import weakref

import attrs
import numpy as np
import pytest

import rebind as mx
from rebind.executor.executor import single_backward

N, D, H, K = 64, 20, 32, 5  # batch, inputs, hidden units, outputs


def _two_branch_net():
    """``fc3(tanh(fc1(data) + fc2(data)))``: the sum and both products feed one reader."""
    data = mx.sym.Variable("data")
    total = mx.sym.FullyConnected(data, num_hidden=H, name="fc1") + mx.sym.FullyConnected(
        data, num_hidden=H, name="fc2"
    )
    hidden = mx.sym.Activation(total, act_type="tanh", name="act")
    return mx.sym.FullyConnected(hidden, num_hidden=K, name="fc3")


def _bound(ctx, symbol):
    executor = symbol.simple_bind(ctx, data=(N, D))
    rng = np.random.default_rng(7)
    for array in executor.arg_arrays:
        array[:] = rng.uniform(-1, 1, array.shape)
    return executor


def _record_outputs(executor, op_name):
    """Weak references to every output ``op_name``'s steps make from now on."""
    refs = []

    def recording(forward):
        def run(ctx, params, inputs, aux):
            outputs, state = forward(ctx, params, inputs, aux)
            refs.extend(weakref.ref(out) for out in outputs)
            return outputs, state

        return run

    for step in executor._plan.steps:  # before the first pass: its code is made then
        if step.op.name == op_name:
            step.op = attrs.evolve(step.op, forward=recording(step.op.forward))
    return refs


def _alive(refs):
    gc.collect()
    return [ref() is not None for ref in refs]


def test_training_pass_keeps_only_what_backward_reads(ctx):
    executor = _bound(ctx, _two_branch_net())
    assert executor.memory_report()["intermediates_saved"] is None  # no pass held yet
    executor.forward(is_train=True)
    # by hand: fc1/fc2 keep data and weights (bound), the sum keeps nothing, tanh
    # keeps its output, which fc3 keeps as its data: one (N, H) float32 array
    assert executor.memory_report()["intermediates_saved"] == N * H * 4


def test_operands_of_a_sum_die_after_the_sum(ctx):
    executor = _bound(ctx, _two_branch_net())
    products = _record_outputs(executor, "FullyConnected")
    executor.forward(is_train=True)
    assert len(products) == 3
    # fc1's and fc2's outputs had one reader, the sum; fc3's is the output
    assert _alive(products) == [False, False, True]


def test_single_backward_leaves_no_intermediate_alive(ctx):
    executor = _bound(ctx, _two_branch_net())
    activations = _record_outputs(executor, "Activation")
    executor.forward(is_train=True)
    assert _alive(activations) == [True]  # fc3's backward reads it
    executor.backward(mx.nd.ones((N, K), ctx=ctx))
    assert _alive(activations) == [True]  # a plain backward may run again: kept
    executor.forward(is_train=True)
    with single_backward():
        executor.backward(mx.nd.ones((N, K), ctx=ctx))
    assert _alive(activations) == [False, False]
    assert executor.memory_report()["intermediates_saved"] is None


def test_gradients_equal_the_definition(ctx):
    """The sum's and tanh's gradients, computed from what they keep, by their definitions."""
    executor = _bound(ctx, _two_branch_net())
    head = np.random.default_rng(3).uniform(-1, 1, (N, K)).astype(np.float32)
    executor.forward(is_train=True)
    executor.backward(mx.nd.array(head, ctx=ctx))
    args = {name: a.asnumpy().astype(np.float64) for name, a in executor.arg_dict.items()}
    total = sum(args["data"] @ args[f"{fc}_weight"].T + args[f"{fc}_bias"] for fc in ("fc1", "fc2"))
    hidden = np.tanh(total)
    d_total = (head @ args["fc3_weight"]) * (1 - hidden**2)
    expected = {
        "fc3_weight": head.T @ hidden,
        "fc1_weight": d_total.T @ args["data"],
        "fc2_weight": d_total.T @ args["data"],
        "fc1_bias": d_total.sum(axis=0),
        "data": d_total @ (args["fc1_weight"] + args["fc2_weight"]),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(executor.grad_dict[name].asnumpy(), value, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["broadcast_add", "broadcast_sub"])
def test_broadcast_sum_gradients_reach_the_operands_shapes(ctx, op):
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    executor = getattr(mx.sym, op)(lhs, rhs).simple_bind(ctx, lhs=(3, 1), rhs=(1, 4))
    head = np.arange(12, dtype=np.float32).reshape(3, 4)
    executor.forward(is_train=True)
    executor.backward(mx.nd.array(head, ctx=ctx))
    sign = 1 if op == "broadcast_add" else -1
    np.testing.assert_array_equal(executor.grad_dict["lhs"].asnumpy(), head.sum(1, keepdims=True))
    np.testing.assert_array_equal(executor.grad_dict["rhs"].asnumpy(), sign * head.sum(0)[None])


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_an_activation_keeps_its_input_only_where_backward_reads_it(ctx, act_type):
    data = mx.sym.Variable("data")
    hidden = mx.sym.Activation(data * 2, act_type=act_type)
    executor = (hidden * hidden).simple_bind(ctx, data=(N, H))
    executor.arg_dict["data"][:] = np.linspace(-2, 2, N * H).reshape(N, H)
    executor.forward(is_train=True)
    # the product keeps the activation's output; softrelu and softsign also their input
    kept = 2 if act_type in ("softrelu", "softsign") else 1
    assert executor.memory_report()["intermediates_saved"] == kept * N * H * 4


def _bucketing_module(ctx):
    """Buckets by batch rows (the parameters' shapes stay those of the default bucket)."""

    def sym_gen(rows):
        data = mx.sym.Variable("data")
        hidden = mx.sym.FullyConnected(data, num_hidden=H, name="fc1")
        hidden = mx.sym.Activation(hidden, act_type="tanh")
        out = mx.sym.FullyConnected(hidden, num_hidden=K, name="fc2")
        return mx.sym.LinearRegressionOutput(out, name="out"), ("data",), ("out_label",)

    module = mx.mod.BucketingModule(sym_gen, default_bucket_key=N, context=ctx)
    module.bind([("data", (N, D))], [("out_label", (N, K))])
    module.init_params()
    return module


def _batch(ctx, rows):
    return mx.io.DataBatch(
        [mx.nd.ones((rows, D), ctx=ctx)],
        [mx.nd.zeros((rows, K), ctx=ctx)],
        bucket_key=rows,
        provide_data=[mx.io.DataDesc("data", (rows, D))],
        provide_label=[mx.io.DataDesc("out_label", (rows, K))],
    )


def test_bucket_executors_hold_one_pass_at_a_time(ctx):
    module = _bucketing_module(ctx)
    module.forward(_batch(ctx, N), is_train=True)
    default = module._buckets[N]._exec_group.execs[0]
    # fc2 keeps the tanh output (its data); the tanh, overwriting fc1's output, keeps it too
    assert default.memory_report()["intermediates_saved"] == N * H * 4
    module.forward(_batch(ctx, N // 2), is_train=True)  # another bucket, the same pool
    other = module._buckets[N // 2]._exec_group.execs[0]
    assert other is not default
    assert default.memory_report()["intermediates_saved"] is None
    assert other.memory_report()["intermediates_saved"] == N // 2 * H * 4
