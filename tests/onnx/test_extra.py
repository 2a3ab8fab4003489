"""Export of the linalg helpers, diag, khatri_rao, the internal twins, index codes and
densities, run in ONNX Runtime; the refusals; and a walk over every operator.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.onnx.converters import lookup, refusal
from rebind.onnx.errors import OnnxExportError
from rebind.registry import get_registry

from .test_nn import data, export_and_compare

A = mx.sym.var("A")
X = mx.sym.var("data")


def _well_conditioned(*shape, seed=5):
    """Square matrices near the identity (positive diagonals, moderate determinants)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(scale=0.3, size=shape)
    return (noise + np.eye(shape[-1]) * 2).astype(np.float32)


# -- linalg ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2)])
def test_det_and_slogdet(tmp_path, shape):
    a = _well_conditioned(*shape)
    a[..., 0, :] *= -1  # some negative determinants
    net = mx.sym.Group([mx.sym.linalg.det(A), *mx.sym.linalg.slogdet(A)])
    export_and_compare(net, tmp_path, A=a, atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_sumlogdiag(tmp_path, shape):
    export_and_compare(mx.sym.linalg.sumlogdiag(A), tmp_path, A=_well_conditioned(*shape))


@pytest.mark.parametrize("offset", [0, 1, -2])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 4, 4)])
def test_extract_and_make_diag(tmp_path, offset, shape):
    a = data(*shape)
    extracted = mx.sym.linalg.extractdiag(A, offset=offset)
    net = mx.sym.Group([extracted, mx.sym.linalg.makediag(extracted, offset=offset)])
    export_and_compare(net, tmp_path, A=a)


@pytest.mark.parametrize("offset,lower", [(0, True), (0, False), (1, True), (-1, True)])
def test_extract_and_make_trian(tmp_path, offset, lower):
    extracted = mx.sym.linalg.extracttrian(A, offset=offset, lower=lower)
    net = mx.sym.Group([extracted, mx.sym.linalg.maketrian(extracted, offset=offset, lower=lower)])
    export_and_compare(net, tmp_path, A=data(2, 4, 4))


@pytest.mark.parametrize("transpose,alpha", [(False, 1.0), (True, 0.5)])
def test_syrk(tmp_path, transpose, alpha):
    net = mx.sym.linalg.syrk(A, transpose=transpose, alpha=alpha)
    export_and_compare(net, tmp_path, A=data(2, 3, 4), atol=1e-5)


@pytest.mark.parametrize(
    "transpose,rightside,lower,alpha",
    [
        (False, False, True, 1.0),
        (True, False, False, 2.0),
        (False, True, False, 1.0),
        (True, True, True, -0.5),
    ],
)
def test_trmm(tmp_path, transpose, rightside, lower, alpha):
    a = data(2, 3, 3)
    if lower:  # the masked-off triangle must not leak (inf * 0 would be NaN)
        a[:, 0, 2] = np.inf
    else:
        a[:, 2, 0] = np.inf
    b = data(2, 3, 4, seed=2) if not rightside else data(2, 4, 3, seed=2)
    net = mx.sym.linalg.trmm(
        A, mx.sym.var("B"), transpose=transpose, rightside=rightside, lower=lower, alpha=alpha
    )
    export_and_compare(net, tmp_path, A=a, B=b, atol=1e-5)


# -- diag and khatri_rao ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((4,), {"k": 0}),
        ((3,), {"k": 2}),
        ((3,), {"k": -1}),
        ((4, 5), {"k": 1}),
        ((4, 5), {"k": -2}),
        ((2, 3, 4), {"k": 1, "axis1": 2, "axis2": 0}),
        ((2, 3, 4, 3), {"k": 0, "axis1": 1, "axis2": -1}),
    ],
)
def test_diag(tmp_path, shape, attrs):
    export_and_compare(mx.sym.diag(X, **attrs), tmp_path, data=data(*shape))


def test_diag_dynamic_keeps_batch(tmp_path):
    net = mx.sym.diag(X, k=1, axis1=1, axis2=2)
    export_and_compare(net, tmp_path, data=data(3, 4, 4), dynamic=True)


@pytest.mark.parametrize("rows", [(3,), (2, 3), (2, 1, 3)])
def test_khatri_rao(tmp_path, rows):
    names = [f"m{i}" for i in range(len(rows))]
    net = mx.sym.khatri_rao(*[mx.sym.var(n) for n in names])
    inputs = {n: data(r, 4, seed=i) for i, (n, r) in enumerate(zip(names, rows, strict=True))}
    export_and_compare(net, tmp_path, **inputs)


# -- the internal twins and index codes --------------------------------------------------------
def test_internal_twins(tmp_path):
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    net = mx.sym.Group(
        [
            mx.sym._grad_add(lhs, rhs),
            mx.sym._rnn_param_concat(lhs, rhs, num_args=2, dim=1),
            mx.sym._copyto(lhs),
        ]
    )
    export_and_compare(net, tmp_path, lhs=data(2, 3), rhs=data(2, 3, seed=2))


def test_onehot_encode(tmp_path):
    net = mx.sym._onehot_encode(mx.sym.var("lhs"), mx.sym.var("rhs"))
    lhs = np.array([0, 3, 1.7, 4, -1], np.float32)
    export_and_compare(net, tmp_path, lhs=lhs, rhs=np.zeros((5, 5), np.float32))


def test_ravel_and_unravel(tmp_path):
    coords = np.array([[0, 1, 2, 1], [3, 0, 2, 1], [4, 4, 0, 2]], np.float32)
    flat = np.array([0, 7, 29, 59, 33], np.float32)
    net = mx.sym.Group(
        [
            mx.sym.ravel_multi_index(X, shape=(3, 4, 5)),
            mx.sym.unravel_index(mx.sym.var("flat"), shape=(3, 4, 5)),
        ]
    )
    export_and_compare(net, tmp_path, data=coords, flat=flat)


# -- densities ---------------------------------------------------------------------------------
@pytest.mark.parametrize("is_log", [False, True])
@pytest.mark.parametrize(
    "op,params",
    [
        ("normal", {"mu": (0.0, 1.0), "sigma": (0.5, 2.0)}),
        ("uniform", {"low": (-2.0, -1.0), "high": (1.0, 3.0)}),
        ("exponential", {"lam": (0.5, 3.0)}),
    ],
)
def test_pdf(tmp_path, op, params, is_log):
    rng = np.random.default_rng(6)
    inputs = {"sample": rng.uniform(0.1, 1.0, size=(2, 3, 4)).astype(np.float32)}
    for name, (low, high) in params.items():
        inputs[name] = rng.uniform(low, high, size=(2, 3)).astype(np.float32)
    variables = [mx.sym.var(n) for n in inputs]
    net = getattr(mx.sym, f"random_pdf_{op}")(*variables, is_log=is_log)
    export_and_compare(net, tmp_path, **inputs)


# -- refusals and the walk over every operator ------------------------------------------------
@pytest.mark.parametrize(
    "build,shape,reason",
    [
        (lambda: mx.sym.sgd_update(X, mx.sym.var("grad"), lr=0.1), (3, 3), "updates parameters"),
        (lambda: mx.sym.random.uniform_like(X), (3, 3), "random streams"),
        (lambda: mx.sym.Correlation(X, mx.sym.var("grad")), (1, 2, 3, 3), "no correlation"),
        (lambda: mx.sym.linalg.potrf(X), (3, 3), "Cholesky"),
        (lambda: mx.sym.image.normalize(X, mean=0.5, std=0.2), (3, 4, 4), "preprocess the data"),
        (lambda: mx.sym.image.random_brightness(X, 0.5, 1.5), (4, 4, 3), "augmenter"),
    ],
)
def test_refused_operators_name_the_reason(tmp_path, build, shape, reason):
    net = build()
    count = len(net.list_arguments())
    with pytest.raises(OnnxExportError, match=reason):
        mx.onnx.export_model(
            net,
            {},
            in_shapes=[shape] * count,
            in_types=[np.float32] * count,
            onnx_file_path=str(tmp_path / "m.onnx"),
        )
    assert not (tmp_path / "m.onnx").exists()


def test_every_operator_converts_or_is_refused():
    missing = []
    for name, opdef in sorted(get_registry("operators").items()):
        if name != opdef.name:  # aliases share their OpDef
            continue
        if lookup(opdef) is None and not refusal(opdef):
            missing.append(name)
        if lookup(opdef) is not None and refusal(opdef):
            missing.append(f"{name} (both a converter and a refusal)")
    assert not missing, f"operators with neither an ONNX converter nor a refusal: {missing}"
