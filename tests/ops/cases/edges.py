"""Golden cases of edge values (issue 30): ties, zeros, NaN and infinities, out-of-range bounds.

Every input is an exact list (kind "values") so the recording shows what
MXNet 1.9.1 gives at the edge itself: rounding of halves, sign of NaN, modulo
by zero, BLAS's alpha/beta 0 not reading an operand, slice bounds past the
axis, and indices outside the range. Edges whose MXNet answer is undefined
(reads past a buffer) or build-dependent (MKLDNN) are left out; the report of
issue 30 lists them.
"""

from tests.ops.cases import arg, case

_INTERNAL = "_internal."
NAN, INF = float("nan"), float("inf")

# ties both sides of zero, signed zeros, values near a tie, NaN and infinities
TIES = [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 0.49999997, -3.7, 3.7, NAN, INF, -INF]
# dividends and divisors: every sign pair, zero divisors, NaN and infinities
DIVIDENDS = [5.0, -5.0, 5.0, -5.0, 0.0, 3.0, -3.0, 5.5, NAN, INF, 1.0, -1.0, -0.0, 7.0]
DIVISORS = [3.0, 3.0, -3.0, -3.0, 3.0, 0.0, 0.0, 0.0, 2.0, 2.0, INF, INF, 2.0, -0.0]
INT_DIVIDENDS = [5, -5, 5, -5, 0, 3, -3, 7]
INT_DIVISORS = [3, 3, -3, -3, 3, 0, 0, 0]
MATRIX = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]


def _values(values, dtype="float32", shape=None, grad=True):
    return arg(shape or (len(values),), dtype, kind="values", values=values, grad=grad)


def _rounding_cases():
    cases = []
    for op in ("rint", "round", "fix", "ceil", "floor", "trunc", "sign", "abs"):
        for dtype in ("float32", "float64"):
            cases.append(case(f"edges_{op}_{dtype}", op, {"data": _values(TIES, dtype)}))
    cases.append(case("edges_rint_float16", "rint", {"data": _values(TIES, "float16")}))
    for op in ("rint", "sign"):
        data = _values([-3, -1, 0, 1, 5], "int32")
        cases.append(case(f"edges_{op}_int32", op, {"data": data}, backward=False))
    return cases


def _mod_cases():
    cases = []
    for dtype in ("float32", "float64"):
        pair = {"lhs": _values(DIVIDENDS, dtype), "rhs": _values(DIVISORS, dtype)}
        cases.append(case(f"edges_broadcast_mod_{dtype}", "broadcast_mod", pair))
        cases.append(case(f"edges_mod_{dtype}", "_mod", pair, sym_func=_INTERNAL + "_mod"))
    for dtype in ("int32", "int8", "int64"):
        pair = {"lhs": _values(INT_DIVIDENDS, dtype), "rhs": _values(INT_DIVISORS, dtype)}
        cases.append(case(f"edges_broadcast_mod_{dtype}", "broadcast_mod", pair, backward=False))
    pair = {"lhs": _values([5, 7, 0, 200], "uint8"), "rhs": _values([3, 0, 0, 7], "uint8")}
    cases.append(case("edges_broadcast_mod_uint8", "broadcast_mod", pair, backward=False))
    # the divisor 0 broadcast over a row
    pair = {"lhs": _values(DIVIDENDS[:4] * 2, shape=(2, 4)), "rhs": _values([0.0], shape=(1, 1))}
    cases.append(case("edges_broadcast_mod_zero_row", "broadcast_mod", pair))
    for scalar in (0.0, 3.0, -3.0, 2.5):
        tag = str(scalar).replace("-", "neg").replace(".", "_")
        for op in ("_mod_scalar", "_rmod_scalar"):
            data = {"data": _values(DIVIDENDS)}
            attrs = {"scalar": scalar}
            cases.append(case(f"edges{op}_{tag}", op, data, attrs, sym_func=_INTERNAL + op))
            data = {"data": _values(INT_DIVIDENDS, "int32")}
            cid = f"edges{op}_{tag}_int32"
            cases.append(case(cid, op, data, attrs, sym_func=_INTERNAL + op, backward=False))
    return cases


def _blas_cases():
    finite = [[1.0, 2.0], [3.0, 4.0]]
    poison = [[NAN, INF], [-INF, NAN]]
    lower = [[1.0, 0.0], [2.0, 3.0]]
    cases = []
    for dtype in ("float32", "float64"):
        # beta 0: C is not read; alpha 0: A and B are not read
        args = {
            "A": _values(finite, dtype, (2, 2)),
            "B": _values(finite, dtype, (2, 2)),
            "C": _values(poison, dtype, (2, 2)),
        }
        cases.append(
            case(
                f"edges_gemm_beta0_{dtype}",
                "_linalg_gemm",
                args,
                {"beta": 0.0},
                sym_func="linalg.gemm",
            )
        )
    args = {
        "A": _values(poison, shape=(2, 2)),
        "B": _values(finite, shape=(2, 2)),
        "C": _values(finite, shape=(2, 2)),
    }
    cases.append(
        case("edges_gemm_alpha0", "_linalg_gemm", args, {"alpha": 0.0}, sym_func="linalg.gemm")
    )
    args = {"A": _values(poison, shape=(2, 2)), "B": _values(finite, shape=(2, 2))}
    cases.append(
        case("edges_gemm2_alpha0", "_linalg_gemm2", args, {"alpha": 0.0}, sym_func="linalg.gemm2")
    )
    args = {"A": _values(lower, shape=(2, 2)), "B": _values(poison, shape=(2, 2))}
    cases.append(
        case("edges_trmm_alpha0", "_linalg_trmm", args, {"alpha": 0.0}, sym_func="linalg.trmm")
    )
    cases.append(
        case("edges_trsm_alpha0", "_linalg_trsm", args, {"alpha": 0.0}, sym_func="linalg.trsm")
    )
    args = {"A": _values(poison, shape=(2, 2))}
    cases.append(
        case("edges_syrk_alpha0", "_linalg_syrk", args, {"alpha": 0.0}, sym_func="linalg.syrk")
    )
    return cases


# (begin, end, step) of slices whose bounds MXNet clips, and of empty ranges
CLIPPED = [
    ((0, 0), (5, 10), None),
    ((-1, -3), (None, None), None),
    ((3, 0), (-5, 4), (-1, 1)),
    ((None, 3), (None, 0), (1, -1)),
    ((0, 0), (3, 4), (2, 3)),
    ((2, -10), (-10, 10), (-1, 2)),
    ((None, None), (None, None), (-1, -2)),
]
EMPTY = [
    ((1, 1), (1, 1), None),
    ((2, 3), (0, 0), None),
    ((5, 5), (6, 6), None),
    ((0, 0), (-4, 4), None),
]


def _bounds(begin, end, step):
    attrs = {"begin": begin, "end": end}
    if step is not None:
        attrs["step"] = step
    return attrs


def _slice_cases():
    cases = []
    for i, (begin, end, step) in enumerate(CLIPPED):
        data = {"data": _values(MATRIX, shape=(3, 4))}
        attrs = _bounds(begin, end, step)
        cases.append(case(f"edges_slice_clipped_{i}", "slice", data, attrs))
        scalar = {"scalar": -1.0, **attrs}
        op = "_slice_assign_scalar"
        cid = f"edges_slice_assign_scalar_clipped_{i}"
        cases.append(case(cid, op, data, scalar, sym_func=_INTERNAL + op, backward=False))
    cases.append(case("edges_crop_clipped", "slice", data, _bounds(*CLIPPED[0]), sym_func="crop"))
    for i, (begin, end, step) in enumerate(EMPTY):
        scalar = {"scalar": -1.0, **_bounds(begin, end, step)}
        op = "_slice_assign_scalar"
        cid = f"edges_slice_assign_scalar_empty_{i}"
        cases.append(case(cid, op, data, scalar, sym_func=_INTERNAL + op, backward=False))
    # the value written has the clipped region's shape
    args = {"lhs": _values(MATRIX, shape=(3, 4)), "rhs": _values([[-1.0, -2.0]], shape=(1, 2))}
    attrs = {"begin": (2, 2), "end": (7, 9)}
    cases.append(
        case(
            "edges_slice_assign_clipped",
            "_slice_assign",
            args,
            attrs,
            sym_func=_INTERNAL + "_slice_assign",
            backward=False,
        )
    )
    return cases


def _index_cases():
    indices = [0.0, 5.0, -1.0, 2.0, 2.9]
    cases = [
        case(
            "edges_onehot_encode_out_of_range",
            "_onehot_encode",
            {"lhs": _values(indices, grad=False), "rhs": arg((5, 3))},
            sym_func=_INTERNAL + "_onehot_encode",
            backward=False,
            imperative=True,
            out=("rhs",),
        ),
        {
            **case(
                "edges_fill_element_0index_out_of_range",
                "fill_element_0index",
                {
                    "lhs": arg((4, 3)),
                    "mhs": _values([1.0, 2.0, 3.0, 4.0]),
                    "rhs": _values([0.0, 5.0, -1.0, 2.7], grad=False),
                },
            ),
            "imperative": True,
        },
        case(
            "edges_one_hot_out_of_range",
            "one_hot",
            {"indices": _values([0.0, 5.0, -1.0, 2.0, 2.9, -0.5], grad=False)},
            {"depth": 3},
        ),
        case(
            "edges_one_hot_out_of_range_int32",
            "one_hot",
            {"indices": _values([0, 5, -1, 2, 3], "int32")},
            {"depth": 3},
            backward=False,
        ),
        case(
            "edges_embedding_out_of_range",
            "Embedding",
            {
                "data": _values([0.0, 3.0, -1.0, 5.0, 1.7], grad=False),
                "weight": _values(MATRIX, shape=(3, 4)),
            },
            {"input_dim": 3, "output_dim": 4},
        ),
        case(
            "edges_batch_take_out_of_range",
            "batch_take",
            {"a": _values(MATRIX, shape=(3, 4)), "indices": _values([4, -1, -5], "int32")},
            backward=False,
        ),
    ]
    for mode in ("clip", "wrap"):
        take = {
            "a": _values(MATRIX, shape=(3, 4)),
            "indices": _values([0.0, 3.0, -1.0, 7.0, -4.0, 1.6, -0.4], grad=False),
        }
        cases.append(case(f"edges_take_{mode}", "take", take, {"mode": mode}))
        take = {"a": _values(MATRIX, shape=(3, 4)), "indices": _values([0, 4, -1, -5, 9], "int32")}
        cases.append(case(f"edges_take_{mode}_axis1", "take", take, {"mode": mode, "axis": 1}))
        pick = {
            "data": _values(MATRIX, shape=(3, 4)),
            "index": _values([5.0, -1.0, 2.6], grad=False),
        }
        cases.append(case(f"edges_pick_{mode}", "pick", pick, {"mode": mode, "axis": 1}))
        pick = {
            "data": _values(MATRIX, shape=(3, 4)),
            "index": _values([3.0, -1.0, 2.0, -4.0], grad=False),
        }
        cases.append(case(f"edges_pick_{mode}_axis0", "pick", pick, {"mode": mode, "axis": 0}))
    return cases


def _nan_cases():
    values = [1.0, NAN, -2.0, INF, -INF, 0.0]
    other = [NAN, 1.0, -3.0, 2.0, NAN, -0.0]
    pair = {"lhs": _values(values), "rhs": _values(other)}
    cases = [
        case(f"edges_{op}_nan", op, pair)
        for op in ("broadcast_maximum", "broadcast_minimum", "broadcast_hypot")
    ]
    for op in ("_maximum_scalar", "_minimum_scalar"):
        cases.append(
            case(
                f"edges{op}_nan",
                op,
                {"data": _values(values)},
                {"scalar": 0.5},
                sym_func=_INTERNAL + op,
            )
        )
    rows = [[1.0, NAN, 3.0], [-1.0, -2.0, -3.0], [INF, -INF, 0.0]]
    # nanprod's gradient stays away from zeros and infinities: MXNet's out/x is NaN there
    finite = [[1.0, NAN, 3.0], [-1.0, -2.0, -3.0], [NAN, NAN, 2.0]]
    for op in ("max", "min", "sum", "nansum", "nanprod", "argmax", "argmin"):
        data = {"data": _values(finite if op == "nanprod" else rows, shape=(3, 3))}
        cases.append(
            case(
                f"edges_{op}_nan_axis1",
                op,
                data,
                {"axis": 1},
                backward=op not in ("argmax", "argmin"),
            )
        )
    data = {"data": _values([1.5, NAN, -2.0, INF, -INF, 0.5, -0.7])}
    cases.append(case("edges_clip_nan", "clip", data, {"a_min": -1.0, "a_max": 1.0}))
    cases.append(case("edges_relu_nan", "relu", data))
    for dtype in ("int8", "uint8", "int32"):
        data = {"data": _values([300.0, -300.0, 127.5, 128.0, -129.0, 255.9, -1.0, 1.7, -1.7])}
        cases.append(
            case(f"edges_cast_float32_{dtype}", "Cast", data, {"dtype": dtype}, backward=False)
        )
    data = {"data": _values([[1.0, 2.0]], shape=(1, 2))}
    cases.append(
        case("edges_softmax_temperature0", "softmax", data, {"temperature": 0.0}, backward=False)
    )
    return cases


# integer data with scalars outside its dtype: MXNet converts the scalar as C does
INTEGER_DATA = {
    "uint8": [0, 1, 5, 200, 255],
    "int8": [-128, -1, 0, 5, 127],
    "int32": [-5, 0, 7, 2147483647, -2147483648],
}
INTEGER_SCALARS = [
    ("_plus_scalar", "uint8", -1.0),
    ("_minus_scalar", "uint8", 300.7),
    ("_rminus_scalar", "uint8", 256.0),
    ("_mul_scalar", "int8", -300.0),
    ("_div_scalar", "int8", 300.7),
    ("_maximum_scalar", "int8", 256.0),
    ("_minimum_scalar", "uint8", -300.0),
    ("_equal_scalar", "uint8", 256.0),
    ("_greater_scalar", "int32", 1e10),
    ("_plus_scalar", "int32", 1e10),
    ("_power_scalar", "int32", -1.0),
    ("_rpower_scalar", "int32", 2.0),
]


def _integer_cases():
    cases = []
    for op, dtype, scalar in INTEGER_SCALARS:
        data = {"data": _values(INTEGER_DATA[dtype], dtype)}
        cid = f"edges{op}_{dtype}_{int(scalar)}"
        attrs = {"scalar": scalar}
        cases.append(case(cid, op, data, attrs, sym_func=_INTERNAL + op, backward=False))
    for dtype, data in INTEGER_DATA.items():
        attrs = {"a_min": -1000.5, "a_max": 1000.5}
        args = {"data": _values(data, dtype)}
        cases.append(case(f"edges_clip_wide_{dtype}", "clip", args, attrs, backward=False))
    pair = {
        "lhs": _values([2, 0, -2, 3, 1, 5], "int32"),
        "rhs": _values([-1, -1, 3, 31, -5, 2], "int32"),
    }
    cases.append(case("edges_broadcast_power_int32", "broadcast_power", pair, backward=False))
    return cases


CASES = _rounding_cases() + _mod_cases() + _blas_cases() + _slice_cases() + _index_cases()
CASES += _nan_cases() + _integer_cases()
