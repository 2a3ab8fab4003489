"""Golden cases of the tensor family: *_like, diag, cumsum, khatri_rao, N-d indexing,
moments, shape/size arrays, creators behind helpers, split_v2, histogram, internal ops.

Record with ``/work/mxenv/bin/python tests/recording/record_ops.py tensor``.
"""

from tests.ops.cases import arg, case


def _imperative(case_dict, out=()):
    """A case run through ``mx.nd`` (legacy NDArray functions that have no symbol form)."""
    return {**case_dict, "imperative": True, "out": list(out)}


def _index(shape, high, dtype="float32"):
    return arg(shape, dtype=dtype, kind="int", low=0, high=high, grad=False)


_LIKE = [
    case("slice_like_all", "slice_like", {"data": arg((3, 4, 5)), "shape_like": arg((2, 3, 5))}),
    case(
        "slice_like_axes",
        "slice_like",
        {"data": arg((3, 4, 5)), "shape_like": arg((1, 2))},
        attrs={"axes": (0, -2)},
    ),
    case(
        "slice_like_f64",
        "slice_like",
        {"data": arg((4, 6), "float64"), "shape_like": arg((4, 2, 7), "float64")},
        attrs={"axes": (1,)},
    ),
    case("reshape_like_all", "reshape_like", {"lhs": arg((2, 3, 4)), "rhs": arg((6, 4))}),
    case(
        "reshape_like_ranges",
        "reshape_like",
        {"lhs": arg((2, 3, 4)), "rhs": arg((5, 12, 7))},
        attrs={"lhs_begin": 1, "rhs_begin": 1, "rhs_end": 2},
    ),
    case(
        "reshape_like_neg",
        "reshape_like",
        {"lhs": arg((2, 3, 4)), "rhs": arg((6, 2, 7))},
        attrs={"lhs_begin": -2, "lhs_end": None, "rhs_begin": 0, "rhs_end": 2},
    ),
    case("broadcast_like_plain", "broadcast_like", {"lhs": arg((1, 3, 1)), "rhs": arg((2, 3, 4))}),
    case(
        "broadcast_like_axes",
        "broadcast_like",
        {"lhs": arg((1, 3, 1)), "rhs": arg((5, 6))},
        attrs={"lhs_axes": (0, 2), "rhs_axes": (1, 0)},
    ),
    case(
        "broadcast_like_f64",
        "broadcast_like",
        {"lhs": arg((4, 1), "float64"), "rhs": arg((4, 3), "float64")},
    ),
]

_MATRIX = [
    case("diag_matrix", "diag", {"data": arg((4, 5))}),
    case("diag_matrix_k", "diag", {"data": arg((4, 5))}, attrs={"k": -2}),
    case("diag_vector", "diag", {"data": arg((3,))}, attrs={"k": 1}),
    case("diag_3d_axes", "diag", {"data": arg((2, 3, 4))}, attrs={"k": 1, "axis1": 2, "axis2": 0}),
    case("cumsum_flat", "_np_cumsum", {"a": arg((2, 3, 4))}, sym_func="cumsum"),
    case(
        "cumsum_axis",
        "_np_cumsum",
        {"a": arg((3, 4), "float64")},
        attrs={"axis": 1},
        sym_func="cumsum",
    ),
    case(
        "cumsum_dtype",
        "_np_cumsum",
        {"a": arg((5,))},
        attrs={"axis": 0, "dtype": "float64"},
        sym_func="cumsum",
    ),
    case(
        "cumsum_int",
        "_np_cumsum",
        {"a": _index((2, 3), 9, "int32")},
        attrs={"axis": 0},
        sym_func="cumsum",
        backward=False,
    ),
    case(
        "khatri_rao_two",
        "khatri_rao",
        {"arg0": arg((2, 3)), "arg1": arg((4, 3))},
        positional=True,
        backward=False,
    ),
    case(
        "khatri_rao_three",
        "khatri_rao",
        {"arg0": arg((2, 2)), "arg1": arg((3, 2)), "arg2": arg((1, 2))},
        positional=True,
        backward=False,
    ),
    case("moments_axes", "moments", {"data": arg((3, 4, 5))}, attrs={"axes": (0, 2)}),
    case(
        "moments_keep",
        "moments",
        {"data": arg((3, 4), "float64")},
        attrs={"axes": (1,), "keepdims": True},
    ),
    case("moments_all", "moments", {"data": arg((2, 3))}, attrs={"axes": (0, 1)}),
    case("shape_array", "shape_array", {"data": arg((2, 3, 4))}, backward=False),
    case("size_array", "size_array", {"data": arg((2, 5))}, backward=False),
]

_INDEX = [
    case("gather_nd_2", "gather_nd", {"data": arg((3, 4, 2)), "indices": _index((2, 5), 3)}),
    case(
        "gather_nd_float_idx",
        "gather_nd",
        {
            "data": arg((3, 4)),
            "indices": arg((2, 3), kind="values", values=[[0, 1.7, 2], [0, 3, 1.2]], grad=False),
        },
    ),
    case(
        "gather_nd_dup",
        "gather_nd",
        {
            "data": arg((3,), "float64"),
            "indices": arg((1, 4), kind="values", values=[[0, 2, 0, 0]], grad=False),
        },
    ),
    case(
        "scatter_nd_rows",
        "scatter_nd",
        {"data": arg((2, 3)), "indices": arg((1, 2), kind="values", values=[[2, 0]], grad=False)},
        attrs={"shape": (4, 3)},
    ),
    case(
        "scatter_nd_points",
        "scatter_nd",
        {
            "data": arg((3,), "float64"),
            "indices": arg((2, 3), kind="values", values=[[0, 1, 2], [3, 0, 1]], grad=False),
        },
        attrs={"shape": (3, 4)},
    ),
    case(
        "ravel_multi_index",
        "_ravel_multi_index",
        {"data": arg((2, 3), kind="values", values=[[1, 0, 2], [3, 1, 0]], grad=False)},
        attrs={"shape": (3, 4)},
        sym_func="ravel_multi_index",
        backward=False,
    ),
    case(
        "ravel_multi_index_3",
        "_ravel_multi_index",
        {"data": arg((3, 2), kind="values", values=[[1, 0], [0, 2], [1, 4]], grad=False)},
        attrs={"shape": (2, 3, 5)},
        backward=False,
    ),
    case(
        "unravel_index",
        "_unravel_index",
        {"data": arg((4,), kind="values", values=[0, 5, 11, 7], grad=False)},
        attrs={"shape": (3, 4)},
        sym_func="unravel_index",
        backward=False,
    ),
    case(
        "unravel_index_3axes",
        "_unravel_index",
        {"data": arg((4,), kind="values", values=[3, 29, 17, 8], grad=False)},
        attrs={"shape": (2, 3, 5)},
        backward=False,
    ),
    case(
        "batch_take",
        "batch_take",
        {
            "a": arg((4, 3)),
            "indices": arg((4,), "int32", kind="values", values=[0, 2, 1, 7], grad=False),
        },
        backward=False,
    ),
]

_MAKE = [
    case("eye_square", "_eye", {}, attrs={"N": 3}, backward=False),
    case(
        "eye_rect_k", "_eye", {}, attrs={"N": 3, "M": 5, "k": 2, "dtype": "int32"}, backward=False
    ),
    case(
        "eye_neg_k", "_eye", {}, attrs={"N": 4, "M": 3, "k": -1, "dtype": "float64"}, backward=False
    ),
    case("linspace_end", "_linspace", {}, attrs={"start": 0, "stop": 1, "num": 5}, backward=False),
    case(
        "linspace_noend",
        "_linspace",
        {},
        attrs={"start": -2, "stop": 3, "num": 4, "endpoint": False, "dtype": "float64"},
        backward=False,
    ),
    case(
        "histogram_cnt",
        "_histogram",
        {"data": arg((20,), low=-2, high=2, grad=False)},
        attrs={"bin_cnt": 5, "range": (-1.5, 1.5)},
        backward=False,
    ),
    case(
        "histogram_bins",
        "_histogram",
        {
            "data": arg((3, 4), low=0, high=4, grad=False),
            "bins": arg((4,), kind="values", values=[0.5, 1, 2.5, 3.5], grad=False),
        },
        backward=False,
    ),
    case(
        "split_v2_indices",
        "_split_v2",
        {"data": arg((2, 5, 3))},
        attrs={"indices": (0, 2), "axis": 1},
    ),
    case(
        "split_v2_sections",
        "_split_v2",
        {"data": arg((4, 6))},
        attrs={"indices": (), "axis": -1, "sections": 3},
    ),
    case(
        "split_v2_squeeze",
        "_split_v2",
        {"data": arg((3, 2), "float64")},
        attrs={"indices": (0, 1, 2), "axis": 0, "squeeze_axis": True},
    ),
]

_INTERNAL = [
    case(
        "slice_assign",
        "_slice_assign",
        {"lhs": arg((3, 4)), "rhs": arg((2, 2))},
        attrs={"begin": (1, 0), "end": (3, 4), "step": (1, 2)},
        backward=False,
    ),
    case(
        "crop_assign",
        "_slice_assign",
        {"lhs": arg((3, 4, 2)), "rhs": arg((1, 4, 2))},
        attrs={"begin": (2,), "end": (None,)},
        sym_func="_crop_assign",
        backward=False,
    ),
    case(
        "slice_assign_scalar",
        "_slice_assign_scalar",
        {"data": arg((3, 4))},
        attrs={"scalar": 2.5, "begin": (None, 1), "end": (None, 3)},
        backward=False,
    ),
    case(
        "crop_assign_scalar",
        "_slice_assign_scalar",
        {"data": arg((4, 3))},
        attrs={"scalar": -1, "begin": (3, None), "end": (0, None), "step": (-2, None)},
        sym_func="_crop_assign_scalar",
        backward=False,
    ),
    case(
        "identity_like_rhs",
        "_identity_with_attr_like_rhs",
        {"lhs": arg((2, 3)), "rhs": arg((2, 3))},
    ),
    case("grad_add", "_grad_add", {"lhs": arg((2, 3)), "rhs": arg((2, 3))}, backward=False),
    case("cast_storage_default", "cast_storage", {"data": arg((2, 3))}, attrs={"stype": "default"}),
    case(
        "scatter_elemwise_div",
        "_scatter_elemwise_div",
        {"lhs": arg((2, 3)), "rhs": arg((2, 3), kind="positive")},
    ),
    case(
        "scatter_plus_scalar", "_scatter_plus_scalar", {"data": arg((2, 3))}, attrs={"scalar": 1.5}
    ),
    case(
        "scatter_minus_scalar",
        "_scatter_minus_scalar",
        {"data": arg((3,))},
        attrs={"scalar": 0.5},
        sym_func="_internal._scatter_minus_scalar",
    ),
    case(
        "rnn_param_concat",
        "_rnn_param_concat",
        {"arg0": arg((4,)), "arg1": arg((6,))},
        attrs={"dim": 0},
        positional=True,
        sym_func="_internal._rnn_param_concat",
    ),
    _imperative(
        case(
            "fill_element_0index",
            "fill_element_0index",
            {
                "lhs": arg((3, 4)),
                "mhs": arg((3,)),
                "rhs": arg((3,), kind="values", values=[0, 3, 1], grad=False),
            },
        )
    ),
]


def _internal(case_dict):
    """MXNet exposes the underscore operators under ``mx.sym._internal``."""
    func = case_dict["sym_func"]
    if func.startswith("_") and "." not in func:
        return {**case_dict, "sym_func": "_internal." + func}
    return case_dict


CASES = [_internal(c) for c in _LIKE + _MATRIX + _INDEX + _MAKE + _INTERNAL]
