"""Golden cases of the fused optimizer updates (optimizer_ops.py, optimizer_multi.py).

All are recorded imperatively (MXNet 1.9.1 cannot compose the updates as
symbols: "Not enough argument"); the states changed in place are stored as
``arg_after.<name>``, and with ``out=weight`` so is the weight.
"""

from tests.ops.cases import arg, case

SHAPE = (3, 4)
H = "float16"


def _w(dtype="float32", shape=SHAPE):
    return arg(shape, dtype, grad=False)


def _pos(dtype="float32", shape=SHAPE):
    return arg(shape, dtype, kind="positive", grad=False)


def _small(dtype="float32", shape=SHAPE):
    return arg(shape, dtype, low=-0.3, high=0.3, grad=False)


_INTERNAL = "_internal."  # MXNet keeps the underscore operators in mx.sym._internal


def _func(op):
    return _INTERNAL + op if op.startswith("_") else op


def _single(case_id, op, args, attrs, **kw):
    return case(case_id, op, args, attrs, sym_func=_func(op), backward=False, imperative=True, **kw)


def _states(names, dtype="float32", positive=()):
    return {n: (_pos(dtype) if n in positive else _small(dtype)) for n in names}


DECAY = {"wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.2}

SGD_CASES = [
    _single("opt_sgd", "sgd_update", {"weight": _w(), "grad": _w()}, {"lr": 0.1}),
    _single("opt_sgd_decay", "sgd_update", {"weight": _w(), "grad": _w()}, {"lr": 0.1, **DECAY}),
    _single("opt_sgd_f16", "sgd_update", {"weight": _w(H), "grad": _w(H)}, {"lr": 0.1, "wd": 0.02}),
    _single(
        "opt_sgd_clip0",
        "sgd_update",
        {"weight": _w(), "grad": _w()},
        {"lr": 0.1, "clip_gradient": 0},
    ),
    _single(
        "opt_sgd_mom",
        "sgd_mom_update",
        {"weight": _w(), "grad": _w(), "mom": _small()},
        {"lr": 0.1, "momentum": 0.9},
    ),
    _single(
        "opt_sgd_mom_decay",
        "sgd_mom_update",
        {"weight": _w(), "grad": _w(), "mom": _small()},
        {"lr": 0.1, "momentum": 0.8, **DECAY},
    ),
    _single(
        "opt_mp_sgd",
        "mp_sgd_update",
        {"weight": _w(H), "grad": _w(H), "weight32": _w()},
        {"lr": 0.1, **DECAY},
    ),
    _single(
        "opt_mp_sgd_mom",
        "mp_sgd_mom_update",
        {"weight": _w(H), "grad": _w(H), "mom": _small(), "weight32": _w()},
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 2.0},
    ),
    _single(
        "opt_nag_mom",
        "nag_mom_update",
        {"weight": _w(), "grad": _w(), "mom": _small()},
        {"lr": 0.1, "momentum": 0.9, **DECAY},
    ),
    _single(
        "opt_nag_mom_plain",
        "nag_mom_update",
        {"weight": _w(), "grad": _w(), "mom": _small()},
        {"lr": 0.05, "momentum": 0.5},
    ),
    _single(
        "opt_mp_nag_mom",
        "mp_nag_mom_update",
        {"weight": _w(H), "grad": _w(H), "mom": _small(), "weight32": _w()},
        {"lr": 0.1, "momentum": 0.9, **DECAY},
    ),
    _single(
        "opt_signsgd",
        "signsgd_update",
        {"weight": _w(), "grad": _w()},
        {"lr": 0.1, "wd": 0.05, "rescale_grad": 3.0, "clip_gradient": 0.1},
    ),
    _single(
        "opt_signum",
        "signum_update",
        {"weight": _w(), "grad": _w(), "mom": _small()},
        {"lr": 0.1, "momentum": 0.9, "wd_lh": 0.01, **DECAY},
    ),
]

ADAM_CASES = [
    _single(
        "opt_adam",
        "adam_update",
        {"weight": _w(), "grad": _w(), **_states(("mean", "var"), positive=("var",))},
        {"lr": 0.01},
    ),
    _single(
        "opt_adam_decay",
        "adam_update",
        {"weight": _w(), "grad": _w(), **_states(("mean", "var"), positive=("var",))},
        {"lr": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6, **DECAY},
    ),
    _single(
        "opt_adam_f64",
        "adam_update",
        {
            "weight": _w("float64"),
            "grad": _w("float64"),
            **_states(("mean", "var"), "float64", ("var",)),
        },
        {"lr": 0.01, "wd": 0.1},
    ),
    _single(
        "opt_ftml",
        "ftml_update",
        {"weight": _w(), "grad": _w(), **_states(("d", "v", "z"), positive=("d", "v"))},
        {"lr": 0.01, "t": 3, "wd": 0.01, "rescale_grad": 0.5, "clip_grad": 0.3},
    ),
    _single(
        "opt_rmsprop",
        "rmsprop_update",
        {"weight": _w(), "grad": _w(), "n": _pos()},
        {"lr": 0.01, **DECAY},
    ),
    _single(
        "opt_rmsprop_clip_weights",
        "rmsprop_update",
        {"weight": _w(), "grad": _w(), "n": _pos()},
        {"lr": 0.5, "gamma1": 0.9, "clip_weights": 0.4},
    ),
    _single(
        "opt_rmspropalex",
        "rmspropalex_update",
        {"weight": _w(), "grad": _w(), "n": _pos(), "g": _small(), "delta": _small()},
        {"lr": 0.01, "clip_weights": 0.9, **DECAY},
    ),
    _single(
        "opt_ftrl",
        "ftrl_update",
        {"weight": _w(), "grad": _w(), "z": _w(), "n": _pos()},
        {"lr": 0.1, "lamda1": 0.3, "beta": 1.5, **DECAY},
    ),
    _single(
        "opt_adamw",
        "_adamw_update",
        {
            "weight": _w(),
            "grad": _w(),
            **_states(("mean", "var"), positive=("var",)),
            "rescale_grad": arg((1,), kind="values", values=[0.5], grad=False),
        },
        {"lr": 0.01, "eta": 0.5, "wd": 0.1, "clip_gradient": 0.2},
    ),
    _single(
        "opt_mp_adamw",
        "_mp_adamw_update",
        {
            "weight": _w(H),
            "grad": _w(H),
            **_states(("mean", "var"), positive=("var",)),
            "weight32": _w(),
            "rescale_grad": arg((1,), kind="values", values=[2.0], grad=False),
        },
        {"lr": 0.01, "eta": 1.0, "wd": 0.01},
    ),
]

_R = {"r1": arg((1,), kind="positive", grad=False), "r2": arg((1,), kind="positive", grad=False)}

LAMB_CASES = [
    _single(
        "opt_lamb_phase1",
        "lamb_update_phase1",
        {"weight": _w(), "grad": _w(), **_states(("mean", "var"), positive=("var",))},
        {"t": 2, "wd": 0.01, **DECAY},
    ),
    _single(
        "opt_lamb_phase1_nobias",
        "lamb_update_phase1",
        {"weight": _w(), "grad": _w(), **_states(("mean", "var"), positive=("var",))},
        {"t": 1, "wd": 0.0, "bias_correction": False, "beta1": 0.8},
    ),
    _single(
        "opt_lamb_phase2",
        "lamb_update_phase2",
        {"weight": _w(), "g": _w(), **_R},
        {"lr": 0.1},
    ),
    _single(
        "opt_lamb_phase2_bounds",
        "lamb_update_phase2",
        {"weight": _w(), "g": _w(), **_R},
        {"lr": 0.1, "lower_bound": 1.5, "upper_bound": 1.8},
    ),
    _single(
        "opt_mp_lamb_phase1",
        "mp_lamb_update_phase1",
        {
            "weight": _w(H),
            "grad": _w(H),
            **_states(("mean", "var"), positive=("var",)),
            "weight32": _w(),
        },
        {"t": 3, "wd": 0.02, "rescale_grad": 0.5},
    ),
    _single(
        "opt_mp_lamb_phase2",
        "mp_lamb_update_phase2",
        {"weight": _w(H), "g": _w(), **_R, "weight32": _w()},
        {"lr": 0.1, "upper_bound": 0.5},
    ),
]


def _group(i, names, dtype="float32", shape=SHAPE):
    specs = {
        "weight": _w(dtype, shape),
        "grad": _w(dtype, shape),
        "mom": _small("float32" if "weight32" in names else dtype, shape),
        "mean": _small("float32" if "weight32" in names else dtype, shape),
        "var": _pos("float32" if "weight32" in names else dtype, shape),
        "weight32": _w("float32", shape),
    }
    return {f"{n}_{i}": specs[n] for n in names}


def _multi(case_id, op, names, attrs, dtype="float32", trailing=None, **kw):
    args = {**_group(0, names, dtype), **_group(1, names, dtype, (5,))}
    args.update(trailing or {})
    out = [f"weight_{i}" for i in range(2)]
    return case(
        case_id, op, args, attrs, sym_func=_func(op), backward=False, imperative=True, out=out, **kw
    )


RATES = {"lrs": (0.1, 0.2), "wds": (0.01, 0.0)}
PRELOADED = {
    "lrs": arg((2,), kind="values", values=[0.1, 0.05], grad=False),
    "wds": arg((2,), kind="values", values=[0.0, 0.02], grad=False),
}
SG, SGM = ("weight", "grad"), ("weight", "grad", "mom")
ADAM = ("weight", "grad", "mean", "var")

MULTI_CASES = [
    _multi("opt_multi_sgd", "multi_sgd_update", SG, {**RATES, "num_weights": 2}),
    _multi(
        "opt_multi_sgd_mom",
        "multi_sgd_mom_update",
        SGM,
        {**RATES, "momentum": 0.9, "clip_gradient": 0.2, "rescale_grad": 0.5, "num_weights": 2},
    ),
    _multi(
        "opt_multi_mp_sgd",
        "multi_mp_sgd_update",
        (*SG, "weight32"),
        {**RATES, "num_weights": 2, "rescale_grad": 2.0},
        dtype=H,
    ),
    _multi(
        "opt_multi_mp_sgd_mom",
        "multi_mp_sgd_mom_update",
        (*SGM, "weight32"),
        {**RATES, "momentum": 0.9, "num_weights": 2, "clip_gradient": 0.3},
        dtype=H,
    ),
    _multi(
        "opt_preloaded_sgd",
        "preloaded_multi_sgd_update",
        SG,
        {"num_weights": 2, "clip_gradient": 0.3},
        trailing=PRELOADED,
    ),
    _multi(
        "opt_preloaded_sgd_mom",
        "preloaded_multi_sgd_mom_update",
        SGM,
        {"num_weights": 2, "momentum": 0.8, "rescale_grad": 0.5},
        trailing=PRELOADED,
    ),
    _multi(
        "opt_preloaded_mp_sgd",
        "preloaded_multi_mp_sgd_update",
        (*SG, "weight32"),
        {"num_weights": 2},
        dtype=H,
        trailing=PRELOADED,
    ),
    _multi(
        "opt_preloaded_mp_sgd_mom",
        "preloaded_multi_mp_sgd_mom_update",
        (*SGM, "weight32"),
        {"num_weights": 2, "momentum": 0.9, "clip_gradient": 0.2},
        dtype=H,
        trailing=PRELOADED,
    ),
    _multi(
        "opt_multi_adamw",
        "_multi_adamw_update",
        ADAM,
        {**RATES, "etas": (1.0, 0.5), "clip_gradient": 0.3, "num_weights": 2},
        trailing={"rescale_grad": arg((1,), kind="values", values=[0.5], grad=False)},
    ),
    _multi(
        "opt_multi_mp_adamw",
        "_multi_mp_adamw_update",
        (*ADAM, "weight32"),
        {**RATES, "etas": (1.0, 1.0), "num_weights": 2},
        dtype=H,
        trailing={"rescale_grad": arg((1,), kind="values", values=[1.0], grad=False)},
    ),
    _multi(
        "opt_multi_lamb",
        "_multi_lamb_update",
        ADAM,
        {
            "learning_rates": (0.1, 0.05),
            "wds": (0.01, 0.0),
            "step_count": (1, 4),
            "num_tensors": 2,
            "clip_gradient": 0.4,
            "lower_bound": 0.1,
        },
    ),
    _multi(
        "opt_multi_mp_lamb",
        "_multi_mp_lamb_update",
        (*ADAM, "weight32"),
        {
            "learning_rates": (0.1, 0.05),
            "wds": (0.01, 0.02),
            "step_count": (2, 2),
            "num_tensors": 2,
            "bias_correction": False,
        },
        dtype=H,
    ),
]


def _sq(values):
    return arg((len(values),), kind="values", values=values, grad=False)


HELPER_CASES = [
    case(
        "opt_multi_sum_sq",
        "multi_sum_sq",
        {"array_0": _w(), "array_1": _w("float32", (7,))},
        {"num_arrays": 2},
        backward=False,
        imperative=True,
    ),
    case(
        "opt_multi_lars",
        "multi_lars",
        {
            "lrs": _sq([0.1, 0.2, 0.3]),
            "weights_sum_sq": _sq([4.0, 0.0, 2.5]),
            "grads_sum_sq": _sq([1.0, 3.0, 0.0]),
            "wds": _sq([0.01, 0.0, 0.1]),
        },
        {"eta": 0.01, "eps": 1e-8, "rescale_grad": 0.5},
        backward=False,
        imperative=True,
    ),
    case(
        "opt_all_finite",
        "all_finite",
        {"data": arg((2, 2), kind="values", values=[[1.0, 2.0], [float("inf"), 0.0]])},
        {},
        backward=False,
        imperative=True,
    ),
    case(
        "opt_multi_all_finite_true",
        "multi_all_finite",
        {"array_0": _w(), "array_1": _w("float32", (5,))},
        {"num_arrays": 2},
        backward=False,
        imperative=True,
    ),
    case(
        "opt_multi_all_finite",
        "multi_all_finite",
        {"array_0": _w(H), "array_1": arg((3,), H, kind="values", values=[1.0, float("nan"), 2.0])},
        {"num_arrays": 2},
        backward=False,
        imperative=True,
    ),
]

# the optimizers' own calls: out=weight writes the update back (imperative)
OUT_CASES = [
    case(
        "opt_sgd_mom_out",
        "sgd_mom_update",
        {"weight": _w(), "grad": _w(), "mom": _small()},
        {"lr": 0.1, "momentum": 0.9, **DECAY},
        backward=False,
        imperative=True,
        out=["weight"],
    ),
    case(
        "opt_nag_mom_out",
        "nag_mom_update",
        {"weight": _w(), "grad": _w(), "mom": _small()},
        # no decay: with out=weight MXNet's kernel decays the momentum with the new
        # weight, which rebind's operator, not seeing the aliasing, cannot know
        {"lr": 0.1, "momentum": 0.9, "rescale_grad": 0.5},
        backward=False,
        imperative=True,
        out=["weight"],
    ),
    case(
        "opt_adam_out",
        "adam_update",
        {"weight": _w(), "grad": _w(), **_states(("mean", "var"), positive=("var",))},
        {"lr": 0.01, **DECAY},
        backward=False,
        imperative=True,
        out=["weight"],
    ),
    case(
        "opt_mp_sgd_mom_out",
        "mp_sgd_mom_update",
        {"weight": _w(H), "grad": _w(H), "mom": _small(), "weight32": _w()},
        {"lr": 0.1, "momentum": 0.9},
        backward=False,
        imperative=True,
        out=["weight"],
    ),
]

CASES = SGD_CASES + ADAM_CASES + LAMB_CASES + MULTI_CASES + HELPER_CASES + OUT_CASES
