"""Golden cases for the operators of issue 13, defined once for the recorder and the tests.

Each family module here (``random.py``, ``linalg.py``, ...) defines ``CASES``,
a list built with ``case`` and ``arg``. It imports neither MXNet nor rebind:
``tests/recording/record_ops.py FAMILY`` runs the cases on the real MXNet
1.9.1 (in its side virtualenv) and writes ``tests/golden/ops_extra/FAMILY.json``
plus one ``.npz`` per case in ``tests/golden/ops_extra/FAMILY/``, in the format
of the shared golden manifest's "ops" category; ``tests/ops/harness.py``
replays them with the shared cases.

An argument's values are drawn by the recorder from a generator seeded by the
case id, and stored; the replay never draws them again.
"""

__all__ = ["arg", "case"]


def arg(shape, dtype="float32", kind="uniform", low=-1.0, high=1.0, values=None, grad=True):
    """One input of a case.

    Args:
        kind: "uniform" in [low, high); "normal" (scaled by ``high``); "int"
            (integers in [low, high), stored as ``dtype``); "spd" (a symmetric
            positive definite stack over the last two axes); "lower" (lower
            triangular with a diagonal in [1, 2)); "positive" (uniform in
            [low, high) with low >= 0 defaulting to [0.5, 2)); "values" (the
            nested list ``values``, as ``dtype``).
        grad: whether the case asks for this argument's gradient (grad_req
            "write"); integer arguments never do.
    """
    if kind == "positive" and low < 0:
        low, high = 0.5, 2.0
    return {
        "shape": list(shape),
        "dtype": dtype,
        "kind": kind,
        "low": low,
        "high": high,
        "values": values,
        "grad": bool(grad) and dtype.startswith("float") and kind != "int",
    }


def case(
    case_id,
    op,
    args,
    attrs=None,
    sym_func=None,
    modes=("train", "infer"),
    backward=True,
    random=False,
    positional=False,
    aux=None,
    node_name=None,
    imperative=False,
    out=(),
    targets=None,
):
    """One recorded call of an operator.

    Args:
        case_id: unique over all families (also the .npz file name).
        op: the operator's registered name (``_linalg_gemm``, ``Pad``, ...).
        args: {argument name: arg(...)} in the operator's argument order.
        attrs: Python values passed as keywords to ``mx.sym.<sym_func>``.
        sym_func: the ``mx.sym`` function to call (default ``op``).
        backward: record gradients (false for ops without one).
        random: the outputs are random draws: replay compares shapes and
            dtypes only (tests check the distributions instead).
        positional: pass the arguments positionally (variadic operators such
            as ``multi_sgd_update``), named ``arg0``, ``arg1``, ... unless
            ``args`` names them.
        aux: {aux state name: arg(...)} for operators with auxiliary states.
        imperative: record through ``mx.nd.<sym_func>(*arrays, **attrs)`` (one
            training-mode forward, no JSON): for operators MXNet 1.9.1 cannot
            compose as symbols (the optimizer updates: "Not enough argument").
        out: argument (or target) names passed as ``out=`` to an imperative
            call (the weights of ``multi_*`` updates, which MXNet requires there).
        targets: {name: arg(...)} arrays that are only ``out=`` of an imperative
            call, never inputs (``_set_value``, ``_copyto``).
    """
    return {
        "id": case_id,
        "op": op,
        "sym_func": sym_func or op,
        "args": dict(args),
        "attrs": dict(attrs or {}),
        "modes": list(modes),
        "backward": bool(backward),
        "random": bool(random),
        "positional": bool(positional),
        "aux": dict(aux or {}),
        "node_name": node_name or "node",
        "imperative": bool(imperative),
        "out": list(out),
        "targets": dict(targets or {}),
    }
