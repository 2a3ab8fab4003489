"""Golden cases: gamma, gammaln, erfinv, hard_sigmoid, logical_not and the logical
and/or/xor family (elemwise, broadcast, scalar), with MXNet's legacy aliases."""

from tests.ops.cases import arg, case

_INTERNAL = "_internal."  # MXNet keeps the underscore operators in mx.sym._internal
_SHAPES = [(3, 4), (2, 3, 2), (5,)]
_FLOATS = ["float32", "float64"]


def _suffix(shape, dtype):
    return "x".join(map(str, shape)) + "_" + dtype.replace("float", "f")


def _truth_values(shape, dtype="float32", offset=0, grad=True):
    """Zeros (false) and non-zeros of both signs (true), in a pattern shifted by ``offset``."""
    count = 1
    for d in shape:
        count *= d
    flat = [(-1.5, 0.0, 2.0, 0.0, 1.0)[(i * 3 + offset) % 5] for i in range(count)]
    return arg(shape, dtype, kind="values", values=_nest(flat, shape), grad=grad)


def _nest(flat, shape):
    if len(shape) == 1:
        return list(flat)
    size = len(flat) // shape[0]
    return [_nest(flat[i * size : (i + 1) * size], shape[1:]) for i in range(shape[0])]


def _special_cases():
    inputs = {
        "gamma": lambda s, t: arg(s, t, kind="positive", low=0.2, high=6.0),
        "gammaln": lambda s, t: arg(s, t, kind="positive", low=0.1, high=20.0),
        "erfinv": lambda s, t: arg(s, t, low=-0.95, high=0.95),
    }
    cases = [
        case(f"math_{op}_{_suffix(shape, dtype)}", op, {"data": draw(shape, dtype)})
        for op, draw in inputs.items()
        for shape in _SHAPES
        for dtype in _FLOATS
    ]
    # the reflection formula: negative, non-integer inputs
    negative = [[-0.6, -1.5, -2.25], [-3.7, -0.1, -4.5]]
    for op in ("gamma", "gammaln"):
        for dtype in _FLOATS:
            values = arg((2, 3), dtype, kind="values", values=negative)
            cases.append(case(f"math_{op}_negative_{dtype}", op, {"data": values}))
    return cases


def _hard_sigmoid_cases():
    attr_sets = [{}, {"alpha": 0.3, "beta": 0.4}, {"alpha": -0.5}]
    cases = []
    for i, attrs in enumerate(attr_sets):
        for shape in _SHAPES[:2]:
            for dtype in _FLOATS:
                data = arg(shape, dtype, low=-4.0, high=4.0)
                cid = f"math_hard_sigmoid_{i}_{_suffix(shape, dtype)}"
                cases.append(case(cid, "hard_sigmoid", {"data": data}, attrs))
    return cases


def _logical_not_cases():
    cases = [
        case(f"math_logical_not_{_suffix(s, t)}", "logical_not", {"data": _truth_values(s, t)})
        for s in _SHAPES
        for t in _FLOATS
    ]
    data = arg((3, 4), "int32", kind="int", low=-2, high=3)
    cases.append(case("math_logical_not_int32", "logical_not", {"data": data}, backward=False))
    return cases


# (lhs shape, rhs shape) of the broadcast cases
_BROADCAST_SHAPES = [((2, 3), (2, 1)), ((3, 1, 4), (1, 2, 1)), ((4,), (2, 1, 4)), ((2, 3), (2, 3))]


def _binary_cases():
    cases = []
    for rule in ("and", "or", "xor"):
        for dtype in _FLOATS:
            for shape in _SHAPES[:2]:
                args = {"lhs": _truth_values(shape, dtype), "rhs": _truth_values(shape, dtype, 1)}
                cid = f"math_logical_{rule}_{_suffix(shape, dtype)}"
                op = f"_logical_{rule}"
                cases.append(case(cid, op, args, sym_func=_INTERNAL + op))
            for lhs, rhs in _BROADCAST_SHAPES:
                args = {"lhs": _truth_values(lhs, dtype), "rhs": _truth_values(rhs, dtype, 2)}
                rhs_text = "x".join(map(str, rhs))
                cid = f"math_broadcast_logical_{rule}_{_suffix(lhs, dtype)}_by_{rhs_text}"
                cases.append(case(cid, f"broadcast_logical_{rule}", args))
        ints = {"lhs": arg((2, 3), "int32", "int", -2, 3), "rhs": arg((1, 3), "int32", "int", 0, 2)}
        op = f"broadcast_logical_{rule}"
        cases.append(case(f"math_{op}_int32", op, ints, backward=False))
    return cases


_SCALAR_ATTRS = [{"scalar": 0.0}, {"scalar": 1.5}, {"scalar": -2}]


def _scalar_cases():
    cases = []
    for rule in ("and", "or", "xor"):
        op = f"_logical_{rule}_scalar"
        for i, attrs in enumerate(_SCALAR_ATTRS):
            for dtype in _FLOATS:
                cid = f"math_{op}_{i}_{dtype}"
                data = {"data": _truth_values((3, 4), dtype)}
                cases.append(case(cid, op, data, attrs, sym_func=_INTERNAL + op))
        # the scalar is cast to the array's dtype: 0.5 becomes 0 for int32, unless is_int=False
        ints = {"data": arg((2, 3), "int32", "int", -1, 2)}
        for suffix, attrs in (
            ("int", {"scalar": 0.5}),
            ("int_float", {"scalar": 0.5, "is_int": False}),
        ):
            cid = f"math_{op}_{suffix}"
            cases.append(case(cid, op, ints, attrs, sym_func=_INTERNAL + op, backward=False))
    return cases


# legacy alias -> canonical operator (MXNet's .add_alias in elemwise_binary_*_logic.cc)
ALIASES = {
    "_Equal": "_equal",
    "_Not_Equal": "_not_equal",
    "_Greater": "_greater",
    "_Greater_Equal": "_greater_equal",
    "_Lesser": "_lesser",
    "_Lesser_Equal": "_lesser_equal",
    "_Logical_And": "_logical_and",
    "_Logical_Or": "_logical_or",
    "_Logical_Xor": "_logical_xor",
    "_EqualScalar": "_equal_scalar",
    "_NotEqualScalar": "_not_equal_scalar",
    "_GreaterScalar": "_greater_scalar",
    "_GreaterEqualScalar": "_greater_equal_scalar",
    "_LesserScalar": "_lesser_scalar",
    "_LesserEqualScalar": "_lesser_equal_scalar",
    "_LogicalAndScalar": "_logical_and_scalar",
    "_LogicalOrScalar": "_logical_or_scalar",
    "_LogicalXorScalar": "_logical_xor_scalar",
}


def _alias_cases():
    cases = []
    for alias, op in ALIASES.items():
        if op.endswith("_scalar"):
            args, attrs = {"data": _truth_values((2, 3))}, {"scalar": 1.0}
        else:
            args = {"lhs": _truth_values((2, 3)), "rhs": _truth_values((2, 3), offset=1)}
            attrs = {}
        cases.append(case(f"math_alias{alias}", op, args, attrs, sym_func=_INTERNAL + alias))
    return cases


CASES = (
    _special_cases()
    + _hard_sigmoid_cases()
    + _logical_not_cases()
    + _binary_cases()
    + _scalar_cases()
    + _alias_cases()
)
