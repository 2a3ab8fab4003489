"""SequenceLast, SequenceMask, SequenceReverse: golden cases, gradients, inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

SEQUENCE_OPS = ["SequenceLast", "SequenceMask", "SequenceReverse"]


@pytest.mark.parametrize("case_id", case_ids(*SEQUENCE_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(op_name, attrs, inputs, ctx, heads=None):
    """Outputs and (with heads) gradients of one op, on host."""
    op, backend = opdef(op_name), ctx.backend
    p, op_ctx = op.parse(attrs), OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(
        op_ctx, p, [backend.asarray(a, a.dtype, ctx.device_id) for a in inputs], []
    )
    host = [np.asarray(backend.to_host(o)) for o in outs]
    if heads is None:
        return host
    grads = op.backward(
        op_ctx,
        p,
        saved,
        [backend.asarray(h, h.dtype, ctx.device_id) for h in heads],
        [True] * len(inputs),
    )
    return host, [None if g is None else np.asarray(backend.to_host(g)) for g in grads]


@pytest.mark.parametrize("op_name", SEQUENCE_OPS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("with_lengths", [False, True])
def test_numeric_gradient(op_name, axis, with_lengths, ctx):
    if op_name == "SequenceReverse" and axis == 1:
        pytest.skip("MXNet's SequenceReverse has only axis 0")
    rng = np.random.default_rng(4)
    data = rng.standard_normal((4, 3, 2) if axis == 0 else (3, 4, 2))
    attrs, inputs = {"axis": str(axis)}, [data]
    if with_lengths:
        attrs.update(use_sequence_length="True", value="-2.5")
        inputs.append(np.array([4.0, 1.0, 2.0]))
    attrs = {k: v for k, v in attrs.items() if op_name == "SequenceMask" or k != "value"}
    check_numeric_gradient(op_name, attrs, inputs, ctx, grad_args=[0])


def test_sequence_length_has_no_gradient(ctx):
    data, lengths = np.ones((3, 2, 2), np.float32), np.array([1.0, 3.0], np.float32)
    for name in SEQUENCE_OPS:
        _, grads = _run(
            name,
            {"use_sequence_length": "True"},
            [data, lengths],
            ctx,
            heads=[
                np.ones(s, np.float32) for s in [(2, 2) if name == "SequenceLast" else (3, 2, 2)]
            ],
        )
        assert grads[1] is None and grads[0].shape == data.shape


def test_lengths_are_truncated_and_clipped(ctx):
    data = np.arange(8, dtype=np.float64).reshape(4, 2)
    lengths = np.array([2.7, 9.0])  # 2.7 counts as 2; 9 as the whole sequence
    attrs = {"use_sequence_length": "True"}
    np.testing.assert_array_equal(_run("SequenceLast", attrs, [data, lengths], ctx)[0], [2, 7])
    np.testing.assert_array_equal(
        _run("SequenceMask", attrs, [data, lengths], ctx)[0][:, 0], [0, 2, 0, 0]
    )
    np.testing.assert_array_equal(
        _run("SequenceReverse", attrs, [data, lengths], ctx)[0], [[2, 7], [0, 5], [4, 3], [6, 1]]
    )


def test_sequence_last_of_an_empty_sequence_reads_step_zero(ctx):
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = _run(
        "SequenceLast",
        {"use_sequence_length": "True"},
        [data, np.array([0.0, 2.0], np.float32)],
        ctx,
    )[0]
    np.testing.assert_array_equal(out, [0, 3])


def test_mask_keeps_dtype_and_fills_value(ctx):
    data = np.ones((3, 2, 2), np.float16)
    out = _run(
        "SequenceMask",
        {"use_sequence_length": "True", "value": "-1e4"},
        [data, np.array([1, 2], np.int32)],
        ctx,
    )[0]
    assert out.dtype == np.float16
    assert (out[1:, 0] == -1e4).all() and (out[2, 1] == -1e4).all() and out[:2, 1].min() == 1


# -- inference -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op_name, attrs, data, out",
    [
        ("SequenceLast", {}, (5, 3, 4), (3, 4)),
        ("SequenceLast", {"axis": "1"}, (3, 5, 4, 2), (3, 4, 2)),
        ("SequenceLast", {"axis": "1"}, (3, 5), (3,)),
        ("SequenceMask", {"axis": "1"}, (3, 5, 4), (3, 5, 4)),
        ("SequenceReverse", {}, (5, 3), (5, 3)),
    ],
)
def test_infer_output_and_lengths(op_name, attrs, data, out):
    attrs = dict(attrs, use_sequence_length="True")
    ins, outs, _ = infer(op_name, attrs, [data, None])
    assert outs == [out] and ins == [data, (data[1 - int(attrs.get("axis", 0))],)]


def test_infer_data_from_output_for_same_shape_ops():
    for name in ("SequenceMask", "SequenceReverse"):
        ins, outs, _ = infer(name, {}, [None], out_shapes=[(4, 2, 3)])
        assert ins == [(4, 2, 3)] and outs == [(4, 2, 3)]


@pytest.mark.parametrize(
    "op_name, shapes",
    [
        ("SequenceLast", [(5,)]),
        ("SequenceMask", [(5, 3, 2), (5,)]),
        ("SequenceReverse", [(5, 3), (4,)]),
    ],
)
def test_bad_shapes(op_name, shapes):
    attrs = {"use_sequence_length": "True"} if len(shapes) == 2 else {}
    with pytest.raises(ShapeError, match="node0"):
        infer(op_name, attrs, shapes)


def test_sequence_length_keeps_its_dtype():
    op = opdef("SequenceMask")
    p = op.parse({"use_sequence_length": "True"})
    assert op.infer_types(p, ["float16", "int32"])[:2] == (["float16", "int32"], ["float16"])
    assert op.infer_types(p, ["float32", None])[0] == ["float32", "float32"]


@pytest.mark.parametrize(
    "op_name, attrs, fragment",
    [
        ("SequenceLast", {"axis": "2"}, "axis='2' is invalid"),
        ("SequenceMask", {"value": "x"}, "value='x' is invalid"),
        ("SequenceReverse", {"axis": "1"}, "only reverses along axis 0"),
        ("SequenceMask", {"use_sequence_length": "maybe"}, "use_sequence_length='maybe'"),
    ],
)
def test_bad_params(op_name, attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef(op_name).parse(attrs)
