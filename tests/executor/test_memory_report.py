"""``Executor.memory_report()`` and debug_str's "Total N MB allocated" line."""

import re

import pytest

import rebind as mx

SHAPE = (10, 3, 256, 256)
ENTRY = 10 * 3 * 256 * 256 * 4  # one float32 value of SHAPE


def _squares(depth):
    data = mx.sym.Variable("data")
    for _ in range(depth):
        data = data * data
    return data


def _total_mb(executor):
    return int(re.search(r"Total (\d+) MB allocated", executor.debug_str()).group(1))


def test_report_counts_bound_arrays_and_intermediates():
    executor = _squares(10).simple_bind(mx.cpu(), data=SHAPE)
    report = executor.memory_report()
    assert report["arguments"] == report["gradients"] == report["outputs"] == ENTRY
    assert report["aux_states"] == 0
    # nine products feed the next one; the tenth is the output
    assert report["intermediates_naive"] == 9 * ENTRY
    # inference keeps a product only until the next one has read it
    assert report["intermediates_inference_peak"] == 2 * ENTRY
    assert report["intermediates_training"] == 9 * ENTRY
    assert report["graph_total"] == ENTRY + 9 * ENTRY
    assert report["naive_total"] == 3 * ENTRY + 9 * ENTRY


def test_total_line_follows_mxnets_zero_propagation():
    # MXNet's test_zero_prop: gradients make the graph keep more; stop_gradient and
    # grad_req='null' keep the same
    chain = _squares(10)
    big = _total_mb(chain.simple_bind(mx.cpu(), data=SHAPE))
    small1 = _total_mb(chain.simple_bind(mx.cpu(), data=SHAPE, grad_req="null"))
    small2 = _total_mb(mx.sym.stop_gradient(chain).simple_bind(mx.cpu(), data=SHAPE))
    assert big == round(10 * ENTRY / 2**20) and small1 == round(3 * ENTRY / 2**20)
    assert big > small2 and small1 == small2


@pytest.mark.parametrize("grad_req", ["write", "null"])
def test_planned_never_exceeds_naive(grad_req):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    report = (
        mx.sym.SoftmaxOutput(net, name="softmax")
        .simple_bind(mx.cpu(), data=(32, 100), grad_req=grad_req)
        .memory_report()
    )
    assert report["intermediates_inference_peak"] <= report["intermediates_naive"]
    assert report["planned_total"] <= report["naive_total"]
