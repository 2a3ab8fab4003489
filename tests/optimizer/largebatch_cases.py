"""The LBSGD/Test cases recorded from MXNet 1.9.1 and replayed on rebind (no mxnet here)."""

import numpy as np

CASES = {
    "lbsgd_linear_momentum": (
        "lbsgd",
        {"momentum": 0.9, "warmup_epochs": 1, "updates_per_epoch": 4, "batch_scale": 1, "wd": 0.01},
    ),
    "lbsgd_sqrt": (
        "lbsgd",
        {"warmup_strategy": "sqrt", "warmup_epochs": 2, "updates_per_epoch": 2, "batch_scale": 1},
    ),
    "lbsgd_lars": ("lbsgd", {"warmup_strategy": "lars", "momentum": 0.5, "wd": 0.001}),
    "lbsgd_clip_rescale": (
        "lbsgd",
        {
            "rescale_grad": 0.5,
            "clip_gradient": 0.3,
            "warmup_strategy": "power2",
            "warmup_epochs": 1,
            "updates_per_epoch": 3,
        },
    ),
    "test": ("test", {"rescale_grad": 0.25}),
}


def inputs():
    rng = np.random.RandomState(42)
    weight = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    grads = [rng.uniform(-1, 1, (3, 4)).astype(np.float32) for _ in range(5)]
    return weight, grads
