"""Golden cases: arange_like, div_sqrt_dim, interleaved attention matmuls, index_copy,
index_array, allclose, gradientmultiplier, round_ste, sign_ste, quadratic."""

from tests.ops.cases import arg, case


def _contrib(case_id, op, args, attrs=None):
    return case(case_id, op, args, attrs, sym_func="contrib." + op[len("_contrib_") :])


def _index(values):
    return arg((len(values),), "float32", kind="values", values=values, grad=False)


HELPERS = [
    _contrib("div_sqrt_dim", "_contrib_div_sqrt_dim", {"data": arg((2, 3, 16))}),
    _contrib(
        "gradientmultiplier",
        "_contrib_gradientmultiplier",
        {"data": arg((3, 4))},
        {"scalar": -0.35},
    ),
    _contrib("round_ste", "_contrib_round_ste", {"data": arg((4, 5), high=3.0)}),
    _contrib("quadratic_default", "_contrib_quadratic", {"data": arg((3, 4))}),
    _contrib(
        "quadratic_f64",
        "_contrib_quadratic",
        {"data": arg((2, 5), "float64")},
        {"a": 0.5, "b": -2.0, "c": 1.25},
    ),
    _contrib("sign_ste_f64", "_contrib_sign_ste", {"data": arg((2, 6), "float64")}),
    _contrib("arange_like", "_contrib_arange_like", {"data": arg((2, 3, 4))}),
    _contrib(
        "arange_like_axis_repeat",
        "_contrib_arange_like",
        {"data": arg((2, 7, 4))},
        {"start": 1.5, "step": 0.5, "repeat": 3, "axis": -2},
    ),
    _contrib("index_array_all", "_contrib_index_array", {"data": arg((2, 3, 2))}),
    _contrib(
        "index_array_axes", "_contrib_index_array", {"data": arg((3, 2, 4))}, {"axes": (-1, 0)}
    ),
    _contrib(
        "index_copy",
        "_contrib_index_copy",
        {
            "old_tensor": arg((5, 3)),
            "index_vector": _index([4, 0, 2]),
            "new_tensor": arg((3, 3)),
        },
    ),
]

ATTENTION = [
    _contrib(
        "interleaved_selfatt_qk",
        "_contrib_interleaved_matmul_selfatt_qk",
        {"queries_keys_values": arg((5, 2, 24))},
        {"heads": 2},
    ),
    _contrib(
        "interleaved_selfatt_valatt",
        "_contrib_interleaved_matmul_selfatt_valatt",
        {"queries_keys_values": arg((5, 2, 24)), "attention": arg((4, 5, 5), low=0)},
        {"heads": 2},
    ),
    _contrib(
        "interleaved_encdec_qk",
        "_contrib_interleaved_matmul_encdec_qk",
        {"queries": arg((3, 2, 12)), "keys_values": arg((6, 2, 24))},
        {"heads": 3},
    ),
    _contrib(
        "interleaved_encdec_valatt",
        "_contrib_interleaved_matmul_encdec_valatt",
        {"keys_values": arg((6, 2, 24)), "attention": arg((6, 3, 6), low=0)},
        {"heads": 3},
    ),
]

_NAN = float("nan")


def _close(case_id, a, b, attrs, dtype="float32"):
    args = {
        "a": arg((len(a),), dtype, kind="values", values=a, grad=False),
        "b": arg((len(b),), dtype, kind="values", values=b, grad=False),
    }
    return case(
        case_id, "_contrib_allclose", args, attrs, sym_func="contrib.allclose", backward=False
    )


ALLCLOSE = [
    _close("allclose_nan_equal", [1.0, 2.0, _NAN], [1.0, 2.000001, _NAN], {}, "float64"),
    _close("allclose_nan_unequal", [1.0, 2.0, _NAN], [1.0, 2.0, _NAN], {"equal_nan": False}),
    _close("allclose_rtol", [100.0, -3.0], [100.5, -3.01], {"rtol": 0.004, "atol": 0.0}),
    _close("allclose_far", [100.0, -3.0], [100.5, -3.1], {"rtol": 0.004, "atol": 0.0}),
]

CASES = HELPERS + ATTENTION + ALLCLOSE
