"""An unrolled LSTM layer as one step (core/executor/fused_layer.py): the fused cells' values.

The rewrite is made for GPU contexts only; ``ANY_DEVICE`` makes it here. Each
case binds the same symbol with and without it (every other rewrite on in
both), feeds the same values and compares outputs and gradients. Without a
GPU the layer step runs the replaced steps themselves (outputs bit for bit;
the recurrent weight's gradient summed step by step where the plan sums it
once, so to float rounding); with ``fusable`` saying yes and the kernels built
for the host it runs the code a GPU runs (tests/backends/test_layer_on_host.py).
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor import fused_layer

from .test_fused_lstm import _lm

LENGTH, BATCH = 5, 3


def _bind(symbol, ctx, monkeypatch, layers, **shapes):
    monkeypatch.setattr(fused_layer, "ANY_DEVICE", layers)
    return symbol.simple_bind(ctx, **shapes)


def _values(executor, is_train=True, seed=0):
    rng = np.random.default_rng(seed)
    for name, array in sorted(executor.arg_dict.items()):
        if name in ("data", "softmax_label"):
            array[:] = rng.integers(0, 11, array.shape)
        else:
            array[:] = rng.uniform(-0.6, 0.6, array.shape)
    outputs = [o.asnumpy() for o in executor.forward(is_train=is_train)]
    if not is_train:
        return outputs, {}
    executor.backward()
    return outputs, {n: g.asnumpy() for n, g in executor.grad_dict.items()}


def _layers(executor, kind="lstm"):
    found = executor._plan.optimizations
    return [name for rewrite, name, _ in found if rewrite == f"fused_{kind}_layer"]


def _compare(symbol, monkeypatch, run_layer=None, is_train=True, kind="lstm", **shapes):
    """The plain CPU plan's values, and the layered plan's (``run_layer`` runs it)."""
    shapes = shapes or {"data": (BATCH, LENGTH), "softmax_label": (BATCH, LENGTH)}
    plain = _bind(symbol, mx.cpu(), monkeypatch, False, **shapes)
    assert _layers(plain, kind) == []  # a CPU plan is left as it was
    expected = _values(plain, is_train)
    layered = _bind(symbol, mx.cpu(), monkeypatch, True, **shapes)
    assert len(_layers(layered, kind)) == 2  # one a layer
    names = {step.op.name for step in layered._plan.steps}
    cell, layer = {"lstm": ("LSTMCell", "LSTMLayer"), "gru": ("GRUCell", "GRULayer")}[kind]
    assert f"_fused_{cell}" not in names and f"_fused_{layer}" in names
    got = _values(layered, is_train) if run_layer is None else run_layer(layered, is_train)
    return expected, got


def _assert_close(expected, got, rtol, atol):
    (out_e, grads_e), (out_g, grads_g) = expected, got
    for e, g in zip(out_e, out_g, strict=True):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    assert sorted(grads_e) == sorted(grads_g)
    for name in grads_e:
        np.testing.assert_allclose(grads_g[name], grads_e[name], rtol=rtol, atol=atol, err_msg=name)


# each kind of layer: its cell, and its begin states per layer (an LSTM's h and c)
KINDS = {"lstm": (mx.rnn.LSTMCell, 2), "gru": (mx.rnn.GRUCell, 1)}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("states_out", [False, True], ids=["outputs", "outputs-and-states"])
def test_the_replaced_steps_give_the_fused_cells_values(monkeypatch, states_out, kind):
    symbol = _lm(LENGTH, states_out=states_out, cell=KINDS[kind][0])
    expected, got = _compare(symbol, monkeypatch, kind=kind)
    for e, g in zip(expected[0], got[0], strict=True):
        np.testing.assert_array_equal(g, e)  # the same kernels in the same order
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def begin_states(kind, batch, hidden=7):
    """Begin-state variables of a two-layer ``kind`` LM, and their shapes."""
    count = 2 * KINDS[kind][1]
    begin = [mx.sym.Variable(f"begin{k}") for k in range(count)]
    return begin, {f"begin{k}": (batch, hidden) for k in range(count)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_begin_states_that_learn_get_their_gradients(monkeypatch, kind):
    begin, begin_shapes = begin_states(kind, BATCH)
    shapes = {"data": (BATCH, LENGTH), "softmax_label": (BATCH, LENGTH), **begin_shapes}
    symbol = _lm(LENGTH, begin_state=begin, cell=KINDS[kind][0])
    expected, got = _compare(symbol, monkeypatch, kind=kind, **shapes)
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)
    assert all(np.abs(got[1][name]).max() > 0 for name in begin_shapes)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_inference_gives_the_fused_cells_outputs(monkeypatch, kind):
    symbol = _lm(LENGTH, cell=KINDS[kind][0])
    expected, got = _compare(symbol, monkeypatch, is_train=False, kind=kind)
    for e, g in zip(expected[0], got[0], strict=True):
        np.testing.assert_array_equal(g, e)


def test_a_layer_fed_its_own_outputs_is_left_alone(monkeypatch):
    """Input feeding: a step's input depends on the last step's output: no layer."""
    data = mx.sym.Variable("data")
    cell = mx.rnn.LSTMCell(6, prefix="l0_")
    states = cell.begin_state()
    inputs = mx.sym.SliceChannel(data, num_outputs=3, axis=1, squeeze_axis=True)
    out = None
    for t in range(3):
        step_in = inputs[t] if out is None else inputs[t] + out
        out, states = cell(step_in, states)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(out, num_hidden=4), name="softmax")
    executor = _bind(net, mx.cpu(), monkeypatch, True, data=(2, 3, 6), softmax_label=(2,))
    assert _layers(executor) == []


# float32 at 70 units: the recurrent products amplify rounding over the steps (weights
# uniform in +-0.6), so the plain cells' float32 values on the CPU are already up to 7e-6
# from float64's (GRU; 1.6e-6 LSTM). Two float32 orders are held to that; float64 runs
# hold the layer to the cells' values to double rounding.
GPU_TOLERANCES = {"float64": (1e-10, 1e-12), "float32": (1e-4, 2e-5)}


def gpu_runs_agree(monkeypatch, kind, hidden, dtype):
    """The same LM on a GPU as fused cells and as layers: outputs and gradients agree."""
    backend = mx.registry.lookup("backends", "cupy")
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    # the begin states are variables that learn: their gradients come out of the layer
    begin, begin_shapes = begin_states(kind, BATCH, hidden)
    shapes = {"data": (BATCH, LENGTH), "softmax_label": (BATCH, LENGTH), **begin_shapes}
    cell = KINDS[kind][0]
    symbol = _lm(LENGTH, states_out=True, begin_state=begin, cell=cell, hidden=hidden)
    types = {name: np.dtype(dtype) for name in symbol.list_arguments()}
    with monkeypatch.context() as patch:
        patch.setattr(fused_layer, "find_layers", lambda plan: [])
        cells = symbol.simple_bind(mx.gpu(0), type_dict=types, **shapes)
    layered = symbol.simple_bind(mx.gpu(0), type_dict=types, **shapes)
    assert _layers(cells, kind) == [] and len(_layers(layered, kind)) == 2
    assert layered.arg_dict["l0_h2h_weight"].dtype == np.dtype(dtype)
    narrow = dtype == "float32" and hidden < 32  # rounding not yet amplified much
    rtol, atol = (1e-5, 1e-6) if narrow else GPU_TOLERANCES[dtype]
    _assert_close(_values(cells), _values(layered), rtol=rtol, atol=atol)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hidden", [7, 70])
@pytest.mark.parametrize("products", ["in-kernels", "over-warps", "cublas"])
def test_a_gpu_layer_gives_the_fused_cells_values(monkeypatch, products, hidden, dtype):
    from rebind.backends import cupy_layer_kernels

    if products == "cublas":
        monkeypatch.setattr(cupy_layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)
    # 70 units: each warp's lanes take two or three terms of a product
    monkeypatch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", products == "over-warps")
    gpu_runs_agree(monkeypatch, "lstm", hidden, dtype)


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("merge_outputs", [True, False])
def test_layouts_and_accumulated_gradients(monkeypatch, layout, merge_outputs):
    """Time-major or batch-major steps, merged or not; grad_req='add' twice over ones."""
    from .test_graph_optimize import _lstm_lm

    runs = accumulated_runs(_lstm_lm(4, layout, merge_outputs), monkeypatch, _layers)
    _assert_close(runs[0], runs[1], rtol=1e-5, atol=1e-6)


def accumulated_runs(symbol, monkeypatch, layers_of):
    """Outputs and gradients without and with the layer steps (``layers_of`` finds them):
    grad_req='add', gradients starting at ones, two passes."""
    shapes = {"data": (2, 4), "softmax_label": (2, 4)}
    runs = []
    for layers in (False, True):
        executor = _bind(symbol, mx.cpu(), monkeypatch, layers, grad_req="add", **shapes)
        assert len(layers_of(executor)) == (2 if layers else 0)
        _values(executor, is_train=False)  # fills the arguments
        for grad in executor.grad_dict.values():
            grad[:] = 1.0
        for _ in range(2):
            executor.forward(is_train=True)
            executor.backward()
        runs.append(
            (
                [o.asnumpy() for o in executor.outputs],
                {n: g.asnumpy() for n, g in executor.grad_dict.items()},
            )
        )
    return runs
