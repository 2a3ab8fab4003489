"""The sampler calls whose moments MXNet 1.9.1 and rebind must share.

Imported by ``record_sampler_moments.py`` (run on MXNet) and by
``tests/ops/test_sampler_moments.py`` (run on rebind): ``draw(mx, spec, n)``
makes the same call on either library and ``summary`` reduces its output to
the numbers compared. Each spec names a function of ``mx.nd.random`` (or an
operator of ``mx.nd``), its keywords, which keywords become NDArrays, and, for
the ``*_like`` samplers, multinomial and shuffle, the data array.
"""

import numpy as np

__all__ = ["CASES", "draw", "summary"]


def _case(fn, draws="shape", arrays=(), data=None, **kwargs):
    return {"fn": fn, "draws": draws, "arrays": list(arrays), "data": data, "kwargs": kwargs}


def _scalar_cases():
    cases = {}
    for dtype in ("float16", "float32", "float64"):
        cases[f"uniform/0,1/{dtype}"] = _case("uniform", low=0.0, high=1.0, dtype=dtype)
        cases[f"normal/0,1/{dtype}"] = _case("normal", loc=0.0, scale=1.0, dtype=dtype)
        cases[f"gamma/0.5,2/{dtype}"] = _case("gamma", alpha=0.5, beta=2.0, dtype=dtype)
        cases[f"exponential/2/{dtype}"] = _case("exponential", scale=2.0, dtype=dtype)
        cases[f"poisson/3/{dtype}"] = _case("poisson", lam=3.0, dtype=dtype)
        cases[f"negative_binomial/3,0.4/{dtype}"] = _case(
            "negative_binomial", k=3, p=0.4, dtype=dtype
        )
        cases[f"gnb/2,0.5/{dtype}"] = _case(
            "generalized_negative_binomial", mu=2.0, alpha=0.5, dtype=dtype
        )
    edges = {
        "uniform/-3,5": _case("uniform", low=-3.0, high=5.0),
        "uniform/low==high": _case("uniform", low=2.0, high=2.0),
        "uniform/low>high": _case("uniform", low=3.0, high=1.0),
        "normal/5,3": _case("normal", loc=5.0, scale=3.0),
        "normal/scale0": _case("normal", loc=1.0, scale=0.0),
        "normal/scale<0": _case("normal", loc=0.0, scale=-1.0),
        "randn": _case("randn", draws="positional"),
        "gamma/0.1,1": _case("gamma", alpha=0.1, beta=1.0),
        "gamma/1,1": _case("gamma", alpha=1.0, beta=1.0),
        "gamma/9,0.5": _case("gamma", alpha=9.0, beta=0.5),
        "gamma/2,1e-6": _case("gamma", alpha=2.0, beta=1e-6),
        "gamma/alpha0": _case("gamma", alpha=0.0, beta=1.0),
        "gamma/beta0": _case("gamma", alpha=1.0, beta=0.0),
        "exponential/scale0.001": _case("exponential", scale=0.001),
        "exponential/scale1000": _case("exponential", scale=1000.0),
        "exponential/scale0": _case("exponential", scale=0.0),
        "exponential/scale<0": _case("exponential", scale=-1.0),
        "poisson/0": _case("poisson", lam=0.0),
        "poisson/0.01": _case("poisson", lam=0.01),
        "poisson/1000": _case("poisson", lam=1000.0),
        "poisson/<0": _case("poisson", lam=-1.0),
        "negative_binomial/1,0.5": _case("negative_binomial", k=1, p=0.5),
        "negative_binomial/5,1": _case("negative_binomial", k=5, p=1.0),
        "negative_binomial/2,0.01": _case("negative_binomial", k=2, p=0.01),
        "negative_binomial/0,0.5": _case("negative_binomial", k=0, p=0.5),
        "negative_binomial/2,0": _case("negative_binomial", k=2, p=0.0),
        "negative_binomial/2,1.5": _case("negative_binomial", k=2, p=1.5),
        "gnb/3,0": _case("generalized_negative_binomial", mu=3.0, alpha=0.0),
        "gnb/0,1": _case("generalized_negative_binomial", mu=0.0, alpha=1.0),
        "gnb/10,2": _case("generalized_negative_binomial", mu=10.0, alpha=2.0),
        "gnb/mu<0": _case("generalized_negative_binomial", mu=-1.0, alpha=1.0),
        "randint/0,10": _case("randint", low=0, high=10),
        "randint/-5,-2": _case("randint", low=-5, high=-2),
        "randint/3,4": _case("randint", low=3, high=4),
        "randint/int64": _case("randint", low=-(2**40), high=2**40, dtype="int64"),
        # MXNet 1.9.1 dies of SIGFPE (an integer division by the empty range)
        "randint/int32 overflow": _case("randint", low=0, high=2**40),
        "poisson/1e20": _case("poisson", lam=1e20),
        "randint/low==high": _case("randint", low=3, high=3, crashes_mxnet=True),
    }
    cases.update(edges)
    return cases


def _array_cases():
    return {
        "sample_uniform": _case("uniform", arrays=("low", "high"), low=[-1.0], high=[3.0]),
        "sample_normal": _case("normal", arrays=("loc", "scale"), loc=[2.0], scale=[0.5]),
        "sample_gamma": _case("gamma", arrays=("alpha", "beta"), alpha=[0.3], beta=[3.0]),
        "sample_exponential": _case("exponential", arrays=("scale",), scale=[4.0]),
        "sample_poisson": _case("poisson", arrays=("lam",), lam=[0.5]),
        "sample_negative_binomial": _case("negative_binomial", arrays=("k", "p"), k=[4.0], p=[0.3]),
        "sample_gnb": _case(
            "generalized_negative_binomial", arrays=("mu", "alpha"), mu=[3.0], alpha=[0.25]
        ),
        "sample_gnb/alpha0": _case(
            "generalized_negative_binomial", arrays=("mu", "alpha"), mu=[3.0], alpha=[0.0]
        ),
        "sample_poisson/float64": _case("poisson", arrays=("lam",), lam=[7.0], dtype="float64"),
        "sample_negative_binomial/k2.5": _case(
            "negative_binomial", arrays=("k", "p"), k=[2.5], p=[0.5]
        ),
        "sample_normal/float16": _case(
            "normal", arrays=("loc", "scale"), loc=[-1.0], scale=[2.0], dtype="float16"
        ),
        # edges the array operators do not check (their scalar twins refuse them)
        "sample_normal/scale<0": _case("normal", arrays=("loc", "scale"), loc=[1.0], scale=[-2.0]),
        "sample_uniform/low>high": _case("uniform", arrays=("low", "high"), low=[3.0], high=[1.0]),
        "sample_poisson/lam<0": _case("poisson", arrays=("lam",), lam=[-1.0]),
        "sample_negative_binomial/p>1": _case(
            "negative_binomial", arrays=("k", "p"), k=[2.0], p=[2.0]
        ),
        "sample_negative_binomial/p0": _case(
            "negative_binomial", arrays=("k", "p"), k=[2.0], p=[0.0]
        ),
        "sample_exponential/lam<0": _case(
            "_sample_exponential", draws="op_arrays", arrays=("lam",), lam=[-1.0]
        ),
        # two parameter rows: each row of the output has its own distribution
        "sample_gamma/rows": _case(
            "gamma", draws="rows", arrays=("alpha", "beta"), alpha=[0.5, 4.0], beta=[1.0, 0.25]
        ),
        "sample_uniform/rows": _case(
            "uniform", draws="rows", arrays=("low", "high"), low=[0.0, 10.0], high=[1.0, 20.0]
        ),
        "sample_poisson/rows": _case("poisson", draws="rows", arrays=("lam",), lam=[0.0, 50.0]),
        "sample_gnb/rows": _case(
            "generalized_negative_binomial",
            draws="rows",
            arrays=("mu", "alpha"),
            mu=[1.0, 6.0],
            alpha=[0.0, 1.5],
        ),
    }


def _like_cases():
    like = {
        "uniform_like": {"low": -2.0, "high": 2.0},
        "normal_like": {"loc": 1.0, "scale": 2.0},
        "gamma_like": {"alpha": 3.0, "beta": 0.5},
        "exponential_like": {"lam": 4.0},
        "poisson_like": {"lam": 2.5},
        "negative_binomial_like": {"k": 2, "p": 0.25},
        "generalized_negative_binomial_like": {"mu": 4.0, "alpha": 0.5},
    }
    cases = {"gamma_like/int32": _case("gamma_like", draws="like", data=["zeros", "int32"])}
    for fn, kwargs in like.items():
        for dtype in ("float16", "float32", "float64"):
            cases[f"{fn}/{dtype}"] = _case(fn, draws="like", data=["zeros", dtype], **kwargs)
    return cases


def _discrete_cases():
    return {
        "multinomial/uniform4": _case(
            "multinomial", draws="multinomial", data=[[0.25, 0.25, 0.25, 0.25]]
        ),
        "multinomial/zeros": _case(
            "multinomial", draws="multinomial", data=[[0.0, 0.5, 0.0, 0.5]], get_prob=True
        ),
        "multinomial/unnormalised": _case(
            "multinomial", draws="multinomial", data=[[1.0, 2.0, 1.0]], get_prob=True
        ),
        "multinomial/float64": _case(
            "multinomial", draws="multinomial", data=[[0.1, 0.2, 0.7]], dtype="float64"
        ),
        "multinomial/batch": _case(
            "multinomial", draws="multinomial_rows", data=[[0.9, 0.1], [0.0, 1.0], [0.3, 0.7]]
        ),
        # a row summing to less than 1: MXNet answers the out-of-range index 2
        "multinomial/sum<1": _case("multinomial", draws="multinomial", data=[[0.2, 0.2]]),
        "multinomial/float16": _case(
            "multinomial",
            draws="multinomial",
            data=[[0.5, 0.5]],
            data_dtype="float16",
            get_prob=True,
        ),
        # distinct classes per row, then the number of draws each row took
        "unique_zipfian": _case("_sample_unique_zipfian", draws="zipfian", range_max=1000),
        "shuffle": _case("shuffle", draws="shuffle", data="arange"),
    }


def _symbol_cases():
    """The same samplers composed with ``mx.sym.random`` and run by ``eval``."""
    sym = {
        "gamma": {"alpha": 0.5, "beta": 2.0},
        "exponential": {"scale": 3.0},
        "poisson": {"lam": 4.0},
        "negative_binomial": {"k": 3, "p": 0.4},
        "generalized_negative_binomial": {"mu": 2.0, "alpha": 0.5},
        "uniform": {"low": -1.0, "high": 1.0},
        "normal": {"loc": 1.0, "scale": 0.5},
    }
    cases = {}
    for fn, kwargs in sym.items():
        cases[f"sym/{fn}"] = _case(fn, draws="symbol", **kwargs)
        arrays = {k: [float(v)] for k, v in kwargs.items()}
        cases[f"sym/sample_{fn}"] = _case(fn, draws="symbol", arrays=list(arrays), **arrays)
    cases["sym/randint"] = _case("randint", draws="symbol", low=-4, high=6, dtype="int64")
    return cases


CASES = {
    **_scalar_cases(),
    **_array_cases(),
    **_like_cases(),
    **_discrete_cases(),
    **_symbol_cases(),
}


def _symbol_draw(mx, spec, n, kwargs):
    """The sampler composed as a Symbol (array parameters as variables) and evaluated."""
    names = spec["arrays"]
    composed = {k: mx.sym.var(k) if k in names else v for k, v in kwargs.items()}
    symbol = getattr(mx.sym.random, spec["fn"])(shape=(n,), **composed)
    values = {k: mx.nd.array(kwargs[k], dtype="float64") for k in names}
    return symbol.eval(ctx=mx.cpu(), **values)


def draw(mx, spec, n):
    """The output(s) of one sampler call on library ``mx``: ``n`` draws (as host arrays)."""
    fn = getattr(mx.nd._internal if spec["fn"].startswith("_") else mx.nd.random, spec["fn"])
    extra = ("crashes_mxnet", "data_dtype")
    kwargs = {k: v for k, v in spec["kwargs"].items() if k not in extra}
    data_dtype = spec["kwargs"].get("data_dtype", "float32")
    how = spec["draws"]
    if how == "symbol":
        return [o.asnumpy() for o in _symbol_draw(mx, spec, n, kwargs)]
    for name in spec["arrays"]:
        kwargs[name] = mx.nd.array(kwargs[name], dtype="float64")
    if how in ("shape", "rows", "op_arrays"):
        out = fn(shape=(n,), **kwargs)
    elif how == "positional":
        out = fn(n, **kwargs)
    elif how == "like":
        out = fn(mx.nd.zeros((n,), dtype=spec["data"][1]), **kwargs)
    elif how.startswith("multinomial"):
        out = fn(mx.nd.array(spec["data"], dtype=data_dtype), shape=(n,), **kwargs)
    elif how == "zipfian":
        out = fn(shape=(max(n // 50, 1), 50), **kwargs)
    else:
        out = fn(mx.nd.arange(n, dtype="float32"), **kwargs)
    outs = [o.asnumpy() for o in (out if isinstance(out, (list, tuple)) else [out])]
    if how.endswith("rows"):  # one summary per parameter row
        outs = [row for o in outs for row in o]
    return outs


def summary(values):
    """Moments and support facts of one output."""
    flat = values.astype(np.float64).ravel()
    finite = flat[np.isfinite(flat)]
    centred = finite - finite.mean() if finite.size else finite
    return {
        "dtype": values.dtype.name,
        "shape": list(values.shape),
        "n": int(flat.size),
        "finite": int(finite.size),
        "mean": float(finite.mean()) if finite.size else None,
        "var": float(centred.var()) if finite.size else None,
        "m4": float((centred**4).mean()) if finite.size else None,
        "min": float(flat.min()) if flat.size else None,
        "max": float(flat.max()) if flat.size else None,
        "zeros": float((flat == 0).mean()) if flat.size else None,
        "integral": bool(np.all(finite == np.round(finite))),
    }
