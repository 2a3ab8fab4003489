"""box_nms, box_iou, box_encode, box_decode, bipartite_matching (mx.contrib)."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

BOX_OPS = (
    "_contrib_box_nms",
    "_contrib_box_iou",
    "_contrib_box_encode",
    "_contrib_box_decode",
    "_contrib_bipartite_matching",
)


@pytest.mark.parametrize("case_id", case_ids(*BOX_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def _greedy_nms(rows, thresh):
    """Greedy NMS by its definition (one batch, corner boxes, no classes)."""
    order = sorted(range(len(rows)), key=lambda i: -rows[i][1])
    kept = []
    for i in order:
        if rows[i][1] <= 0:
            continue
        if all(_iou(rows[i][2:6], rows[k][2:6]) <= thresh for k in kept):
            kept.append(i)
    return kept


def _iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union


def test_nms_matches_greedy_definition(ctx):
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 1, (40, 2))
    rows = np.concatenate([np.zeros((40, 1)), rng.uniform(0, 1, (40, 1)), xy, xy + 0.3], 1)
    (out,) = _run(ctx, "_contrib_box_nms", {"overlap_thresh": 0.3}, [rows])
    kept = _greedy_nms(rows.tolist(), 0.3)
    np.testing.assert_allclose(out[: len(kept)], rows[kept])
    assert (out[len(kept) :] == -1).all()


def test_nms_gradient_follows_kept_boxes(ctx):
    rows = np.array([[0, 0.3, 0, 0, 1, 1], [0, 0.9, 0, 0, 1, 1], [0, 0.5, 2, 2, 3, 3]], float)
    check_numeric_gradient("_contrib_box_nms", {}, [rows], ctx)


def test_nms_empty_box_axis(ctx):
    (out,) = _run(ctx, "_contrib_box_nms", {}, [np.zeros((2, 0, 6), np.float32)])
    assert out.shape == (2, 0, 6)


def test_nms_shape_errors_name_the_op_and_argument():
    with pytest.raises(ShapeError, match=r"_contrib_box_nms.*'data'.*\(3, 4\).*at least 5"):
        infer("_contrib_box_nms", {}, [(3, 4)])
    with pytest.raises(ShapeError, match=r"'data'.*\(6,\).*at least 2-D"):
        infer("_contrib_box_nms", {}, [(6,)])
    with pytest.raises(ShapeError, match="score_index=3"):
        infer("_contrib_box_nms", {"score_index": 3}, [(4, 6)])
    with pytest.raises(ShapeError, match="at least 6"):
        infer("_contrib_box_nms", {"id_index": 0}, [(4, 5)])
    assert infer("_contrib_box_nms", {}, [(2, 3, 4, 6)])[1] == [(2, 3, 4, 6)]


def test_box_iou_shapes_and_errors():
    assert infer("_contrib_box_iou", {}, [(2, 3, 4), (5, 4)])[1] == [(2, 3, 5)]
    with pytest.raises(ShapeError, match=r"_contrib_box_iou.*'rhs'.*\(5, 3\).*4 box coordinates"):
        infer("_contrib_box_iou", {}, [(2, 4), (5, 3)])
    with pytest.raises(ShapeError, match=r"'lhs'.*\(4,\)"):
        infer("_contrib_box_iou", {}, [(4,), (5, 4)])


def test_box_iou_by_definition(ctx):
    a = np.array([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]], np.float32)
    b = np.array([[0.25, 0.25, 0.75, 0.75]], np.float32)
    (out,) = _run(ctx, "_contrib_box_iou", {}, [a, b])
    np.testing.assert_allclose(out, [[1 / 7], [1 / 7]], rtol=1e-6)


def test_decode_and_encode_shapes():
    assert infer("_contrib_box_decode", {}, [(2, 5, 4), (1, 5, 4)])[1] == [(2, 5, 4)]
    with pytest.raises(ShapeError, match=r"_contrib_box_decode.*'data'.*\(5, 4\).*3-D"):
        infer("_contrib_box_decode", {}, [(5, 4), (1, 5, 4)])
    ins, outs, _ = infer(
        "_contrib_box_encode", {}, [(2, 3), (2, 3), (2, 3, 4), (2, 7, 4), None, None]
    )
    assert outs == [(2, 3, 4), (2, 3, 4)] and ins[4:] == [(4,), (4,)]
    with pytest.raises(ShapeError, match=r"'anchors'.*\(2, 3, 5\)"):
        infer("_contrib_box_encode", {}, [(2, 3), (2, 3), (2, 3, 5), (2, 7, 4), None, None])


def test_decode_inverts_encode(ctx):
    anchors = np.array([[[0.1, 0.1, 0.4, 0.5], [0.2, 0.3, 0.9, 0.8]]], np.float64)
    refs = np.array([[[0.15, 0.05, 0.5, 0.45], [0.3, 0.2, 0.7, 0.9]]], np.float64)
    stds = np.array([0.1, 0.1, 0.2, 0.2])
    encoded, mask = _run(
        ctx,
        "_contrib_box_encode",
        {},
        [np.ones((1, 2)), np.array([[0.0, 1.0]]), anchors, refs, np.zeros(4), stds],
    )
    assert (mask == 1).all()
    attrs = {"format": "corner", "std0": 0.1, "std1": 0.1, "std2": 0.2, "std3": 0.2}
    (decoded,) = _run(ctx, "_contrib_box_decode", attrs, [encoded, anchors])
    np.testing.assert_allclose(decoded, refs, rtol=1e-6)


def test_bipartite_topk_limits_matches(ctx):
    scores = np.array([[0.9, 0.1], [0.2, 0.8]], np.float32)
    rows, cols = _run(ctx, "_contrib_bipartite_matching", {"threshold": 0.05, "topk": 1}, [scores])
    assert rows.tolist() == [0, -1] and cols.tolist() == [0, -1]


def test_zero_gradients(ctx):
    op = opdef("_contrib_box_iou")
    lhs, rhs = np.ones((2, 4), np.float32), np.ones((3, 4), np.float32)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in (lhs, rhs)]
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(op_ctx, op.parse({}), arrays, [])
    grads = op.backward(op_ctx, op.parse({}), saved, outs, [True, True])
    assert [np.asarray(ctx.backend.to_host(g)).tolist() for g in grads] == [
        np.zeros((2, 4)).tolist(),
        np.zeros((3, 4)).tolist(),
    ]


def test_contrib_namespaces_reach_the_operators():
    data = mx.nd.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2]])
    out = mx.contrib.nd.box_non_maximum_suppression(data)
    assert out.asnumpy().tolist() == mx.nd.contrib.box_nms(data).asnumpy().tolist()
    assert mx.contrib.sym.box_nms(mx.sym.Variable("x")).list_outputs() == ["box_nms0_output0"]


def test_nms_converts_boxes_with_negative_corners(ctx):
    # MXNet 1.9.1 leaves this row in corner format (documented difference)
    data = np.array([[0, 0.9, -0.1, 0.1, 0.2, 0.3]], np.float32)
    (out,) = _run(ctx, "_contrib_box_nms", {"out_format": "center"}, [data])
    np.testing.assert_allclose(out, [[0, 0.9, 0.05, 0.2, 0.3, 0.2]], rtol=1e-6)


def test_nms_output_is_numbered_as_mxnet_names_it():
    """MXNet 1.9.1: box_nms has a hidden second output, so its visible one is output0."""
    import rebind as mx

    nms = mx.sym.contrib.box_nms(mx.sym.Variable("x"), name="nms")
    assert nms.list_outputs() == ["nms_output0"]
    assert "nms_output0" in nms.get_internals().list_outputs()
