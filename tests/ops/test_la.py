"""The linalg operators (_linalg_gemm ... _linalg_slogdet): golden cases, gradients, inference."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import DTypeMismatchError, ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

NAMES = (
    "gemm",
    "gemm2",
    "potrf",
    "potri",
    "trmm",
    "trsm",
    "sumlogdiag",
    "extractdiag",
    "makediag",
    "extracttrian",
    "maketrian",
    "syrk",
    "gelqf",
    "syevd",
    "inverse",
    "det",
    "slogdet",
)
OPS = tuple(f"_linalg_{name}" for name in NAMES)


@pytest.mark.parametrize("case_id", case_ids(*OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def test_every_operator_has_golden_cases():
    assert {case_id.split("_")[1] for case_id in case_ids(*OPS)} >= set(NAMES)


# -- inputs -----------------------------------------------------------------------


def _spd(rng, shape):
    a = rng.uniform(-1, 1, shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _lower(rng, shape):
    a = np.tril(rng.uniform(-1, 1, shape))
    index = np.arange(shape[-1])
    a[..., index, index] = rng.uniform(1, 2, shape[:-1])
    return a


def _upper(rng, shape):
    return np.swapaxes(_lower(rng, shape), -1, -2)


def _uniform(rng, shape):
    return rng.uniform(-1, 1, shape)


def _distinct_symmetric(rng, shape):
    """Symmetric matrices with well separated eigenvalues 1, 2, ..., n."""
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    values = np.arange(1.0, shape[-1] + 1)
    return (q * values[..., None, :]) @ np.swapaxes(q, -1, -2)


# -- numeric gradients (float64) ------------------------------------------------------

GRADIENT_CASES = [
    ("gemm", {}, [(_uniform, (2, 3)), (_uniform, (3, 4)), (_uniform, (2, 4))]),
    (
        "gemm",
        {"transpose_a": "True", "transpose_b": "True", "alpha": "2", "beta": "-0.5"},
        [(_uniform, (2, 3, 2)), (_uniform, (2, 4, 3)), (_uniform, (2, 2, 4))],
    ),
    ("gemm", {"axis": "0"}, [(_uniform, (3, 2, 4)), (_uniform, (4, 2, 2)), (_uniform, (3, 2, 2))]),
    ("gemm2", {"transpose_b": "True", "alpha": "0.5"}, [(_uniform, (3, 4)), (_uniform, (2, 4))]),
    ("gemm2", {"axis": "1"}, [(_uniform, (2, 3, 2, 4)), (_uniform, (2, 4, 2, 3))]),
    ("potri", {}, [(_lower, (2, 3, 3))]),
    ("potri", {"lower": "False"}, [(_upper, (3, 3))]),
    ("trmm", {}, [(_lower, (3, 3)), (_uniform, (3, 2))]),
    ("trmm", {"rightside": "True", "alpha": "2"}, [(_lower, (2, 3, 3)), (_uniform, (2, 2, 3))]),
    ("trmm", {"lower": "False", "transpose": "True"}, [(_upper, (3, 3)), (_uniform, (3, 2))]),
    (
        "trmm",
        {"lower": "False", "transpose": "True", "rightside": "True"},
        [(_upper, (3, 3)), (_uniform, (2, 3))],
    ),
    ("trsm", {"alpha": "-2"}, [(_lower, (2, 3, 3)), (_uniform, (2, 3, 2))]),
    ("trsm", {"transpose": "True"}, [(_lower, (3, 3)), (_uniform, (3, 2))]),
    ("trsm", {"rightside": "True", "lower": "False"}, [(_upper, (3, 3)), (_uniform, (2, 3))]),
    (
        "trsm",
        {"rightside": "True", "transpose": "True", "alpha": "0.5"},
        [(_lower, (3, 3)), (_uniform, (2, 3))],
    ),
    ("sumlogdiag", {}, [(_spd, (2, 3, 3))]),
    ("extractdiag", {"offset": "-1"}, [(_uniform, (2, 3, 3))]),
    ("makediag", {"offset": "1"}, [(_uniform, (2, 3))]),
    ("extracttrian", {"lower": "False"}, [(_uniform, (2, 3, 3))]),
    ("maketrian", {"offset": "-1"}, [(_uniform, (2, 6))]),
    ("syrk", {}, [(_uniform, (2, 2, 3))]),
    ("syrk", {"transpose": "True", "alpha": "3"}, [(_uniform, (3, 2))]),
    ("gelqf", {}, [(_uniform, (2, 2, 3))]),
    ("gelqf", {}, [(_uniform, (3, 3))]),
    ("inverse", {}, [(_spd, (2, 3, 3))]),
    ("det", {}, [(_spd, (2, 3, 3))]),
    ("det", {}, [(_uniform, (3, 3))]),
    ("slogdet", {}, [(_uniform, (2, 3, 3))]),
]


@pytest.mark.parametrize(
    "name, attrs, inputs", GRADIENT_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRADIENT_CASES)]
)
def test_numeric_gradient(name, attrs, inputs, ctx):
    rng = np.random.default_rng(13)
    arrays = [make(rng, shape) for make, shape in inputs]
    check_numeric_gradient(f"_linalg_{name}", attrs, arrays, ctx, rtol=1e-5, atol=1e-7)


def test_slogdet_sign_gets_no_gradient(ctx):
    rng = np.random.default_rng(14)
    a = _uniform(rng, (2, 3, 3))
    op = opdef("_linalg_slogdet")
    params, op_ctx = op.parse({}), OpContext(True, ctx.backend, ctx.device_id)
    _, saved = op.forward(op_ctx, params, [ctx.backend.asarray(a, a.dtype, 0)], [])
    heads = [np.ones(2), np.zeros(2)]
    grads = op.backward(
        op_ctx, params, saved, [ctx.backend.asarray(h, h.dtype, 0) for h in heads], [True]
    )
    np.testing.assert_array_equal(np.asarray(ctx.backend.to_host(grads[0])), np.zeros((2, 3, 3)))


def _run(ctx, op, params, a):
    outs, saved = op.forward(
        OpContext(True, ctx.backend, ctx.device_id),
        params,
        [ctx.backend.asarray(a, a.dtype, 0)],
        [],
    )
    return [np.asarray(ctx.backend.to_host(o)) for o in outs], saved


@pytest.mark.parametrize(
    "name, attrs, make",
    [
        ("potrf", {}, _spd),
        ("potrf", {"lower": "False"}, _spd),
        ("syevd", {}, _distinct_symmetric),
    ],
)
def test_numeric_gradient_of_symmetric_input(name, attrs, make, ctx):
    """These ops read one triangle of A; MXNet's gradient is the symmetric one.

    With f reading only A's lower (upper) triangle, the element-wise
    differences N give the symmetric gradient as (N + N^T) / 2.
    """
    rng = np.random.default_rng(15)
    a = make(rng, (2, 3, 3))
    op = opdef(f"_linalg_{name}")
    params = op.parse(attrs)
    outs, saved = _run(ctx, op, params, a)
    heads = [rng.standard_normal(o.shape) for o in outs]
    grads = op.backward(
        OpContext(True, ctx.backend, ctx.device_id),
        params,
        saved,
        [ctx.backend.asarray(h, h.dtype, 0) for h in heads],
        [True],
    )
    numeric, eps = np.zeros(a.size), 1e-6
    for k in range(a.size):
        values = []
        for step in (eps, -eps):
            moved = a.copy().reshape(-1)
            moved[k] += step
            outs, _ = _run(ctx, op, params, moved.reshape(a.shape))
            values.append(sum(float(np.sum(o * h)) for o, h in zip(outs, heads, strict=True)))
        numeric[k] = (values[0] - values[1]) / (2 * eps)
    numeric = numeric.reshape(a.shape)
    expected = (numeric + np.swapaxes(numeric, -1, -2)) / 2
    analytic = np.asarray(ctx.backend.to_host(grads[0]))
    np.testing.assert_allclose(analytic, expected, rtol=1e-5, atol=1e-7)


# -- shape and type inference -------------------------------------------------------------


@pytest.mark.parametrize(
    "name, attrs, in_shapes, expected",
    [
        ("gemm", {}, [(2, 3), (3, 4), None], [(2, 4)]),
        ("gemm", {"transpose_a": "True"}, [(5, 3, 2), (5, 3, 4), None], [(5, 2, 4)]),
        ("gemm", {"axis": "1"}, [(2, 3, 5, 4), (2, 4, 5, 6), None], [(2, 3, 5, 6)]),
        ("gemm2", {"transpose_b": "True"}, [(2, 3), (4, 3)], [(2, 4)]),
        ("gemm2", {"axis": "0"}, [(3, 2, 4), (4, 2, 5)], [(3, 2, 5)]),
        ("trmm", {}, [(2, 3, 3), (2, 3, 4)], [(2, 3, 4)]),
        ("trsm", {"rightside": "True"}, [(3, 3), (4, 3)], [(4, 3)]),
        ("syrk", {}, [(2, 3, 4)], [(2, 3, 3)]),
        ("syrk", {"transpose": "True"}, [(3, 4)], [(4, 4)]),
        ("sumlogdiag", {}, [(3, 3)], [(1,)]),
        ("sumlogdiag", {}, [(2, 5, 3, 3)], [(2, 5)]),
        ("extractdiag", {"offset": "-1"}, [(2, 4, 4)], [(2, 3)]),
        ("makediag", {"offset": "2"}, [(2, 3)], [(2, 5, 5)]),
        ("extracttrian", {"offset": "1"}, [(4, 4)], [(6,)]),
        ("maketrian", {"offset": "-1"}, [(2, 6)], [(2, 4, 4)]),
        ("gelqf", {}, [(2, 3, 5)], [(2, 3, 5), (2, 3, 3)]),
        ("syevd", {}, [(2, 4, 4)], [(2, 4, 4), (2, 4)]),
        ("potrf", {}, [(2, 3, 3)], [(2, 3, 3)]),
        ("inverse", {}, [(3, 3)], [(3, 3)]),
        ("det", {}, [(3, 3)], [(1,)]),
        ("det", {}, [(2, 3, 3)], [(2,)]),
        ("slogdet", {}, [(4, 2, 2)], [(4,), (4,)]),
    ],
)
def test_infer_shape(name, attrs, in_shapes, expected):
    _, out_shapes, _ = infer(f"_linalg_{name}", attrs, in_shapes)
    assert [tuple(s) for s in out_shapes] == expected


def test_gemm_gives_c_the_result_shape():
    in_shapes, _, _ = infer("_linalg_gemm", {"transpose_b": "True"}, [(2, 3), (4, 3), None])
    assert in_shapes[2] == (2, 4)


def test_triangular_ops_infer_inputs_from_the_result():
    in_shapes, _, _ = infer("_linalg_trsm", {"rightside": "True"}, [None, None], [(2, 4, 3)])
    assert in_shapes == [(2, 3, 3), (2, 4, 3)]


@pytest.mark.parametrize(
    "name, attrs, in_shapes, argument, fragment",
    [
        ("potrf", {}, [(3, 4)], "A", "square"),
        ("potri", {}, [(2, 3, 2)], "A", "square"),
        ("inverse", {}, [(2, 3)], "A", "square"),
        ("det", {}, [(4, 3)], "A", "square"),
        ("syevd", {}, [(3, 2)], "A", "square"),
        ("gemm", {}, [(2, 3), (4, 5), None], "B", "incompatible"),
        ("gemm", {}, [(2, 3), (3, 4), (2, 5)], "C", ""),
        ("gemm2", {}, [(2, 2, 3), (3, 3, 4)], "B", "differ"),
        ("gemm2", {}, [(2, 3), (2, 3, 4)], "B", "rank"),
        ("gemm2", {"axis": "2"}, [(2, 3, 4), (2, 4, 5)], "A", "axis"),
        ("trmm", {}, [(3, 3), (4, 2)], "B", "incompatible"),
        ("trsm", {}, [(3, 4), (4, 2)], "A", "square"),
        ("gelqf", {}, [(4, 3)], "A", "rows"),
        ("maketrian", {}, [(2, 5)], "A", "triangle"),
        ("extractdiag", {"offset": "3"}, [(3, 3)], "A", "offset"),
        ("sumlogdiag", {}, [(2, 3)], "A", "square"),
    ],
)
def test_bad_shapes_name_the_argument(name, attrs, in_shapes, argument, fragment):
    with pytest.raises(ShapeError) as info:
        infer(f"_linalg_{name}", attrs, in_shapes)
    message = str(info.value)
    assert "node0" in message and f"argument {argument!r}" in message
    assert fragment in message


def test_partial_shapes_leave_unknown_dimensions():
    _, out_shapes, _ = infer("_linalg_gemm2", {}, [(0, 3), (3, 0)])
    assert out_shapes == [(0, 0)]
    _, out_shapes, _ = infer("_linalg_potrf", {}, [None])
    assert out_shapes == [None]


def test_only_float32_and_float64():
    op = opdef("_linalg_gemm2")
    _, out_types, _ = op.infer_types(op.parse({}), ["float64", None])
    assert out_types == ["float64"]
    with pytest.raises(DTypeMismatchError, match="float32 and float64"):
        op.infer_types(op.parse({}), ["float16", None])


# -- names: operators, aliases, namespaces ------------------------------------------------


def test_aliases_and_outputs():
    for name in NAMES:
        op = opdef(f"_linalg_{name}")
        if name != "syevd":  # MXNet registers syevd without the linalg_ alias
            assert opdef(f"linalg_{name}") is op
    det, slogdet = opdef("_linalg_det"), opdef("_linalg_slogdet")
    assert det.num_hidden(det.parse({})) == 2 and slogdet.num_hidden(slogdet.parse({})) == 2
    assert opdef("_linalg_gemm").arguments(None) == ("A", "B", "C")


def test_ndarray_namespace_matches_numpy():
    rng = np.random.default_rng(16)
    a, b = rng.uniform(-1, 1, (2, 3, 3)), rng.uniform(-1, 1, (2, 3, 4))
    out = mx.nd.linalg.gemm2(mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64"))
    np.testing.assert_allclose(out.asnumpy(), a @ b, rtol=1e-12)
    spd = _spd(rng, (3, 3))
    factor = mx.nd.linalg.potrf(mx.nd.array(spd, dtype="float64")).asnumpy()
    np.testing.assert_allclose(factor @ factor.T, spd, rtol=1e-10)
    sign, logabsdet = mx.nd.linalg.slogdet(mx.nd.array(a, dtype="float64"))
    expected_sign, expected_log = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.asnumpy(), expected_sign)
    np.testing.assert_allclose(logabsdet.asnumpy(), expected_log, rtol=1e-12)
    assert sorted(mx.nd.linalg.__all__) == sorted(NAMES)


def test_symbol_namespace_names_nodes_as_mxnet():
    a = mx.sym.Variable("A")
    assert mx.sym.linalg.gemm2(a, a).name == "gemm20"
    assert mx.sym.linalg_gemm2(a, a).name == "linalg_gemm20"
    assert mx.sym.linalg.det(a).list_outputs() == ["det0_output0"]
    assert mx.sym.linalg.slogdet(a).list_outputs() == ["slogdet0_output0", "slogdet0_output1"]
    assert mx.sym.linalg.gelqf(a).list_outputs() == ["gelqf0_output0", "gelqf0_output1"]
    with pytest.raises(AttributeError):
        mx.sym.linalg.dot  # noqa: B018 - only the linalg operators live there
