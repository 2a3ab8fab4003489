"""``Optimizer.update_many`` (one call per step) gives what per-weight updates give, bit for bit."""

import numpy as np
import pytest

import rebind as mx


def _arrays(seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    shapes = [(5, 4), (4,), (3, 5), (70000,)]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"momentum": 0.9, "wd": 1e-3, "rescale_grad": 0.5},
        {"momentum": 0.0, "wd": 1e-3},
        {"momentum": 0.9, "clip_gradient": 0.1},
        {"momentum": 0.9, "lr_scheduler": "factor"},
        {"momentum": 0.9, "dtype": np.float64},
        {"momentum": 0.0, "wd": 0.0, "dtype": np.float64},
    ],
    ids=["momentum", "plain", "clipped", "scheduled", "float64", "float64-no-decay"],
)
def test_grouped_sgd_equals_one_weight_at_a_time(kwargs):
    results = []
    for grouped in (True, False):
        options = dict(kwargs)
        dtype = options.pop("dtype", np.float32)
        if options.get("lr_scheduler") == "factor":  # schedulers keep state: one per run
            options["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
        opt = mx.optimizer.create("sgd", learning_rate=0.1, **options)
        opt.set_lr_mult({1: 0.5})
        weights = [mx.nd.array(a, dtype=dtype) for a in _arrays(0, dtype)]
        states = [opt.create_state(i, w) for i, w in enumerate(weights)]
        for step in range(5):
            grads = [mx.nd.array(a, dtype=dtype) for a in _arrays(step + 1, dtype)]
            indices = list(range(len(weights)))
            if grouped:
                opt.update_many(indices, weights, grads, states)
            else:
                for i in indices:
                    opt.update_multi_precision(i, weights[i], grads[i], states[i])
        assert all(w.dtype == dtype for w in weights)
        results.append([w.asnumpy() for w in weights])
    for grouped, single in zip(*results, strict=True):
        np.testing.assert_array_equal(grouped, single)
