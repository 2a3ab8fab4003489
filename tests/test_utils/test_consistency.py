"""check_consistency across dtypes/contexts, check_speed and compare_optimizer."""

import numpy as np
import pytest

import rebind as mx
from rebind import test_utils as tu


def _ctx_list(*dtypes, shape=(3, 5)):
    return [{"ctx": mx.cpu(), "data": shape, "type_dict": {"data": dt}} for dt in dtypes]


def test_consistency_float32_vs_float64():
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    gt = tu.check_consistency(sym, _ctx_list(np.float32, np.float64))
    assert gt["fc_output"].dtype == np.float64
    assert set(gt) == {"fc_output", "data", "fc_weight", "fc_bias"}


def test_consistency_ground_truth_is_checked():
    sym = mx.sym.exp(mx.sym.Variable("data"), name="e")
    data = np.random.rand(3, 5)
    wrong = {"e_output": mx.nd.array(np.exp(data) + 1, dtype="float64")}
    with pytest.raises(AssertionError):
        tu.check_consistency(
            sym,
            _ctx_list(np.float32, np.float64),
            grad_req="null",
            arg_params={"data": data},
            ground_truth=wrong,
        )
    right = {"e_output": mx.nd.array(np.exp(data), dtype="float64")}
    tu.check_consistency(
        sym,
        _ctx_list(np.float32, np.float64),
        grad_req="null",
        arg_params={"data": data},
        ground_truth=right,
    )


def test_consistency_reports_without_raising(capsys):
    sym = mx.sym.exp(mx.sym.Variable("data"), name="e")
    wrong = {"e_output": mx.nd.zeros((3, 5), dtype="float64")}
    tu.check_consistency(
        sym,
        _ctx_list(np.float32, np.float64),
        grad_req="null",
        ground_truth=wrong,
        raise_on_err=False,
    )
    assert "Predict Err: ctx 0 vs ctx 1 at e_output" in capsys.readouterr().out


@pytest.mark.gpu
def test_consistency_cpu_vs_gpu():
    if mx.context.num_gpus() == 0:
        pytest.skip("no GPU: CuPy or a CUDA device is missing")
    sym = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=2, name="c")
    ctx_list = [
        {"ctx": mx.cpu(), "data": (2, 1, 6, 6), "type_dict": {"data": np.float32}},
        {"ctx": mx.gpu(), "data": (2, 1, 6, 6), "type_dict": {"data": np.float32}},
    ]
    tu.check_consistency(sym, ctx_list)


def test_check_speed_returns_seconds_per_run():
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    assert 0 < tu.check_speed(sym, data=(3, 5), N=2) < 5
    location = {"data": np.ones((3, 5)), "fc_weight": np.ones((4, 5)), "fc_bias": np.ones(4)}
    assert 0 < tu.check_speed(sym, location=location, N=2, typ="forward") < 5
    with pytest.raises(ValueError, match="whole"):
        tu.check_speed(sym, data=(3, 5), typ="backward")


def test_compare_optimizer_same_and_different():
    sgd = mx.optimizer.SGD
    tu.compare_optimizer(
        sgd(learning_rate=0.1, momentum=0.9),
        sgd(learning_rate=0.1, momentum=0.9),
        (3, 4),
        np.float32,
    )
    with pytest.raises(AssertionError):
        tu.compare_optimizer(sgd(learning_rate=0.1), sgd(learning_rate=0.5), (3, 4), np.float32)
    # opt2 gets row_sparse arrays, opt1 dense copies (MXNet's): without weight decay or
    # momentum a lazy update equals the dense one, whichever rows the gradient holds
    sparse = {"w_stype": "row_sparse", "g_stype": "row_sparse"}
    tu.compare_optimizer(
        sgd(learning_rate=0.1), sgd(learning_rate=0.1), (3, 4), np.float32, **sparse
    )
    with pytest.raises(ValueError, match="storage type"):
        tu.compare_optimizer(sgd(), sgd(), (3, 4), np.float32, w_stype="dense")


def test_consistency_three_dtypes_and_aux_states():
    conv = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=2, name="c")
    dtypes = (np.float16, np.float32, np.float64)
    gt = tu.check_consistency(conv, _ctx_list(*dtypes, shape=(2, 1, 5, 5)))
    assert gt["c_weight"].dtype == np.float64
    bn = mx.sym.BatchNorm(mx.sym.Variable("data"), fix_gamma=False, name="bn")
    tu.check_consistency(bn, _ctx_list(np.float32, np.float64, shape=(4, 3)), grad_req="add")
