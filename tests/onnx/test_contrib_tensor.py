"""Export of arange_like, index_array, allclose, the interleaved attention matmuls,
box_decode, box_encode and box_nms, run in ONNX Runtime.

Two checks: every golden case MXNet 1.9.1 recorded for these operators
(tests/golden/ops_extra/contrib_{misc,box}) replays through ONNX Runtime to
MXNet's outputs, and further parameter sets and edge cases (float16, float64,
NaN, ties, topk, formats, moved columns, dynamic batch) agree with rebind's own
forward (box_nms exactly).
"""

import json

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN

from .harness import check_export, graph_input_names, run_onnx
from .test_nn import data, export_and_compare

EXPORTED = {
    "_contrib_arange_like",
    "_contrib_index_array",
    "_contrib_allclose",
    "_contrib_box_decode",
    "_contrib_box_encode",
    "_contrib_box_nms",
    "_contrib_interleaved_matmul_selfatt_qk",
    "_contrib_interleaved_matmul_selfatt_valatt",
    "_contrib_interleaved_matmul_encdec_qk",
    "_contrib_interleaved_matmul_encdec_valatt",
}


def _golden_cases():
    cases = []
    for family in ("contrib_misc", "contrib_box"):
        recorded = json.loads((GOLDEN / "ops_extra" / f"{family}.json").read_text())["cases"]
        cases += [c for c in recorded if c["mxnet_op"] in EXPORTED]
    return cases


CASES = {case["id"]: case for case in _golden_cases()}


def test_every_exported_operator_has_golden_cases():
    assert {case["mxnet_op"] for case in CASES.values()} == EXPORTED


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_golden_case_runs_in_onnxruntime_as_in_mxnet(case_id, tmp_path):
    case = CASES[case_id]
    symbol = mx.sym.load_json(case["symbol_json"])
    with np.load(GOLDEN / case["file"]) as stored:
        inputs = {name: stored[f"arg.{name}"] for name in case["arguments"]}
        expected = [stored[f"out.{i}"] for i in range(len(case["outputs"]))]
    names = graph_input_names(symbol, {})
    path = tmp_path / "model.onnx"
    mx.onnx.export_model(
        symbol,
        {},
        in_shapes=[inputs[n].shape for n in names],
        in_types=[inputs[n].dtype for n in names],
        onnx_file_path=str(path),
    )
    got = run_onnx(path, inputs)
    for i, (actual, wanted) in enumerate(zip(got, expected, strict=True)):
        assert actual.dtype == wanted.dtype, f"output {i}"
        np.testing.assert_allclose(actual, wanted, rtol=1e-5, atol=1e-6, err_msg=f"output {i}")


# -- arange_like / index_array --------------------------------------------------------------
@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"start": -2.5, "step": 0.3},
        {"axis": 1, "repeat": 2},
        {"axis": -1, "start": 1e7, "step": 0.1, "repeat": 3},
        {"repeat": 5, "step": -1.25},
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_arange_like(tmp_path, attrs, dtype):
    net = mx.sym.contrib.arange_like(mx.sym.var("data"), **attrs)
    export_and_compare(net, tmp_path, data=data(2, 3, 4).astype(dtype), rtol=0, atol=0)


def test_arange_like_follows_the_batch_of_a_dynamic_export(tmp_path):
    net = mx.sym.contrib.arange_like(mx.sym.var("data"), axis=0, step=2.0)
    check_export(net, {}, {}, {"data": data(3, 2)}, tmp_path, dynamic=True)
    got = run_onnx(tmp_path / "model.onnx", {"data": data(5, 2)})[0]
    np.testing.assert_array_equal(got, np.arange(5, dtype=np.float32) * 2)


@pytest.mark.parametrize(
    "shape,axes", [((2, 3, 4), None), ((3, 2, 4), (-1, 0)), ((5,), (0,)), ((2, 1, 3), (1,))]
)
def test_index_array(tmp_path, shape, axes):
    attrs = {} if axes is None else {"axes": axes}
    net = mx.sym.contrib.index_array(mx.sym.var("data"), **attrs)
    export_and_compare(net, tmp_path, data=np.asarray(data(*shape)), rtol=0, atol=0)


# -- allclose -----------------------------------------------------------------------------
_NAN = np.float32("nan")


@pytest.mark.parametrize(
    "a,b,attrs",
    [
        ([1.0, 2.0, 3.0], [1.0, 2.0, 3.00001], {}),
        ([1.0, 2.0, 3.0], [1.0, 2.0, 3.1], {}),
        ([1.0, _NAN], [1.0, _NAN], {}),
        ([1.0, _NAN], [1.0, _NAN], {"equal_nan": False}),
        ([1.0, _NAN], [1.0, 2.0], {}),
        ([100.0, -4.0], [100.4, -4.01], {"rtol": 0.004, "atol": 0.0}),
        ([np.inf, -np.inf], [np.inf, -np.inf], {}),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_allclose(tmp_path, a, b, attrs, dtype):
    net = mx.sym.contrib.allclose(mx.sym.var("a"), mx.sym.var("b"), **attrs)
    a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    export_and_compare(net, tmp_path, a=a, b=b, rtol=0, atol=0)


def test_allclose_of_integers(tmp_path):
    net = mx.sym.contrib.allclose(mx.sym.var("a"), mx.sym.var("b"), atol=5)
    for b in ([1, 2, 3], [1, 2, 4]):
        a, b = np.array([1, 2, 3], np.int32), np.array(b, np.int32)
        export_and_compare(net, tmp_path, a=a, b=b, rtol=0, atol=0)


# -- interleaved attention ----------------------------------------------------------------
@pytest.mark.parametrize("heads,seq,batch,depth", [(1, 4, 2, 3), (4, 7, 3, 8), (2, 1, 1, 5)])
def test_interleaved_self_attention(tmp_path, heads, seq, batch, depth):
    qkv = mx.sym.var("qkv")
    scores = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=heads)
    attention = mx.sym.softmax(scores, axis=-1)
    out = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, attention, heads=heads)
    net = mx.sym.Group([scores, out])
    export_and_compare(net, tmp_path, qkv=data(seq, batch, heads * 3 * depth))


@pytest.mark.parametrize("heads,seq_q,seq_k,batch,depth", [(1, 3, 5, 2, 4), (3, 6, 2, 2, 5)])
def test_interleaved_encoder_decoder_attention(tmp_path, heads, seq_q, seq_k, batch, depth):
    queries, kv = mx.sym.var("queries"), mx.sym.var("kv")
    scores = mx.sym.contrib.interleaved_matmul_encdec_qk(queries, kv, heads=heads)
    attention = mx.sym.softmax(scores, axis=-1)
    out = mx.sym.contrib.interleaved_matmul_encdec_valatt(kv, attention, heads=heads)
    net = mx.sym.Group([scores, out])
    inputs = {
        "queries": data(seq_q, batch, heads * depth),
        "kv": data(seq_k, batch, 2 * heads * depth),
    }
    export_and_compare(net, tmp_path, **inputs)


def test_interleaved_attention_with_a_dynamic_batch(tmp_path):
    qkv = mx.sym.var("qkv")
    scores = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2)
    net = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, scores, heads=2)
    # a (seq, batch, ...) layout: the dynamic axis 0 is the sequence here
    check_export(net, {}, {}, {"qkv": data(3, 2, 12)}, tmp_path, dynamic=True)
    wider = {"qkv": data(5, 2, 12, seed=4)}
    got = run_onnx(tmp_path / "model.onnx", wider)[0]
    reference = mx.nd.contrib.interleaved_matmul_selfatt_valatt(
        mx.nd.array(wider["qkv"]),
        mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.array(wider["qkv"]), heads=2),
        heads=2,
    )
    np.testing.assert_allclose(got, reference.asnumpy(), rtol=1e-5, atol=1e-6)


# -- box_decode / box_encode -------------------------------------------------------------------
def _corners(count, seed):
    rng = np.random.default_rng(seed)
    low = rng.uniform(0, 50, size=(count, 2))
    return np.concatenate([low, low + rng.uniform(1, 30, size=(count, 2))], -1).astype(np.float32)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"format": "corner"},
        {"std0": 0.1, "std1": 0.1, "std2": 0.2, "std3": 0.2, "format": "corner"},
        {"std0": 0.1, "std1": 0.1, "std2": 0.2, "std3": 0.2, "clip": 4.42},
        {"clip": 0.5, "format": "corner", "std2": 2.0},
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_box_decode(tmp_path, attrs, dtype):
    net = mx.sym.contrib.box_decode(mx.sym.var("data"), mx.sym.var("anchors"), **attrs)
    # more anchors than boxes: box_decode reads the first data.shape[1] of them
    inputs = {"data": data(2, 6, 4).astype(dtype), "anchors": _corners(8, 3)[None].astype(dtype)}
    # ONNX Runtime's exp may differ from NumPy's in the last bit; coordinates reach ~100
    tolerance = {"rtol": 1e-3, "atol": 0.05} if dtype == "float16" else {"atol": 1e-4}
    export_and_compare(net, tmp_path, **inputs, **tolerance)


def test_box_decode_with_a_dynamic_batch(tmp_path):
    net = mx.sym.contrib.box_decode(mx.sym.var("data"), mx.sym.var("anchors"), format="corner")
    inputs = {"data": data(2, 5, 4), "anchors": _corners(5, 3)[None]}
    check_export(net, {}, {}, inputs, tmp_path, dynamic=True)
    bigger = {"data": data(4, 5, 4, seed=9), "anchors": inputs["anchors"]}
    got = run_onnx(tmp_path / "model.onnx", bigger)[0]
    expected = mx.nd.contrib.box_decode(*(mx.nd.array(bigger[k]) for k in bigger), format="corner")
    np.testing.assert_allclose(got, expected.asnumpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_box_encode(tmp_path, dtype):
    rng = np.random.default_rng(5)
    inputs = {
        "samples": np.array([[1, 0, -1, 1, 1], [0, 1, 1, -1, 1]], dtype),
        # out-of-range matches are clipped to the first and last reference
        "matches": np.array([[0, 2, -1, 1, 7], [1.7, 0, 2, 2, -3]], dtype),
        "anchors": np.stack([_corners(5, 1), _corners(5, 2)]).astype(dtype),
        "refs": np.stack([_corners(3, 4), _corners(3, 6)]).astype(dtype),
        "means": rng.uniform(-0.1, 0.1, 4).astype(dtype),
        "stds": np.array([0.1, 0.1, 0.2, 0.2], dtype),
    }
    net = mx.sym.contrib.box_encode(*(mx.sym.var(name) for name in inputs))
    export_and_compare(net, tmp_path, **inputs, rtol=1e-6)


# -- box_nms ------------------------------------------------------------------------------------
def _detections(batch, count, seed, width=6, classes=4):
    """[id, score, x1, y1, x2, y2] rows in clusters (so boxes overlap), scores with ties."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(10, 90, size=(batch, 3, 2))[:, rng.integers(0, 3, count)]
    size = rng.uniform(5, 25, size=(batch, count, 2))
    low = centers + rng.normal(0, 4, size=(batch, count, 2)) - size / 2
    rows = np.zeros((batch, count, width), np.float32)
    rows[..., 0] = rng.integers(0, classes, size=(batch, count))
    rows[..., 1] = np.round(rng.uniform(0, 1, size=(batch, count)), 1)  # ties on purpose
    rows[..., 2:4], rows[..., 4:6] = low, low + size
    return rows


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"id_index": 0, "overlap_thresh": 0.3, "topk": 15, "valid_thresh": 0.15},
        {"id_index": 0, "force_suppress": True, "background_id": 2, "overlap_thresh": 0.2},
        {"id_index": 0, "overlap_thresh": 0.45, "valid_thresh": 0.01, "topk": 400},
        {"in_format": "center", "overlap_thresh": 0.4},
        {"out_format": "center", "id_index": 0},
        {"in_format": "center", "out_format": "corner", "id_index": 0, "topk": 7},
        {"overlap_thresh": 0.0, "valid_thresh": 0.95},  # few valid, any overlap suppresses
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_box_nms(tmp_path, attrs, dtype):
    net = mx.sym.contrib.box_nms(mx.sym.var("data"), **attrs)
    boxes = _detections(3, 40, seed=len(str(attrs))).astype(dtype)
    export_and_compare(net, tmp_path, data=boxes, rtol=0, atol=0)


def test_box_nms_with_moved_columns_and_4d_data(tmp_path):
    # score first, coordinates 1..4, the class id last; two leading batch axes
    rows = _detections(4, 30, seed=3)[..., [1, 2, 3, 4, 5, 0]].reshape(2, 2, 30, 6)
    attrs = {"coord_start": 1, "score_index": 0, "id_index": 5, "overlap_thresh": 0.25}
    net = mx.sym.contrib.box_nms(mx.sym.var("data"), **attrs)
    export_and_compare(net, tmp_path, data=rows, rtol=0, atol=0)


def test_box_nms_follows_the_batch_of_a_dynamic_export(tmp_path):
    attrs = {"id_index": 0, "overlap_thresh": 0.45, "valid_thresh": 0.01, "topk": 12}
    net = mx.sym.contrib.box_nms(mx.sym.var("data"), **attrs)
    check_export(net, {}, {}, {"data": _detections(2, 20, seed=1)}, tmp_path, dynamic=True)
    bigger = _detections(5, 20, seed=2)
    got = run_onnx(tmp_path / "model.onnx", {"data": bigger})[0]
    expected = mx.nd.contrib.box_nms(mx.nd.array(bigger), **attrs).asnumpy()
    np.testing.assert_array_equal(got, expected)
    assert (got[..., 0] == -1).any() and (got[..., 0] >= 0).any()  # kept rows and padding
