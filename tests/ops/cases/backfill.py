"""Golden cases for operators rebind had before issue 13 without a recorded case.

The shared golden set (tests/golden/manifest.json) left these out; each gets
forward (train and inference) and backward here, as the newer families do.
"""

from tests.ops.cases import arg, case


def _unary(name, low=-1.0, high=1.0, attrs=None):
    return case(f"backfill_{name}", name, {"data": arg((3, 4), low=low, high=high)}, attrs)


def _binary(name, lhs=(3, 4), rhs=(3, 4), low=-2.0, high=2.0, sym_func=None, **kinds):
    return case(
        f"backfill_{name.strip('_')}",
        name,
        {
            "lhs": arg(lhs, low=low, high=high, **kinds),
            "rhs": arg(rhs, low=low, high=high, **kinds),
        },
        sym_func=sym_func,
    )


def _comparison(name):
    # integer-valued floats, so that equal elements occur
    shapes = {
        "lhs": arg((3, 4), kind="int", low=0, high=3),
        "rhs": arg((1, 4), kind="int", low=0, high=3),
    }
    for spec in shapes.values():
        spec["dtype"] = "float32"
    return case(f"backfill_{name}", name, shapes)


CASES = [
    _unary("arccos", -0.9, 0.9),
    _unary("arcsin", -0.9, 0.9),
    _unary("arctan", -3.0, 3.0),
    _unary("arctanh", -0.9, 0.9),
    _unary("arcsinh", -3.0, 3.0),
    _unary("arccosh", 1.1, 3.0),
    _unary("sin", -3.0, 3.0),
    _unary("cos", -3.0, 3.0),
    _unary("tan", -1.2, 1.2),
    _unary("sinh", -2.0, 2.0),
    _unary("cosh", -2.0, 2.0),
    _unary("degrees", -3.0, 3.0),
    _unary("radians", -180.0, 180.0),
    _unary("rcbrt", 0.2, 3.0),
    _unary("ceil", -3.0, 3.0),
    _unary("fix", -3.0, 3.0),
    _unary("rint", -3.0, 3.0),
    _unary("trunc", -3.0, 3.0),
    _unary("nanprod", 0.5, 1.5, {"axis": 1}),
    _unary("reverse", attrs={"axis": 1}),
    case(
        "backfill_reverse_two_axes",
        "reverse",
        {"data": arg((2, 3, 4))},
        {"axis": (0, 2)},
    ),
    _binary("_hypot", sym_func="_internal._hypot"),
    _binary("_maximum", sym_func="_internal._maximum"),
    _binary("_minimum", sym_func="_internal._minimum"),
    _binary("_mod", low=1.0, high=5.0, sym_func="_internal._mod"),
    _binary("broadcast_hypot", rhs=(1, 4)),
    _binary("broadcast_mod", rhs=(1, 4), low=1.0, high=5.0),
    case(
        "backfill_hypot_scalar",
        "_hypot_scalar",
        {"data": arg((3, 4))},
        {"scalar": 2.0},
        sym_func="_internal._hypot_scalar",
    ),
    case(
        "backfill_mod_scalar",
        "_mod_scalar",
        {"data": arg((3, 4), low=0.0, high=5.0)},
        {"scalar": 1.5},
        sym_func="_internal._mod_scalar",
    ),
    case(
        "backfill_rmod_scalar",
        "_rmod_scalar",
        {"data": arg((3, 4), low=1.0, high=2.0)},
        {"scalar": 5.0},
        sym_func="_internal._rmod_scalar",
    ),
    _comparison("broadcast_equal"),
    _comparison("broadcast_not_equal"),
    _comparison("broadcast_greater"),
    _comparison("broadcast_greater_equal"),
    _comparison("broadcast_lesser"),
    _comparison("broadcast_lesser_equal"),
    case("backfill_amp_cast", "amp_cast", {"data": arg((3, 4))}, {"dtype": "float16"}),
    case(
        "backfill_amp_multicast",
        "amp_multicast",
        {"a": arg((3, 4)), "b": arg((2,))},
        {"num_outputs": 2},
        positional=True,
    ),
]
