"""The symbolic sparse cases record_sparse_ops.py records (MXNet 1.9.1).

Each case: ``(id, symbol, stype_dict, inputs)``; inputs map names to dense
values or ``(values, stype)``.
"""

import mxnet as mx
import numpy as np
from sparse_values import matrix

__all__ = ["symbolic_cases"]


def symbolic_cases(rng):
    """(id, symbol, stype_dict, shapes, inputs {name: (values, stype)}, grad_req, reps)."""
    S = mx.sym  # noqa: N806 - MXNet's own short name
    data, label = S.Variable("data"), S.Variable("label")
    cases = []
    idx = np.array([[0, 2, 5], [1, 1, 4]], "float32")
    weight = matrix(rng, (6, 3), zero_rows=(2,))
    emb = S.Embedding(
        data,
        S.Variable("w", stype="row_sparse"),
        input_dim=6,
        output_dim=3,
        sparse_grad=True,
        name="emb",
    )
    cases.append(("embedding_sparse_grad", emb, None, {"data": idx, "w": (weight, "row_sparse")}))
    emb = S.Embedding(data, input_dim=6, output_dim=3, sparse_grad=True, name="emb")
    cases.append(
        ("embedding_sparse_grad_dense_weight", emb, None, {"data": idx, "emb_weight": weight})
    )
    emb = S.Embedding(data, input_dim=6, output_dim=3, sparse_grad=False, name="emb")
    cases.append(("embedding_dense_grad", emb, None, {"data": idx, "emb_weight": weight}))
    shared = S.Variable("w")
    twice = S.Embedding(
        data, shared, input_dim=6, output_dim=3, sparse_grad=True, name="e1"
    ) + S.Embedding(data, shared, input_dim=6, output_dim=3, sparse_grad=True, name="e2")
    cases.append(("embedding_weight_shared", twice, None, {"data": idx, "w": weight}))
    mixed = S.Embedding(data, shared, input_dim=6, output_dim=3, sparse_grad=True, name="e1")
    mixed = S.broadcast_add(S.sum(mixed), S.sum(shared * 2))
    cases.append(("embedding_weight_also_dense", mixed, None, {"data": idx, "w": weight}))
    semb = S.contrib.SparseEmbedding(
        data, S.Variable("w", stype="row_sparse"), input_dim=6, output_dim=3, name="semb"
    )
    cases.append(
        ("contrib_sparse_embedding", semb, None, {"data": idx, "w": (weight, "row_sparse")})
    )
    x = matrix(rng, (4, 6), zero_rows=(1,))
    w = matrix(rng, (6, 2), zero_rows=(3,))
    csr = S.Variable("data", stype="csr")
    lin = S.sparse.dot(csr, S.Variable("w"))
    cases.append(("dot_csr_dense_w", lin, None, {"data": (x, "csr"), "w": w}))
    lin = S.sparse.dot(csr, S.Variable("w", stype="row_sparse"))
    cases.append(("dot_csr_rsp_w", lin, None, {"data": (x, "csr"), "w": (w, "row_sparse")}))
    lin = S.sparse.dot(csr, S.Variable("w"), transpose_a=True)
    cases.append(("dot_csr_t", lin, None, {"data": (x, "csr"), "w": matrix(rng, (4, 2))}))
    lin = S.sparse.dot(S.Variable("data"), S.Variable("w"))
    cases.append(("dot_stype_dict", lin, {"data": "csr"}, {"data": (x, "csr"), "w": w}))
    model = S.LinearRegressionOutput(
        S.sparse.dot(csr, S.Variable("w", stype="row_sparse")), label, name="out"
    )
    cases.append(
        (
            "linear_regression_csr",
            model,
            None,
            {"data": (x, "csr"), "w": (w, "row_sparse"), "label": matrix(rng, (4, 2))},
        )
    )
    model = S.LogisticRegressionOutput(
        S.sparse.dot(csr, S.Variable("w")) + S.Variable("b"), label, name="out"
    )
    cases.append(
        (
            "logistic_regression_csr",
            model,
            None,
            {
                "data": (x, "csr"),
                "w": w,
                "b": matrix(rng, (4, 2)),
                "label": (matrix(rng, (4, 2)) > 0).astype("float32"),
            },
        )
    )
    a, b = S.Variable("a", stype="row_sparse"), S.Variable("b", stype="row_sparse")
    m1, m2 = matrix(rng, (5, 3)), matrix(rng, (5, 3), zero_rows=(0, 4))
    cases.append(
        (
            "add_rsp_rsp",
            S.sparse.elemwise_add(a, b),
            None,
            {"a": (m1, "row_sparse"), "b": (m2, "row_sparse")},
        )
    )
    cases.append(
        (
            "mul_rsp_rsp",
            S.sparse.elemwise_mul(a, b),
            None,
            {"a": (m1, "row_sparse"), "b": (m2, "row_sparse")},
        )
    )
    cases.append(
        (
            "square_sum_keepdims",
            S._internal._square_sum(a, axis=1, keepdims=True),
            None,
            {"a": (m1, "row_sparse")},
        )
    )
    cases.append(
        ("square_sum_axis0", S._internal._square_sum(a, axis=0), None, {"a": (m2, "row_sparse")})
    )
    cases.append(("cast_to_csr", S.cast_storage(S.Variable("a"), stype="csr"), None, {"a": m1}))
    cases.append(("abs_csr", S.sparse.abs(S.Variable("a", stype="csr")), None, {"a": (m2, "csr")}))
    cases.append(("exp_fallback", S.exp(S.Variable("a", stype="csr")), None, {"a": (m2, "csr")}))
    cases.append(
        (
            "sum_csr_axis0",
            S.sparse.sum(S.Variable("a", stype="csr"), axis=0),
            None,
            {"a": (m2, "csr")},
        )
    )
    cases.append(
        ("sum_csr_all_fallback", S.sum(S.Variable("a", stype="csr")), None, {"a": (m2, "csr")})
    )
    cases.append(
        (
            "scatter_div_dense_fallback",
            S._internal._scatter_elemwise_div(S.Variable("a"), S.Variable("b")),
            None,
            {"a": m1, "b": np.abs(m2) + 1},
        )
    )
    cases.append(
        (
            "concat_csr_fallback",
            S.concat(S.Variable("a", stype="csr"), S.Variable("b"), dim=0),
            None,
            {"a": (m2, "csr"), "b": m1},
        )
    )
    return cases
