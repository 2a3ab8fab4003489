"""Forward, backward and finite-difference checks of a symbol against expectations."""

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym_mod
from .compare import assert_almost_equal
from .tolerances import default_context, default_numeric_eps, get_tolerance

_FLOATS = (np.float16, np.float32, np.float64)


def _as_nd(value, ctx, dtype):
    """NumPy -> NDArray on ``ctx`` ("asnumpy" keeps the array's dtype); NDArrays pass."""
    if not isinstance(value, np.ndarray):
        return value
    return nd.array(value, ctx=ctx, dtype=value.dtype if dtype == "asnumpy" else dtype)


def _parse_location(sym, location, ctx, dtype=np.float32):
    """Map ``sym``'s argument names to NDArrays from a list (in order) or a dict."""
    assert isinstance(location, (dict, list, tuple))
    assert dtype == "asnumpy" or dtype in _FLOATS
    if isinstance(location, dict):
        if set(location.keys()) != set(sym.list_arguments()):
            raise ValueError(
                "Symbol arguments and keys of the given location do not match."
                f"symbol args:{set(sym.list_arguments())}, location.keys():{set(location)}"
            )
    else:
        location = dict(zip(sym.list_arguments(), location, strict=False))
    return {k: _as_nd(v, ctx, dtype) for k, v in sorted(location.items())}


def _parse_aux_states(sym, aux_states, ctx, dtype=np.float32):
    """Map ``sym``'s auxiliary-state names to NDArrays (None stays None)."""
    assert dtype == "asnumpy" or dtype in _FLOATS
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states.keys()) != set(names):
            raise ValueError(
                "Symbol aux_states names and given aux_states do not match."
                f"symbol aux_names:{set(names)}, aux_states.keys:{set(aux_states)}"
            )
    else:
        aux_states = dict(zip(names, aux_states, strict=False))
    return {
        k: nd.array(v, ctx=ctx, dtype=np.asarray(v).dtype if dtype == "asnumpy" else dtype)
        for k, v in aux_states.items()
    }


def _forward_sum(executor, aux_states, is_train):
    """Run forward with fresh aux states and return the first output on the host."""
    for key, val in (aux_states or {}).items():
        executor.aux_dict[key][:] = val
    executor.forward(is_train=is_train)
    return executor.outputs[0].asnumpy()


def numeric_grad(
    executor, location, aux_states=None, eps=1e-4, use_forward_train=True, dtype=np.float32
):
    """Central-difference gradient of sum(first output) for every float argument."""
    assert dtype in _FLOATS
    approx = {k: np.zeros(np.shape(v), dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = np.asarray(v, dtype=dtype)
    for k in location:
        location[k] = np.array(location[k], order="C")
    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        flat, original = v.reshape(-1), v.copy().reshape(-1)
        for i in range(v.size):
            flat[i] = original[i] + eps / 2.0
            executor.arg_dict[k][:] = v.astype(dtype)
            plus = _forward_sum(executor, aux_states, use_forward_train)
            flat[i] = original[i] - eps / 2.0
            executor.arg_dict[k][:] = v.astype(dtype)
            minus = _forward_sum(executor, aux_states, use_forward_train)
            approx[k].reshape(-1)[i] = (plus - minus).sum() / eps
            flat[i] = original[i]
        executor.arg_dict[k][:] = v.astype(dtype)
    return approx


def _grad_requests(sym, grad_nodes):
    if grad_nodes is None:
        names = sym.list_arguments()
        return names, {k: "write" for k in names}
    if isinstance(grad_nodes, (list, tuple)):
        return list(grad_nodes), {k: "write" for k in grad_nodes}
    if isinstance(grad_nodes, dict):
        return list(grad_nodes.keys()), dict(grad_nodes)
    raise ValueError(f"grad_nodes must be None, a list or a dict, got {type(grad_nodes)}")


def _compare_grad(name, req, expected, got, before, rtol, atol, names, equal_nan=False):
    """Check one gradient honouring grad_req: write overwrites, add adds, null leaves."""
    got = got.asnumpy() if isinstance(got, nd.NDArray) else got
    if req == "write":
        assert_almost_equal(expected, got, rtol, atol, names, equal_nan=equal_nan)
    elif req == "add":
        assert_almost_equal(expected, got - before, rtol, atol, names, equal_nan=equal_nan)
    elif req == "null":
        assert_almost_equal(before, got, rtol, atol, names, equal_nan=equal_nan)
    else:
        raise ValueError(f"Invalid grad_req {req} for argument {name}")


def check_numeric_gradient(
    sym,
    location,
    aux_states=None,
    numeric_eps=None,
    rtol=None,
    atol=None,
    grad_nodes=None,
    use_forward_train=True,
    ctx=None,
    grad_stype_dict=None,
    dtype=np.float32,
):
    """Assert the symbol's backward matches finite differences of a random projection."""
    assert dtype in _FLOATS
    ctx = ctx if ctx is not None else default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux_states is None else {k: v.asnumpy() for k, v in aux_states.items()}
    grad_nodes, grad_req = _grad_requests(sym, grad_nodes)
    _, out_shape, _ = sym._infer_shape_strict(**{k: v.shape for k, v in location.items()})
    # project the output on random weights so every output element matters to the loss
    out = sym_mod.make_loss(sym * sym_mod.Variable("__random_proj"))
    location["__random_proj"] = nd.array(np.random.rand(*out_shape[0]) + 0.1, ctx=ctx, dtype=dtype)
    grads_npy = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    grads_npy["__random_proj"] = np.random.normal(0, 0.01, size=out_shape[0])
    args_grad = {k: nd.array(v, ctx=ctx, dtype=dtype) for k, v in grads_npy.items()}
    for k, stype in (grad_stype_dict or {}).items():
        if k in args_grad and stype not in (None, "default"):
            # a sparse gradient starts empty (MXNet: "uninitialized sparse ndarray")
            args_grad[k] = nd.zeros(args_grad[k].shape, ctx=ctx, dtype=dtype, stype=stype)
            grad_req[k] = "write"
    executor = out.bind(
        ctx, grad_req=grad_req, args=location, args_grad=args_grad, aux_states=aux_states
    )
    assert len(executor.outputs) == 1
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16):
        assert eps >= 1e-5
    executor.backward()
    numeric = numeric_grad(
        executor, location_npy, aux_npy, eps=eps, use_forward_train=use_forward_train, dtype=dtype
    )
    for name in grad_nodes:
        _compare_grad(
            name,
            grad_req[name],
            numeric[name],
            executor.grad_dict[name],
            grads_npy[name],
            rtol,
            atol,
            (f"NUMERICAL_{name}", f"BACKWARD_{name}"),
        )


def check_symbolic_forward(
    sym,
    location,
    expected,
    rtol=None,
    atol=None,
    aux_states=None,
    ctx=None,
    equal_nan=False,
    dtype=np.float32,
):
    """Assert ``sym``'s inference outputs at ``location`` equal ``expected``; return them."""
    assert dtype == "asnumpy" or dtype in _FLOATS
    ctx = ctx if ctx is not None else default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    args_grad = {
        k: nd.zeros(v.shape, ctx=ctx, dtype=v.dtype if dtype == "asnumpy" else dtype)
        for k, v in location.items()
    }
    executor = sym.bind(ctx=ctx, args=location, args_grad=args_grad, aux_states=aux_states)
    executor.forward(is_train=False)
    for name, expect, output in zip(sym.list_outputs(), expected, executor.outputs, strict=False):
        assert_almost_equal(
            expect, output, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan=equal_nan
        )
    return executor.outputs


def _out_grads(out_grads, ctx, dtype):
    if isinstance(out_grads, (tuple, list)):
        return [_as_nd(g, ctx, dtype) for g in out_grads]
    if isinstance(out_grads, dict):
        return {k: _as_nd(g, ctx, dtype) for k, g in out_grads.items()}
    assert out_grads is None
    return None


def check_symbolic_backward(
    sym,
    location,
    out_grads,
    expected,
    rtol=None,
    atol=None,
    aux_states=None,
    grad_req="write",
    ctx=None,
    grad_stypes=None,
    equal_nan=False,
    dtype=np.float32,
):
    """Assert ``sym``'s gradients for ``out_grads`` equal ``expected`` under ``grad_req``.

    Gradient buffers start random, so 'add' is checked as (result - start) and 'null' as
    unchanged. Returns the gradient NDArrays by argument name.
    """
    assert dtype == "asnumpy" or dtype in _FLOATS
    ctx = ctx if ctx is not None else default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected, strict=False))
    grads_npy = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    args_grad = {
        k: nd.array(
            v, ctx=ctx, dtype=np.asarray(expected[k]).dtype if dtype == "asnumpy" else dtype
        )
        for k, v in grads_npy.items()
    }
    for k, stype in (grad_stypes or {}).items():
        if k in args_grad and stype not in (None, "default"):
            # MXNet binds an empty sparse array (create_sparse_array with density 0)
            args_grad[k] = nd.zeros(
                args_grad[k].shape, ctx=ctx, dtype=args_grad[k].dtype, stype=stype
            )
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req, strict=False))
    executor = sym.bind(
        ctx=ctx, args=location, args_grad=args_grad, aux_states=aux_states, grad_req=grad_req
    )
    executor.forward(is_train=True)
    executor.backward(_out_grads(out_grads, ctx, dtype))
    for name in expected:
        _compare_grad(
            name,
            grad_req[name],
            expected[name],
            args_grad[name],
            grads_npy[name],
            rtol,
            atol,
            (f"EXPECTED_{name}", f"BACKWARD_{name}"),
            equal_nan,
        )
    return args_grad


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Run ``sym`` on NumPy ``inputs``; return its output(s) as NumPy array(s)."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: nd.array(v) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs
