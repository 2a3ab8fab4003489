# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""The imperative sparse operator cases record_sparse_ops.py records (MXNet 1.9.1).

Each case: ``mx.nd.<func>`` on inputs of given storage types, with edge values
(all-zero rows, an input with nnz = 0, NaN, out-of-range indices, float64).
"""

import numpy as np
from sparse_values import STYPES, encode, matrix

__all__ = ["imperative_cases"]


def imperative_cases(rng):
    cases = []

    def add(func, arrays, stypes, **params):
        cases.append(
            {
                "id": f"{func}-{len(cases)}",
                "func": func,
                "params": params,
                "inputs": [encode(a) for a in arrays],
                "stypes": list(stypes),
            }
        )

    a, b = matrix(rng, (4, 5)), matrix(rng, (5, 3), zero_rows=(0, 3))
    bt, at = matrix(rng, (3, 5)), matrix(rng, (4, 3), zero_rows=(2,))
    for s1 in STYPES:
        for s2 in STYPES:
            add("dot", [a, b], (s1, s2))
            add("dot", [a, at], (s1, s2), transpose_a=True)
            add("dot", [a, bt], (s1, s2), transpose_b=True)
            add("dot", [a, at.T.copy()], (s1, s2), transpose_a=True, transpose_b=True)
            for fs in STYPES:
                add("sparse.dot", [a, b], (s1, s2), forward_stype=fs)
                add("sparse.dot", [a, at], (s1, s2), transpose_a=True, forward_stype=fs)
    add("dot", [np.zeros((4, 5), "float32"), b], ("csr", "default"))
    add("dot", [np.zeros((4, 5), "float32"), at], ("csr", "default"), transpose_a=True)
    add("dot", [a, np.zeros((5, 3), "float32")], ("default", "csr"))
    c = matrix(rng, (4, 5), zero_rows=(0, 2))
    nan = a.copy()
    nan[0, 0] = np.nan
    for name in (
        "elemwise_add",
        "elemwise_sub",
        "elemwise_mul",
        "elemwise_div",
        "add_n",
        "_internal._maximum",
        "_internal._minimum",
        "broadcast_add",
        "broadcast_mul",
    ):
        for s1 in STYPES:
            for s2 in STYPES:
                add(name, [a, c], (s1, s2))
    add("elemwise_mul", [nan, c], ("csr", "default"))
    add("elemwise_mul", [nan, c], ("row_sparse", "default"))
    add("elemwise_add", [np.zeros((4, 5), "float32")] * 2, ("csr", "csr"))
    add("add_n", [a, c, b.T.copy()[:, :5] if False else a], ("row_sparse",) * 3)
    add("add_n", [a, c, a], ("default", "csr", "row_sparse"))
    row, col, one = matrix(rng, (1, 5), ()), matrix(rng, (4, 1), ()), matrix(rng, (1, 1), ())
    for rhs in (row, col, one, row.reshape(5)):
        for name in ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div"):
            add(name, [a, rhs], ("csr", "default"))
            add(name, [a, rhs], ("row_sparse", "default"))
        for name in ("sparse.add", "sparse.subtract", "sparse.multiply", "sparse.divide"):
            add(name, [a, rhs], ("csr", "default"))
    unary = [
        "abs",
        "sign",
        "relu",
        "sqrt",
        "square",
        "ceil",
        "floor",
        "round",
        "trunc",
        "rint",
        "fix",
        "expm1",
        "log1p",
        "sin",
        "tan",
        "arcsin",
        "arctan",
        "sinh",
        "tanh",
        "arcsinh",
        "arctanh",
        "degrees",
        "radians",
        "negative",
        "cbrt",
        "exp",
        "cos",
        "sigmoid",
        "zeros_like",
        "stop_gradient",
        "make_loss",
        "log",
        "rsqrt",
        "identity",
    ]
    small = np.clip(a, -0.9, 0.9)
    for name in unary:
        for s in STYPES:
            add(name, [small], (s,))
    add("abs", [nan], ("csr",))
    add("sqrt", [np.abs(nan)], ("row_sparse",))
    for name, scalar in (
        ("_internal._mul_scalar", 2.5),
        ("_internal._div_scalar", 2.0),
        ("_internal._plus_scalar", 0.0),
        ("_internal._plus_scalar", 1.0),
        ("_internal._minus_scalar", 0.0),
        ("_internal._minus_scalar", 1.5),
        ("_internal._mul_scalar", float("nan")),
        ("_internal._div_scalar", 0.0),
        ("_internal._scatter_plus_scalar", 1.0),
        ("_internal._scatter_minus_scalar", 1.0),
    ):
        for s in STYPES:
            add(name, [a], (s,), scalar=scalar)
    for s1 in STYPES:
        for s2 in STYPES:
            add("_internal._scatter_elemwise_div", [a, c + 3], (s1, s2))
    for s in STYPES:
        for params in (
            {},
            {"axis": 0},
            {"axis": 1},
            {"axis": 1, "keepdims": True},
            {"axis": 0, "exclude": True},
            {"axis": (0, 1)},
        ):
            add("sum", [a], (s,), **params)
            add("mean", [a], (s,), **params)
        for params in (
            {"axis": 0},
            {"axis": 1},
            {"axis": 1, "keepdims": True},
            {"axis": 0, "keepdims": True},
            {},
        ):
            add("_internal._square_sum", [a], (s,), **params)
        for to in STYPES:
            add("cast_storage", [a], (s,), stype=to)
        for params in ({"a_min": -0.5, "a_max": 0.5}, {"a_min": 0.1, "a_max": 0.5}):
            add("clip", [a], (s,), **params)
        for params in (
            {"begin": (1,), "end": (3,)},
            {"begin": (1, 1), "end": (3, 4)},
            {"begin": (0,), "end": (4,), "step": (2,)},
        ):
            add("slice", [a], (s,), **params)
        add("crop", [a], (s,), begin=(1,), end=(3,))
        cond = (matrix(rng, (4, 5)) != 0).astype("float32")
        add("where", [cond, a, c], (s, "default", "default"))
        add("where", [cond, a, c], (s, "csr", "csr"))
    add("cast_storage", [np.zeros((3, 4), "float32")], ("default",), stype="csr")
    add("cast_storage", [np.zeros((3, 4), "float32")], ("default",), stype="row_sparse")
    add("cast_storage", [matrix(rng, (3, 4, 2))], ("default",), stype="row_sparse")
    add("cast_storage", [nan], ("default",), stype="csr")
    weight = matrix(rng, (6, 3), zero_rows=(2,))
    idx = np.array([[0, 2, 5], [1, 1, 4]], "float32")
    for s in ("default", "row_sparse"):
        add("Embedding", [idx, weight], ("default", s), input_dim=6, output_dim=3)
        add("contrib.SparseEmbedding", [idx, weight], ("default", s), input_dim=6, output_dim=3)
    add(
        "Embedding",
        [np.array([-1, 7, 2.6], "float32"), weight],
        ("default", "row_sparse"),
        input_dim=6,
        output_dim=3,
    )
    rsp_rows = np.array([0, 3], "float32")
    add("sparse.retain", [a, rsp_rows], ("row_sparse", "default"))
    for s1 in STYPES:
        add("LinearRegressionOutput", [a, c], (s1, "default"))
        add("LogisticRegressionOutput", [a, c], (s1, "default"))
        add(
            "FullyConnected",
            [a, matrix(rng, (2, 5)), np.zeros(2, "float32")],
            (s1, "default", "default"),
            num_hidden=2,
        )
        add("concat", [a, c], (s1, "default"), dim=0)
        add("Flatten", [a], (s1,))
        add("transpose", [a], (s1,))
        add("norm", [a], (s1,))
        add("softmax", [a], (s1,))
    empty = np.zeros((4, 5), "float32")  # nnz = 0
    for name in (
        "abs",
        "sum",
        "elemwise_add",
        "_internal._mul_scalar",
        "slice",
        "dot",
        "cast_storage",
        "_internal._square_sum",
    ):
        params = {
            "sum": {"axis": 0},
            "_internal._mul_scalar": {"scalar": 3.0},
            "slice": {"begin": (1,), "end": (3,)},
            "cast_storage": {"stype": "default"},
            "_internal._square_sum": {"axis": 1, "keepdims": True},
        }.get(name, {})
        for s in ("csr", "row_sparse"):
            arrays = {"elemwise_add": [empty, empty], "dot": [empty, b]}.get(name, [empty])
            add(
                name,
                arrays,
                (s,) + ("default",) * (len(arrays) - 1) if name == "dot" else (s,) * len(arrays),
                **params,
            )
    a64, b64 = a.astype("float64"), b.astype("float64")
    add("dot", [a64, b64], ("csr", "default"))
    add("dot", [a64, at.astype("float64")], ("csr", "default"), transpose_a=True)
    add("elemwise_add", [a64, c.astype("float64")], ("row_sparse", "row_sparse"))
    add("sum", [a64], ("csr",), axis=1)
    take_idx = np.array([3, -2, 9, 1, 1], "float32")
    for mode in ("clip", "wrap"):
        add("take", [a, take_idx], ("csr", "default"), mode=mode)
        add("take", [a, take_idx], ("row_sparse", "default"), mode=mode)
    add("take", [np.zeros((4, 5), "float32"), take_idx], ("csr", "default"))
    for params in ({}, {"axis": 1}):
        add("contrib.getnnz", [a], ("csr",), **params)
        add("contrib.getnnz", [a], ("default",), **params)
    add("contrib.getnnz", [np.zeros((4, 5), "float32")], ("csr",))
    for name in (
        "_equal_scalar",
        "_not_equal_scalar",
        "_greater_scalar",
        "_greater_equal_scalar",
        "_lesser_scalar",
        "_lesser_equal_scalar",
    ):
        for scalar in (0.0, 1.0, -1.0):
            for s in ("csr", "row_sparse"):
                add("_internal." + name, [a], (s,), scalar=scalar)
    return cases
