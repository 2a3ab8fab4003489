"""Golden cases of the random family: samplers (shapes and dtypes only) and densities."""

from tests.ops.cases import arg, case

_SIMPLEX_2x3 = [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]
_SIMPLEX_2x2x3 = [[[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], [[0.1, 0.1, 0.8], [0.25, 0.25, 0.5]]]


def _public(op):
    """MXNet's public name of ``op``: its alias, or its mx.sym.random function (``_like``)."""
    if op.endswith("_like"):
        return "random." + op[len("_random_") :]
    return op.lstrip("_")


def _sampler(case_id, op, args=None, attrs=None, sym_func=None):
    return case(
        case_id,
        op,
        args or {},
        attrs,
        sym_func=sym_func or _public(op),
        random=True,
        backward=False,
    )


def _samplers():
    return [
        _sampler("rand_uniform", "_random_uniform", attrs={"low": -1, "high": 2, "shape": (2, 3)}),
        _sampler(
            "rand_uniform_f64",
            "_random_uniform",
            attrs={"shape": (4,), "dtype": "float64"},
        ),
        _sampler("rand_normal", "_random_normal", attrs={"loc": 1, "scale": 2, "shape": (3, 2)}),
        _sampler("rand_normal_f16", "_random_normal", attrs={"shape": (5,), "dtype": "float16"}),
        _sampler("rand_gamma", "_random_gamma", attrs={"alpha": 2, "beta": 0.5, "shape": (4,)}),
        _sampler("rand_exponential", "_random_exponential", attrs={"lam": 3, "shape": (2, 2)}),
        _sampler("rand_poisson", "_random_poisson", attrs={"lam": 4, "shape": (3,)}),
        _sampler(
            "rand_negbin", "_random_negative_binomial", attrs={"k": 3, "p": 0.4, "shape": (3,)}
        ),
        _sampler(
            "rand_gennegbin",
            "_random_generalized_negative_binomial",
            attrs={"mu": 2, "alpha": 0.3, "shape": (2, 2), "dtype": "float64"},
        ),
        _sampler("rand_randint", "_random_randint", attrs={"low": -3, "high": 7, "shape": (5,)}),
        _sampler(
            "rand_randint_i64",
            "_random_randint",
            attrs={"low": 0, "high": 100, "shape": (2, 3), "dtype": "int64"},
        ),
        *[
            _sampler(f"rand_{name}_like", f"_random_{name}_like", {"data": arg(shape, dtype)})
            for name, shape, dtype in (
                ("uniform", (2, 3), "float32"),
                ("normal", (4,), "float64"),
                ("gamma", (3, 2), "float32"),
                ("exponential", (2,), "float32"),
                ("poisson", (2, 2), "float64"),
                ("negative_binomial", (3,), "float32"),
                ("generalized_negative_binomial", (2, 1), "float32"),
            )
        ],
        *_multi_samplers(),
        _sampler("sample_multinomial", "_sample_multinomial", _probs(), {"shape": (4,)}),
        _sampler(
            "sample_multinomial_prob",
            "_sample_multinomial",
            _probs(),
            {"get_prob": True, "dtype": "float32"},
        ),
        _sampler(
            "sample_multinomial_1d",
            "_sample_multinomial",
            {"data": arg((3,), kind="values", values=[0.2, 0.5, 0.3])},
            {"shape": (2, 2)},
        ),
        _sampler("shuffle_2d", "_shuffle", {"data": arg((5, 3))}),
        _sampler("shuffle_1d", "_shuffle", {"data": arg((6,), "float64")}),
    ]


def _probs():
    return {"data": arg((2, 3), kind="values", values=_SIMPLEX_2x3)}


def _multi_samplers():
    positive = {"kind": "positive"}
    pairs = {
        "uniform": {"low": arg((2,), low=-2, high=-1), "high": arg((2,), low=1, high=2)},
        "normal": {"mu": arg((2, 2)), "sigma": arg((2, 2), **positive)},
        "gamma": {"alpha": arg((3,), **positive), "beta": arg((3,), **positive)},
        "exponential": {"lam": arg((2,), **positive)},
        "poisson": {"lam": arg((2, 1), low=1, high=5)},
        "negative_binomial": {"k": arg((2,), low=1, high=4), "p": arg((2,), low=0.3, high=0.7)},
        "generalized_negative_binomial": {
            "mu": arg((2,), **positive),
            "alpha": arg((2,), **positive),
        },
    }
    cases = []
    for name, args in pairs.items():
        cases.append(_sampler(f"sample_{name}", f"_sample_{name}", args, {"shape": (3,)}))
    cases.append(_sampler("sample_uniform_one", "_sample_uniform", pairs["uniform"]))
    cases.append(
        _sampler(
            "sample_normal_f64",
            "_sample_normal",
            pairs["normal"],
            {"shape": (2, 2), "dtype": "float64"},
        )
    )
    return cases


def _pdf(case_id, name, args, is_log=None):
    attrs = {} if is_log is None else {"is_log": is_log}
    return case(case_id, f"_random_pdf_{name}", args, attrs, sym_func=f"random_pdf_{name}")


def _densities():
    pos = {"kind": "positive"}
    cases = []
    for dtype, suffix in (("float32", ""), ("float64", "_f64")):
        for is_log, tag in ((None, ""), (True, "_log")):
            cid = f"{tag}{suffix}"
            cases += [
                _pdf(
                    f"pdf_uniform{cid}",
                    "uniform",
                    {
                        "sample": arg((2, 3), dtype),
                        "low": arg((2,), dtype, low=-3, high=-1),
                        "high": arg((2,), dtype, low=1, high=3),
                    },
                    is_log,
                ),
                _pdf(
                    f"pdf_normal{cid}",
                    "normal",
                    {
                        "sample": arg((2, 3), dtype, kind="normal", high=2),
                        "mu": arg((2,), dtype),
                        "sigma": arg((2,), dtype, **pos),
                    },
                    is_log,
                ),
                _pdf(
                    f"pdf_gamma{cid}",
                    "gamma",
                    {
                        "sample": arg((2, 2, 2), dtype, **pos),
                        "alpha": arg((2, 2), dtype, **pos),
                        "beta": arg((2, 2), dtype, **pos),
                    },
                    is_log,
                ),
                _pdf(
                    f"pdf_exponential{cid}",
                    "exponential",
                    {"sample": arg((3, 2), dtype, **pos), "lam": arg((3,), dtype, **pos)},
                    is_log,
                ),
                _pdf(
                    f"pdf_poisson{cid}",
                    "poisson",
                    {
                        "sample": arg((2, 3), dtype, kind="int", low=0, high=6),
                        "lam": arg((2,), dtype, low=1, high=4),
                    },
                    is_log,
                ),
                _pdf(
                    f"pdf_negbin{cid}",
                    "negative_binomial",
                    {
                        "sample": arg((2, 3), dtype, kind="int", low=0, high=6),
                        "k": arg((2,), dtype, low=1, high=4),
                        "p": arg((2,), dtype, low=0.3, high=0.7),
                    },
                    is_log,
                ),
                _pdf(
                    f"pdf_gennegbin{cid}",
                    "generalized_negative_binomial",
                    {
                        "sample": arg((2, 3), dtype, kind="int", low=0, high=6),
                        "mu": arg((2,), dtype, low=1, high=3),
                        "alpha": arg((2,), dtype, low=0.2, high=1),
                    },
                    is_log,
                ),
                _pdf(
                    f"pdf_dirichlet{cid}",
                    "dirichlet",
                    {
                        "sample": arg((2, 2, 3), dtype, kind="values", values=_SIMPLEX_2x2x3),
                        "alpha": arg((2, 3), dtype, **pos),
                    },
                    is_log,
                ),
            ]
    cases += [
        _pdf(
            "pdf_normal_same_shape",
            "normal",
            {"sample": arg((4,)), "mu": arg((4,)), "sigma": arg((4,), kind="positive")},
            False,
        ),
        _pdf(
            "pdf_dirichlet_one",
            "dirichlet",
            {
                "sample": arg((3,), kind="values", values=_SIMPLEX_2x3[0]),
                "alpha": arg((3,), kind="positive"),
            },
        ),
        _pdf(
            "pdf_dirichlet_rows",
            "dirichlet",
            {
                "sample": arg((2, 3), kind="values", values=_SIMPLEX_2x3),
                "alpha": arg((3,), kind="positive"),
            },
            True,
        ),
        _pdf(
            "pdf_gamma_flat",
            "gamma",
            {
                "sample": arg((3,), kind="positive"),
                "alpha": arg((3,), kind="positive"),
                "beta": arg((3,), kind="positive"),
            },
        ),
    ]
    return cases


CASES = _samplers() + _densities()
