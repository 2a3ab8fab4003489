"""Golden cases of the internal operators MXNet's Python wrappers call (recorded through mx.nd).

MXNet runs these only imperatively, most of them writing into ``out=``:
``mx.nd.onehot_encode`` calls ``_onehot_encode(indices, out, out=out)``,
``NDArray.__setitem__`` calls ``_set_value(src=v, out=self)``, and so on.
"""

from tests.ops.cases import arg, case

CASES = [
    case(
        "internal_onehot_encode",
        "_onehot_encode",
        {"lhs": arg((3,), kind="values", values=[0, 2, 1]), "rhs": arg((3, 4))},
        sym_func="_internal._onehot_encode",
        backward=False,
        imperative=True,
        out=("rhs",),
    ),
    case(
        "internal_scatter_set_nd",
        "_scatter_set_nd",
        {
            "lhs": arg((2, 3)),
            "rhs": arg((2,)),
            "indices": arg((2, 2), kind="values", values=[[0, 1], [1, 2]], grad=False),
        },
        {"shape": (2, 3)},
        sym_func="_internal._scatter_set_nd",
        backward=False,
        imperative=True,
        out=("lhs",),
    ),
    case(
        "internal_copyto",
        "_copyto",
        {"data": arg((2, 3))},
        sym_func="_internal._copyto",
        backward=False,
        imperative=True,
        out=("target",),
        targets={"target": arg((2, 3))},
    ),
    case(
        "internal_set_value",
        "_set_value",
        {},
        {"src": 2.5},
        sym_func="_internal._set_value",
        backward=False,
        imperative=True,
        out=("target",),
        targets={"target": arg((2, 3))},
    ),
    case(
        "internal_sample_unique_zipfian",
        "_sample_unique_zipfian",
        {},
        {"range_max": 100, "shape": (2, 5)},
        sym_func="_internal._sample_unique_zipfian",
        backward=False,
        random=True,
        imperative=True,
    ),
    case(
        "internal_reset_arrays",
        "reset_arrays",
        {"a": arg((2, 3)), "b": arg((4,), dtype="float64")},
        {"num_arrays": 2},
        backward=False,
        imperative=True,
    ),
]
