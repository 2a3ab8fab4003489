"""Float64 update cases shared by record_optimizer_float64.py (MXNet) and test_float64_updates.py.

MXNet keeps an update operator's settings in C ``float`` fields, so a float64
weight is updated with ``lr``, ``momentum``, ``epsilon``, ... rounded to float32.
The settings below are chosen to be inexact in float32. Each operator case is
called STEPS times imperatively with ``out=weight`` (new gradient each time,
states changed in place); each optimizer case runs an updater STEPS times.
"""

import numpy as np

STEPS = 3
SHAPE = (3, 5)
_COMMON = {"wd": 0.0123, "rescale_grad": 1.0 / 3, "clip_gradient": 0.7}

# name: (operator, state names, positive states, attributes)
OP_CASES = {
    "sgd": ("sgd_update", (), (), {"lr": 0.1, **_COMMON}),
    "sgd_mom": ("sgd_mom_update", ("mom",), (), {"lr": 0.1, "momentum": 0.9, **_COMMON}),
    "nag_mom": ("nag_mom_update", ("mom",), (), {"lr": 0.1, "momentum": 0.9, **_COMMON}),
    "signsgd": ("signsgd_update", (), (), {"lr": 0.1, "wd": 0.0123}),
    "signum": (
        "signum_update",
        ("mom",),
        (),
        {"lr": 0.1, "momentum": 0.9, "wd_lh": 0.03, **_COMMON},
    ),
    "adam": (
        "adam_update",
        ("mean", "var"),
        ("var",),
        {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-3, **_COMMON},
    ),
    "ftml": (
        "ftml_update",
        ("d", "v", "z"),
        ("d", "v"),
        {
            "lr": 0.01,
            "beta1": 0.6,
            "beta2": 0.999,
            "epsilon": 1e-3,
            "t": 2,
            "wd": 0.0123,
            "rescale_grad": 1.0 / 3,
            "clip_grad": 0.7,
        },
    ),  # fmt: skip
    "rmsprop": (
        "rmsprop_update",
        ("n",),
        ("n",),
        {"lr": 0.01, "gamma1": 0.95, "epsilon": 1e-3, "clip_weights": 0.9, **_COMMON},
    ),
    "rmspropalex": (
        "rmspropalex_update",
        ("n", "g", "delta"),
        ("n",),
        {"lr": 0.01, "gamma1": 0.95, "gamma2": 0.9, "epsilon": 1e-3, **_COMMON},
    ),
    "ftrl": (
        "ftrl_update",
        ("z", "n"),
        ("n",),
        {"lr": 0.1, "lamda1": 0.01, "beta": 1.1, **_COMMON},
    ),
    "adamw": (
        "_adamw_update",
        ("mean", "var"),
        ("var",),
        {
            "lr": 0.01,
            "beta1": 0.9,
            "beta2": 0.999,
            "epsilon": 1e-3,
            "wd": 0.0123,
            "eta": 0.7,
            "clip_gradient": 0.7,
        },  # rescale_grad is an input array: 1/3
    ),  # fmt: skip
    "multi_sgd_mom": (
        "multi_sgd_mom_update",
        ("mom",),
        (),
        {
            "lrs": (0.1,),
            "wds": (0.0123,),
            "momentum": 0.9,
            "rescale_grad": 1.0 / 3,
            "clip_gradient": 0.7,
            "num_weights": 1,
        },
    ),  # fmt: skip
    "multi_sgd": (
        "multi_sgd_update",
        (),
        (),
        {
            "lrs": (0.1,),
            "wds": (0.0123,),
            "rescale_grad": 1.0 / 3,
            "clip_gradient": 0.7,
            "num_weights": 1,
        },
    ),  # fmt: skip
    "lamb": (
        "lamb",
        ("mean", "var"),
        ("var",),
        {
            "beta1": 0.9,
            "beta2": 0.999,
            "epsilon": 1e-3,
            "t": 1,
            "wd": 0.0123,
            "rescale_grad": 1.0 / 3,
            "clip_gradient": 0.7,
            "lr": 0.01,
            "lower_bound": 0.1,
            "upper_bound": 10.0,
        },
    ),  # fmt: skip
}

# name: (optimizer, keyword arguments)
OPTIMIZER_CASES = {
    "SGD": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.0123, "rescale_grad": 1 / 3}),
    "SGD_plain": ("sgd", {"learning_rate": 0.1, "wd": 0.0123, "clip_gradient": 0.7}),
    "NAG": ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.0123}),
    "Adam": ("adam", {"learning_rate": 0.01, "wd": 0.0123, "epsilon": 1e-3}),
    "RMSProp": ("rmsprop", {"learning_rate": 0.01, "wd": 0.0123, "epsilon": 1e-3}),
    "RMSProp_centered": ("rmsprop", {"learning_rate": 0.01, "centered": True, "epsilon": 1e-3}),
    "Signum": ("signum", {"learning_rate": 0.1, "momentum": 0.9, "wd_lh": 0.03}),
    "FTML": ("ftml", {"learning_rate": 0.01, "wd": 0.0123, "epsilon": 1e-3}),
    "Ftrl": ("ftrl", {"learning_rate": 0.1, "lamda1": 0.01, "beta": 1.1, "wd": 0.0123}),
    "LAMB": ("lamb", {"learning_rate": 0.01, "wd": 0.0123, "epsilon": 1e-3}),
    "AdaGrad": ("adagrad", {"learning_rate": 0.1, "wd": 0.0123, "eps": 1e-3}),
    "AdaDelta": ("adadelta", {"rho": 0.85, "epsilon": 1e-3, "wd": 0.0123}),
    "Adamax": ("adamax", {"learning_rate": 0.01, "wd": 0.0123}),
    "Nadam": ("nadam", {"learning_rate": 0.01, "wd": 0.0123, "epsilon": 1e-3}),
    "DCASGD": ("dcasgd", {"learning_rate": 0.1, "lamda": 0.05, "wd": 0.0123}),
}


def arrays(name, states, positive):
    """Weight, STEPS gradients and initial states (float64) for case ``name``."""
    rs = np.random.RandomState(sum(map(ord, name)))
    weight = rs.uniform(-1, 1, SHAPE)
    grads = [rs.uniform(-2, 2, SHAPE) for _ in range(STEPS)]
    initial = {
        s: rs.uniform(0.1, 1, SHAPE) if s in positive else rs.uniform(-0.3, 0.3, SHAPE)
        for s in states
    }
    return weight, grads, initial


def run_op(mx, name):
    """Call the case's operator STEPS times with out=weight: weight and states after each."""
    op, states, positive, attrs = OP_CASES[name]
    weight, grads, initial = arrays(name, states, positive)
    w = mx.nd.array(weight, dtype="float64")
    st = {s: mx.nd.array(v, dtype="float64") for s, v in initial.items()}
    recorded = {}
    for step, grad in enumerate(grads):
        g = mx.nd.array(grad, dtype="float64")
        if op == "lamb":
            _lamb(mx, w, g, st, attrs)
        elif op == "_adamw_update":
            rescale = mx.nd.array([1.0 / 3], dtype="float32")
            mx.nd._internal._adamw_update(w, g, *st.values(), rescale, out=w, **attrs)
        else:
            getattr(mx.nd, op)(w, g, *st.values(), out=w, **attrs)
        recorded[f"{step}.weight"] = w.asnumpy()
        for s, v in st.items():
            recorded[f"{step}.{s}"] = v.asnumpy()
    return recorded


def _lamb(mx, w, g, st, attrs):
    one = {k: attrs[k] for k in ("beta1", "beta2", "epsilon", "t", "wd", "rescale_grad")}
    one["clip_gradient"] = attrs["clip_gradient"]
    direction = mx.nd.lamb_update_phase1(w, g, st["mean"], st["var"], **one)
    r1, r2 = w.norm(), direction.norm()
    two = {k: attrs[k] for k in ("lr", "lower_bound", "upper_bound")}
    mx.nd.lamb_update_phase2(w, direction, r1, r2, out=w, **two)


def run_optimizer(mx, name):
    """An updater of the case's optimizer run STEPS times on a float64 weight."""
    optimizer, kwargs = OPTIMIZER_CASES[name]
    weight, grads, _ = arrays(name, (), ())
    updater = mx.optimizer.get_updater(mx.optimizer.create(optimizer, **kwargs))
    w = mx.nd.array(weight, dtype="float64")
    recorded = {}
    for step, grad in enumerate(grads):
        updater(0, mx.nd.array(grad, dtype="float64"), w)
        recorded[f"{step}.weight"] = w.asnumpy()
    return recorded


# LAMB through the updater, several weights per call (MXNet: multi_lamb_update), or
# one at a time with aggregate_num 1 (lamb_update_phase1/2); name: (dtype, aggregate_num, kwargs)
LAMB_SHAPES = ((7, 3), (20,), (2, 2, 5))
LAMB_CASES = {
    "f64_multi": ("float64", 45, {"wd": 0.0123, "clip_gradient": 0.7, "rescale_grad": 1 / 3}),
    "f32_multi": ("float32", 45, {"wd": 0.05, "lower_bound": 0.1, "upper_bound": 2.0}),
    "f32_multi_nobias": ("float32", 45, {"bias_correction": False, "rescale_grad": 0.8}),
    "f16_mp_multi": ("float16", 45, {"multi_precision": True, "wd": 0.03, "clip_gradient": 0.4}),
    "f64_single": ("float64", 1, {"wd": 0.0123, "clip_gradient": 0.7}),
    "f32_single": ("float32", 1, {"wd": 0.05, "lower_bound": 0.1}),
}


def run_lamb(mx, name):
    """An updater of LAMB over the LAMB_SHAPES weights, STEPS calls with all of them."""
    dtype, aggregate_num, kwargs = LAMB_CASES[name]
    rs = np.random.RandomState(sum(map(ord, name)))
    optimizer = mx.optimizer.create("lamb", learning_rate=0.01, **kwargs)
    optimizer.aggregate_num = aggregate_num
    updater = mx.optimizer.get_updater(optimizer)
    weights = [mx.nd.array(rs.uniform(-1, 1, s), dtype=dtype) for s in LAMB_SHAPES]
    recorded = {}
    for step in range(STEPS):
        grads = [mx.nd.array(rs.uniform(-2, 2, s), dtype=dtype) for s in LAMB_SHAPES]
        updater(list(range(len(weights))), grads, weights)
        for i, weight in enumerate(weights):
            recorded[f"{step}.weight{i}"] = weight.asnumpy()
    return recorded
