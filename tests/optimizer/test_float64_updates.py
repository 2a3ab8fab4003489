"""Update operators and optimizers on float64 weights, against MXNet 1.9.1.

MXNet holds the scalar settings (lr, momentum, betas, epsilon, wd,
rescale_grad, clip_gradient, ...) of its update operators as C ``float``, so
a float64 update uses them rounded to float32; recorded by
tests/recording/record_optimizer_float64.py, three calls with ``out=weight``.
"""

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN

from .float64_cases import LAMB_CASES, OP_CASES, OPTIMIZER_CASES, run_lamb, run_op, run_optimizer

# float64 arithmetic in a possibly different order: far below the 1e-9..4e-7
# that unrounded settings make
TOLERANCE = {"rtol": 1e-12, "atol": 1e-14}


def _recorded(filename, name):
    with np.load(GOLDEN / "optimizers" / filename) as npz:
        prefix = f"{name}/"
        return {k[len(prefix) :]: npz[k] for k in npz.files if k.startswith(prefix)}


def _compare(found, recorded, name):
    assert sorted(found) == sorted(recorded), name
    for key, want in recorded.items():
        assert found[key].dtype == np.float64, f"{name}: {key}"
        np.testing.assert_allclose(found[key], want, **TOLERANCE, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("name", OP_CASES)
def test_update_operator_on_float64_uses_float32_settings(name):
    _compare(run_op(mx, name), _recorded("float64_ops.npz", name), name)


_RUN_BY_MXNET = [
    n for n in OPTIMIZER_CASES if "error" not in _recorded("float64_optimizers.npz", n)
]


@pytest.mark.parametrize("name", _RUN_BY_MXNET)
def test_optimizer_on_float64_weights_matches_mxnet(name):
    _compare(run_optimizer(mx, name), _recorded("float64_optimizers.npz", name), name)


@pytest.mark.parametrize("name", LAMB_CASES)
def test_lamb_over_several_weights_matches_mxnet(name):
    """Through the updater: multi_lamb_update's arithmetic (or phase 1/2 with aggregate_num 1)."""
    dtype = LAMB_CASES[name][0]
    tolerance = {"float64": TOLERANCE, "float32": {"rtol": 1e-6, "atol": 1e-7}}
    tolerance = tolerance.get(dtype, {"rtol": 0, "atol": 0})  # float16: the same bits
    found, recorded = run_lamb(mx, name), _recorded("lamb_aggregated.npz", name)
    assert sorted(found) == sorted(recorded)
    for key, want in recorded.items():
        assert found[key].dtype == want.dtype
        np.testing.assert_allclose(found[key], want, **tolerance, err_msg=f"{name}: {key}")
