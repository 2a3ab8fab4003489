"""Golden cases of the linalg operators (``_linalg_gemm`` ... ``_linalg_slogdet``).

Most cases call MXNet's ``linalg_<name>`` alias; a few call ``mx.sym.linalg.<name>``
(``_linalg_syevd`` has no alias). Cholesky and triangular inputs are drawn
well conditioned: "spd" matrices, or "lower" factors with a diagonal in [1, 2).
"""

from tests.ops.cases import arg, case

F32, F64 = "float32", "float64"


def _la(case_id, name, args, attrs=None, sym_func=None, **options):
    return case(
        case_id,
        f"_linalg_{name}",
        args,
        attrs,
        sym_func=sym_func or f"linalg_{name}",
        **options,
    )


def _abc(a, b, c, dtype=F32):
    return {"A": arg(a, dtype), "B": arg(b, dtype), "C": arg(c, dtype)}


def _ab(a, b, dtype=F32, kind="uniform"):
    return {"A": arg(a, dtype, kind=kind), "B": arg(b, dtype)}


def _a(shape, dtype=F32, kind="uniform"):
    return {"A": arg(shape, dtype, kind=kind)}


SINGULAR = [[1.0, 2.0], [2.0, 4.0]]

GEMM = [
    _la("la_gemm_f32", "gemm", _abc((2, 3), (3, 4), (2, 4))),
    _la(
        "la_gemm_tt_f64",
        "gemm",
        _abc((3, 2), (4, 3), (2, 4), F64),
        {"transpose_a": True, "transpose_b": True, "alpha": 2.0, "beta": 0.5},
    ),
    _la("la_gemm_batch_f32", "gemm", _abc((2, 2, 3), (2, 3, 2), (2, 2, 2)), {"alpha": -1.5}),
    _la(
        "la_gemm_axis_f64",
        "gemm",
        _abc((2, 3, 5, 4), (2, 4, 5, 2), (2, 3, 5, 2), F64),
        {"axis": 1, "beta": -1.0},
        sym_func="linalg.gemm",
    ),
    _la("la_gemm2_f32", "gemm2", _ab((3, 4), (4, 2))),
    _la(
        "la_gemm2_ta_batch_f64",
        "gemm2",
        _ab((2, 4, 3), (2, 4, 2), F64),
        {"transpose_a": True, "alpha": 0.5},
    ),
    _la(
        "la_gemm2_tb_axis_f32",
        "gemm2",
        _ab((3, 2, 4), (5, 2, 4)),
        {"transpose_b": True, "axis": 0},
    ),
]

CHOLESKY = [
    _la("la_potrf_f32", "potrf", _a((3, 3), kind="spd")),
    _la("la_potrf_upper_batch_f64", "potrf", _a((2, 3, 3), F64, "spd"), {"lower": False}),
    _la("la_potrf_batch_f32", "potrf", _a((2, 4, 4), kind="spd")),
    _la("la_potri_f32", "potri", _a((3, 3), kind="lower")),
    _la("la_potri_upper_f64", "potri", _a((2, 3, 3), F64, "spd"), {"lower": False}),
    _la("la_potri_batch_f64", "potri", _a((2, 3, 3), F64, "lower")),
]

TRIANGULAR = [
    _la("la_trmm_f32", "trmm", _ab((3, 3), (3, 2), kind="lower")),
    _la(
        "la_trmm_right_t_f64",
        "trmm",
        _ab((3, 3), (2, 3), F64, "lower"),
        {"rightside": True, "transpose": True, "alpha": 2.0},
    ),
    _la(
        "la_trmm_upper_batch_f32",
        "trmm",
        _ab((2, 3, 3), (2, 3, 4)),
        {"lower": False, "transpose": True},
    ),
    _la(
        "la_trmm_upper_right_f64",
        "trmm",
        _ab((3, 3), (4, 3), F64),
        {"lower": False, "rightside": True, "alpha": -0.5},
    ),
    _la("la_trsm_f32", "trsm", _ab((3, 3), (3, 2), kind="lower")),
    _la(
        "la_trsm_right_t_f64",
        "trsm",
        _ab((3, 3), (2, 3), F64, "lower"),
        {"rightside": True, "transpose": True, "alpha": 2.0},
    ),
    _la(
        "la_trsm_upper_batch_f64",
        "trsm",
        _ab((2, 3, 3), (2, 3, 2), F64, "spd"),
        {"lower": False, "transpose": True},
    ),
    _la(
        "la_trsm_upper_right_f32",
        "trsm",
        _ab((3, 3), (2, 3), kind="spd"),
        {"lower": False, "rightside": True, "alpha": 0.5},
    ),
]

DIAGONAL = [
    _la("la_sumlogdiag_f32", "sumlogdiag", _a((3, 3), kind="spd")),
    _la("la_sumlogdiag_batch_f64", "sumlogdiag", _a((2, 3, 3), F64, "spd")),
    _la("la_extractdiag_f32", "extractdiag", _a((3, 3))),
    _la("la_extractdiag_off_batch_f64", "extractdiag", _a((2, 4, 4), F64), {"offset": 1}),
    _la("la_extractdiag_neg_f32", "extractdiag", _a((4, 4)), {"offset": -2}),
    _la("la_makediag_f32", "makediag", _a((3,))),
    _la("la_makediag_batch_f64", "makediag", _a((2, 3), F64), {"offset": -1}),
    _la("la_makediag_off_f32", "makediag", _a((2, 2, 2)), {"offset": 2}),
    _la("la_extracttrian_f32", "extracttrian", _a((3, 3))),
    _la("la_extracttrian_upper_f64", "extracttrian", _a((2, 3, 3), F64), {"lower": False}),
    _la("la_extracttrian_pos_f32", "extracttrian", _a((4, 4)), {"offset": 1}),
    _la(
        "la_extracttrian_neg_f64",
        "extracttrian",
        _a((2, 4, 4), F64),
        {"offset": -1, "lower": False},
    ),
    _la("la_maketrian_f32", "maketrian", _a((6,))),
    _la("la_maketrian_upper_f64", "maketrian", _a((2, 6), F64), {"lower": False}),
    _la("la_maketrian_pos_f32", "maketrian", _a((2, 3)), {"offset": 1}),
    _la("la_maketrian_neg_f64", "maketrian", _a((3,), F64), {"offset": -2}),
]

FACTORIZATIONS = [
    _la("la_syrk_f32", "syrk", _a((2, 3))),
    _la("la_syrk_t_batch_f64", "syrk", _a((2, 3, 2), F64), {"transpose": True, "alpha": 0.5}),
    _la("la_gelqf_f32", "gelqf", _a((2, 3))),
    _la("la_gelqf_batch_f64", "gelqf", _a((2, 3, 4), F64)),
    _la("la_gelqf_square_f64", "gelqf", _a((3, 3), F64)),
    _la("la_syevd_f32", "syevd", _a((3, 3), kind="spd"), sym_func="linalg.syevd"),
    _la("la_syevd_batch_f64", "syevd", _a((2, 4, 4), F64, "spd"), sym_func="linalg.syevd"),
    _la("la_inverse_f32", "inverse", _a((3, 3), kind="spd")),
    _la("la_inverse_batch_f64", "inverse", _a((2, 3, 3), F64)),
    _la("la_det_f32", "det", _a((3, 3), kind="spd")),
    _la("la_det_batch_f64", "det", _a((2, 3, 3), F64), sym_func="linalg.det"),
    _la("la_det_singular_f64", "det", {"A": arg((2, 2), F64, kind="values", values=SINGULAR)}),
    _la("la_slogdet_f64", "slogdet", _a((3, 3), F64)),
    _la("la_slogdet_batch_f32", "slogdet", _a((3, 2, 2))),
    _la(
        "la_slogdet_singular_f64",
        "slogdet",
        {"A": arg((2, 2), F64, kind="values", values=SINGULAR)},
    ),
]

CASES = GEMM + CHOLESKY + TRIANGULAR + DIAGONAL + FACTORIZATIONS
