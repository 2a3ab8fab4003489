"""rebind's samplers against MXNet 1.9.1's moments (tests/golden/samplers/moments.json).

The draws differ from MXNet's by design, so each case compares what the
distribution fixes: dtype, shapes, support (integrality, sign, bounds), the
fraction of exact zeros, mean and variance within 6 standard errors of the
two samples' difference, and refusals (rebind raises where MXNet raises).
Recorded by ``tests/recording/record_sampler_moments.py``.
"""

import json
import math

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN
from tests.recording.sampler_moment_cases import CASES, draw, summary

SEED = 20261129
DRAWS = 20_000
RECORDED = json.loads((GOLDEN / "samplers" / "moments.json").read_text())
SIGMAS = 6.0
# where MXNet 1.9.1 is silently wrong: what rebind draws instead
DIFFERENCES = {
    # no success ever: infinitely many failures (MXNet's draws are -2**31)
    "negative_binomial/2,0": lambda values: np.all(values == np.inf),
    "sample_negative_binomial/p0": lambda values: np.all(values == np.inf),
    # beyond numpy's Poisson: the normal limit (MXNet's draws are -2**31)
    "poisson/1e20": lambda values: abs(values.astype(np.float64).mean() / 1e20 - 1) < 1e-6,
    # a row summing to less than 1 leaves its excess on the last class (MXNet's
    # answer there is the out-of-range index 2)
    "multinomial/sum<1": lambda values: abs((values == 1).mean() - 0.8) < 0.02,
    # refused: MXNet draws negative numbers (exponential) or wraps int32 around
    "sample_exponential/lam<0": "raises",
    "randint/int32 overflow": "raises",
}


def _se(spread, got, want):
    """Standard error of the difference of two sample statistics of spread ``spread``."""
    return math.sqrt(max(spread, 0.0) * (1.0 / got["n"] + 1.0 / want["n"]))


def _check_moments(case_id, got, want):
    n = got, want
    mean_tol = SIGMAS * _se(want["var"], *n) + 1e-9 * abs(want["mean"])
    assert abs(got["mean"] - want["mean"]) <= mean_tol, (
        f"{case_id}: mean {got['mean']} vs MXNet's {want['mean']} (tolerance {mean_tol})"
    )
    var_tol = SIGMAS * _se(want["m4"] - want["var"] ** 2, *n) + 1e-6 * want["var"]
    assert abs(got["var"] - want["var"]) <= var_tol, (
        f"{case_id}: variance {got['var']} vs MXNet's {want['var']} (tolerance {var_tol})"
    )
    zeros = want["zeros"]
    zeros_tol = 0.0 if zeros in (0.0, 1.0) else SIGMAS * _se(zeros * (1 - zeros), *n)
    if want["dtype"].startswith("float") and zeros == 0.0:
        zeros_tol = 1e-3  # a continuous draw may underflow to 0 now and then
    assert abs(got["zeros"] - zeros) <= zeros_tol, (
        f"{case_id}: fraction of zeros {got['zeros']} vs MXNet's {zeros}"
    )


def _check_support(case_id, spec, values):
    kwargs = spec["kwargs"]
    if spec["fn"] == "uniform" and not spec["arrays"]:
        assert kwargs["low"] <= values.min() and values.max() <= kwargs["high"], case_id
    if spec["fn"] == "randint":
        assert kwargs["low"] <= values.min() and values.max() < kwargs["high"], case_id
    if spec["fn"] == "multinomial":
        possible = np.flatnonzero(np.asarray(spec["data"][0]) > 0)
        assert np.isin(values, possible).all(), case_id
    if spec["fn"] == "shuffle":
        assert np.array_equal(np.sort(values), np.arange(DRAWS)), case_id


@pytest.mark.parametrize("case_id", sorted(RECORDED["cases"]))
def test_sampler_matches_mxnet(case_id):
    """Same dtype, shape, support and moments as MXNet 1.9.1, or the same refusal."""
    record, spec = RECORDED["cases"][case_id], CASES[case_id]
    assert record["spec"] == spec, f"{case_id}: re-record, the case changed"
    mx.random.seed(SEED)
    if "error" in record:
        with pytest.raises((ValueError, TypeError, ZeroDivisionError, mx.base.MXNetError)):
            draw(mx, spec, DRAWS)
        return
    if DIFFERENCES.get(case_id) == "raises":
        with pytest.raises(ValueError):
            draw(mx, spec, DRAWS)
        return
    outs = draw(mx, spec, DRAWS)
    if case_id in DIFFERENCES:
        assert DIFFERENCES[case_id](outs[0]), f"{case_id} (seed {SEED})"
        return
    assert [list(o.shape) for o in draw(mx, spec, 7)] == record["shapes7"], case_id
    assert len(outs) == len(record["outputs"]), case_id
    for index, (values, want) in enumerate(zip(outs, record["outputs"], strict=True)):
        got = summary(values)
        where = f"{case_id} output {index} (seed {SEED})"
        assert got["dtype"] == want["dtype"], where
        assert got["finite"] == got["n"], f"{where}: non-finite draws"
        assert got["integral"] == want["integral"], f"{where}: integrality differs"
        assert (got["min"] >= 0) == (want["min"] >= 0), f"{where}: sign of the support"
        if spec["fn"] != "shuffle":  # a permutation's moments depend on its length
            _check_moments(where, got, want)
        if index == 0:
            _check_support(where, spec, values)
