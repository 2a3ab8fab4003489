"""mx.nd.contrib / mx.sym.contrib: MXNet's AdamW and LAMB update wrappers.

Expected values: tests/golden/contrib/updates.json, recorded from MXNet 1.9.1
by tests/recording/record_contrib_updates.py with the same inputs.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx

GOLDEN = json.loads(
    (Path(__file__).parent.parent / "golden" / "contrib" / "updates.json").read_text()
)
SHAPES = [(2, 3), (4,)]


def tensors(dtype, seed):
    """The recording script's inputs: weights, grads, means, vars and float32 weights."""
    rs = np.random.RandomState(seed)
    sets = [[rs.uniform(-1, 1, s) for s in SHAPES] for _ in range(3)]
    sets.append([rs.uniform(0.1, 1, s) for s in SHAPES])
    types = [dtype, dtype, "float32", "float32"]
    arrays = [
        [mx.nd.array(a, dtype=t) for a in group] for group, t in zip(sets, types, strict=True)
    ]
    arrays.append([mx.nd.array(a, dtype="float32") for a in sets[0]])
    return arrays


def run(name):
    """Call the wrapper ``name`` as the recording did; the updated lists."""
    mp = name.startswith(("mp_", "multi_mp_"))
    w, g, m, v, w32 = tensors("float16" if mp else "float32", 0)
    extra = [w32] if mp else []
    fn = getattr(mx.nd.contrib, name)
    if name.endswith("lamb_update"):
        fn(w, g, m, v, *extra, step_count=[2, 3], lrs=[0.1, 0.05], wds=[0.01, 0.0], out=w)
    elif name.startswith("multi"):
        fn(w, g, m, v, *extra, 0.5, lrs=[0.1, 0.05], wds=[0.01, 0.0], etas=[1.0, 0.5], out=w)
    else:
        w, m, v, w32 = w[:1], m[:1], v[:1], w32[:1]
        w[0] = fn(w[0], g[0], m[0], v[0], *[x[0] for x in extra], 0.5, lr=0.1, eta=0.9, wd=0.01)
    lists = {"weight": w, "mean": m, "var": v}
    if mp:
        lists["weight32"] = w32
    return lists


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_contrib_update_matches_mxnet(name):
    found = run(name)
    assert sorted(found) == sorted(GOLDEN[name])
    fp16 = name.startswith(("mp_", "multi_mp_"))
    for key, arrays in found.items():
        assert len(arrays) == len(GOLDEN[name][key])
        for array, expected in zip(arrays, GOLDEN[name][key], strict=True):
            tol = 1e-3 if fp16 and key == "weight" else 1e-5
            np.testing.assert_allclose(
                array.asnumpy().astype("f8"), expected, rtol=tol, atol=tol, err_msg=f"{name} {key}"
            )


def test_adamw_update_takes_rescale_grad_as_number_or_array():
    # fresh inputs for each call: the operator rescales grad in place, in MXNet as here
    w, g, m, v, _ = tensors("float32", 1)
    by_number = mx.nd.contrib.adamw_update(w[0], g[0], m[0], v[0], 0.5, 0.1, 0.9)
    w, g, m, v, _ = tensors("float32", 1)
    rescale = mx.nd.array([0.5])
    by_array = mx.nd.contrib.adamw_update(w[0], g[0], m[0], v[0], rescale, lr=0.1, eta=0.9)
    w, g, m, v, _ = tensors("float32", 1)
    direct = mx.nd._internal._adamw_update(
        weight=w[0], grad=g[0], mean=m[0], var=v[0], rescale_grad=rescale, lr=0.1, eta=0.9
    )
    np.testing.assert_array_equal(by_number.asnumpy(), direct.asnumpy())
    np.testing.assert_array_equal(by_array.asnumpy(), direct.asnumpy())


def test_multi_adamw_update_passes_num_weights_and_interleaves_the_tensors():
    w, g, m, v, _ = tensors("float32", 2)
    expected, m_ref, v_ref = [a.copy() for a in w], [a.copy() for a in m], [a.copy() for a in v]
    g_ref = [a.copy() for a in g]  # the operators rescale grad in place
    for i in range(2):  # the same update one tensor at a time
        expected[i] = mx.nd._internal._adamw_update(
            weight=w[i], grad=g_ref[i], mean=m_ref[i], var=v_ref[i],
            rescale_grad=mx.nd.array([2.0]), lr=[0.1, 0.2][i], eta=[1.0, 0.5][i],
            wd=[0.0, 0.01][i],
        )  # fmt: skip
    mx.nd.contrib.multi_adamw_update(
        w, g, m, v, 2.0, lrs=[0.1, 0.2], wds=[0.0, 0.01], etas=[1.0, 0.5], out=w
    )
    for found, want in zip(w + m + v, expected + m_ref + v_ref, strict=True):
        np.testing.assert_allclose(found.asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["adamw_update", "mp_adamw_update"])
def test_symbol_contrib_adamw_update_builds_the_operator(name):
    names = ["weight", "grad", "mean", "var"] + (["weight32"] if name.startswith("mp") else [])
    inputs = [mx.sym.Variable(n) for n in names]
    out = getattr(mx.sym.contrib, name)(*inputs, 0.5, lr=0.1, eta=0.9, wd=0.01, name="upd")
    assert out.list_arguments() == names  # rescale_grad is a full node, not an argument
    w, g, m, v, w32 = tensors("float16" if name.startswith("mp") else "float32", 0)
    args = dict(zip(names, [w[0], g[0], m[0], v[0], w32[0]], strict=False))
    result = out.eval(ctx=mx.cpu(), **args)[0]
    np.testing.assert_allclose(
        result.asnumpy().astype("f8"), GOLDEN[name]["weight"][0], rtol=1e-3, atol=1e-3
    )
