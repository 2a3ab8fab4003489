"""SyncBatchNorm (mx.contrib) on one device."""

import numpy as np
import pytest

import rebind as mx
from tests.ops.harness import case_ids, infer, replay_golden


@pytest.mark.parametrize("case_id", case_ids("_contrib_SyncBatchNorm"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def test_shapes():
    shapes, outs, aux = infer("_contrib_SyncBatchNorm", {"key": "k"}, [(2, 5, 3), None, None])
    assert shapes[1:] == [(5,), (5,)] and aux == [(5,), (5,)] and outs[0] == (2, 5, 3)


def test_two_contexts_normalize_with_each_devices_statistics():
    # documented difference: rebind's devices share no statistics, so each half of the
    # batch is normalized by its own mean and variance (MXNet with ndev=2: the batch's)
    net = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="bn", ndev=2, name="bn")
    mod = mx.mod.Module(net, data_names=["data"], label_names=[], context=[mx.cpu(0), mx.cpu(1)])
    x = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
    x[4:] += 5
    mod.bind([("data", x.shape)], for_training=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=True)
    out = mod.get_outputs()[0].asnumpy()
    for rows in (slice(0, 4), slice(4, 8)):
        half = x[rows]
        want = (half - half.mean(0)) / np.sqrt(half.var(0) + 1e-3)
        np.testing.assert_allclose(out[rows], want, rtol=1e-4, atol=1e-4)
