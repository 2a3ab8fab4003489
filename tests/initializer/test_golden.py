"""Against MXNet 1.9.1: the initial parameters of the golden checkpoints.

Each checkpoint's ``-0000.params`` holds the parameters right after
``Module.init_params(initializer)`` in MXNet. Initializing the same names the
way a module does (an InitDesc carrying the symbol's attributes) must give the
same values where they are not random (biases, BatchNorm, LSTM forget gates),
and where they are, MXNet's draws and ours must both fit the distribution whose
scale we compute (which checks the fans of Xavier).
"""

import json

import numpy as np
import pytest

import rebind as mx
from rebind.initializer import InitDesc

from .distribution import assert_normal, assert_uniform

INITIALIZERS = {
    "mlp": (
        "Xavier(rnd_type='gaussian', factor_type='in', magnitude=2)",
        lambda: mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2),
    ),
    "lenet_bn": ("Xavier(magnitude=2.0)", lambda: mx.init.Xavier(magnitude=2.0)),
    "lstm_lm": (
        "Xavier(factor_type='in', magnitude=2.34)",
        lambda: mx.init.Xavier(factor_type="in", magnitude=2.34),
    ),
}


def _cases(golden):
    manifest = json.loads((golden / "manifest.json").read_text())
    return manifest["categories"]["checkpoints"]["cases"]


def _info(case):
    info = case["info"]
    return json.loads(info) if isinstance(info, str) else info


@pytest.mark.parametrize("case_id", sorted(INITIALIZERS))
def test_initial_checkpoint_params(ctx, golden, case_id):
    case = next(c for c in _cases(golden) if c["id"] == case_id)
    recorded, make = INITIALIZERS[case_id]
    assert _info(case)["initializer"] == recorded
    init = make()
    attrs = mx.sym.load(str(golden / case["symbol_file"])).attr_dict()
    initial = mx.nd.load(str(golden / case["initial_params_file"]))
    mx.random.seed(5)
    for key in case["params_keys"]:
        name, theirs = key[4:], initial[key].asnumpy()
        arr = mx.nd.full(theirs.shape, np.nan, ctx=ctx)
        init(InitDesc(name, attrs.get(name)), arr)
        ours = arr.asnumpy()
        if name.endswith("weight") and "__init__" not in attrs.get(name, {}):
            scale = init.scale_for(name, ours.shape)
            check = assert_uniform if init.rnd_type == "uniform" else assert_normal
            check(theirs, scale, f"{case_id} {name} from MXNet")
            check(ours, scale, f"{case_id} {name} (seed 5)")
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{case_id} {name}")


def test_the_golden_set_covers_the_special_rules(golden):
    # the deterministic rules above are really exercised: BatchNorm, LSTMBias
    keys = {k for c in _cases(golden) for k in c["params_keys"]}
    assert {"aux:bn1_moving_mean", "aux:bn1_moving_var", "arg:bn1_gamma"} <= keys
    assert "arg:lstm_l0_i2h_bias" in keys
