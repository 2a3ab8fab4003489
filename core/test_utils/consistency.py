"""Cross-context/dtype consistency, speed timing and optimizer comparison."""

import time
import traceback

import numpy as np

from .. import ndarray as nd
from .. import random as mx_random
from ..symbol import Symbol
from .compare import assert_almost_equal, compare_ndarray_tuple
from .random_data import rand_ndarray
from .tolerances import default_context, get_tols


def _smaller_dtype(dt1, dt2):
    """The less precise of two dtypes (``dt1`` when ``dt2`` is None)."""
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def _bind_all(sym, ctx_list, grad_req):
    symbols = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    assert len(symbols) == len(ctx_list)
    outputs, args = symbols[0].list_outputs(), symbols[0].list_arguments()
    for s in symbols:
        assert s.list_arguments() == args and s.list_outputs() == outputs
    return [
        s.simple_bind(grad_req=grad_req, **ctx) for s, ctx in zip(symbols, ctx_list, strict=False)
    ]


def _fill(exe_list, arg_params, aux_params, scale, use_uniform, rand_type, grad_req):
    """Give every executor the same random arguments (and zero aux unless given)."""
    for n, arr in sorted(exe_list[0].arg_dict.items()):
        if n not in arg_params:
            if use_uniform:
                arg_params[n] = np.random.uniform(
                    -0.92 * scale, 0.92 * scale, size=arr.shape
                ).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=arr.shape, scale=scale).astype(rand_type)
    for n in exe_list[0].aux_dict:
        aux_params.setdefault(n, 0)
    for exe in exe_list:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0


def _compare(arr, gtarr, rtol, atol, equal_nan, raise_on_err, label):
    try:
        assert_almost_equal(arr, gtarr, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError as err:
        print(label)
        traceback.print_exc()
        if raise_on_err:
            raise
        print(str(err))


def _backward_all(exe_list):
    """Train-mode forward, then backward with the first executor's outputs as head grads."""
    for exe in exe_list:
        exe.forward(is_train=True)
    least = [out.dtype for out in exe_list[0].outputs]
    for exe in exe_list:
        least = [_smaller_dtype(out.dtype, dt) for out, dt in zip(exe.outputs, least, strict=False)]
    golden = [out.astype(dt).asnumpy() for out, dt in zip(exe_list[0].outputs, least, strict=False)]
    for exe in exe_list:
        exe.backward(
            [
                nd.array(g, ctx=out.context, dtype=out.dtype)
                for g, out in zip(golden, exe.outputs, strict=False)
            ]
        )


def check_consistency(
    sym,
    ctx_list,
    scale=1.0,
    grad_req="write",
    arg_params=None,
    aux_params=None,
    rtol=None,
    atol=None,
    raise_on_err=True,
    ground_truth=None,
    equal_nan=False,
    use_uniform=False,
    rand_type=np.float64,
):
    """Run ``sym`` under each ``ctx_list`` entry (simple_bind kwargs: ctx, shapes,
    type_dict) and compare outputs and gradients with the most precise one's.

    Returns the ground-truth dict (outputs and gradients by name).
    """
    assert len(ctx_list) > 1
    exe_list = _bind_all(sym, ctx_list, grad_req)
    first = sym if isinstance(sym, Symbol) else sym[0]
    output_names, arg_names = first.list_outputs(), first.list_arguments()
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    _fill(exe_list, arg_params, aux_params, scale, use_uniform, rand_type, grad_req)
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exe_list]
    gt_idx = int(np.argmax([dt.itemsize for dt in dtypes]))
    gt = ground_truth
    if gt is None:
        gt = dict(exe_list[gt_idx].output_dict)
        if grad_req != "null":
            gt.update(exe_list[gt_idx].grad_dict)
    for exe in exe_list:
        exe.forward(is_train=False)
    if ground_truth is None:
        gt.update(exe_list[gt_idx].output_dict)
    for i, exe in enumerate(exe_list):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs, strict=False):
                _compare(
                    arr,
                    gt[name],
                    rtol,
                    atol,
                    equal_nan,
                    raise_on_err,
                    f"Predict Err: ctx {i} vs ctx {gt_idx} at {name}",
                )
    if grad_req == "null":
        return gt
    _backward_all(exe_list)
    if ground_truth is None:
        gt.update(exe_list[gt_idx].output_dict)
        gt.update(exe_list[gt_idx].grad_dict)
    for i, exe in enumerate(exe_list):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names + arg_names, exe.outputs + exe.grad_arrays, strict=False):
            if gt.get(name) is None:
                assert arr is None
                continue
            gtarr, rt, at = gt[name], rtol, atol
            small_arr = _smaller_dtype(arr.dtype, dtypes[i])
            small_gt = _smaller_dtype(gtarr.dtype, dtypes[gt_idx])
            if small_arr != arr.dtype or small_gt != gtarr.dtype:
                rt, at = get_tols(arr.astype(small_arr), gtarr.astype(small_gt), rtol, atol)
            _compare(
                arr,
                gtarr,
                rt,
                at,
                equal_nan,
                raise_on_err,
                f"Train Err: {np.dtype(arr.dtype).name} {arr.context} ctx {i} vs "
                f"{np.dtype(gtarr.dtype).name} {gtarr.context} ctx {gt_idx} at {name}",
            )
    return gt


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds per forward+backward (``typ='whole'``) or per forward (``'forward'``)."""
    ctx = ctx if ctx is not None else default_context()
    grad_req = grad_req or "write"
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {
            k: np.random.normal(size=arr.shape, scale=1.0) for k, arr in exe.arg_dict.items()
        }
    else:
        assert isinstance(location, dict), f'Expect dict, get "location"={location}'
        exe = sym.simple_bind(
            grad_req=grad_req, ctx=ctx, **{k: v.shape for k, v in location.items()}
        )
    for name, iarr in location.items():
        exe.arg_dict[name][:] = iarr.astype(exe.arg_dict[name].dtype)
    if typ not in ("whole", "forward"):
        raise ValueError('typ can only be "whole" or "forward".')
    train = typ == "whole"

    def step():
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)

    step()  # warm-up: first run plans memory
    nd.waitall()
    tic = time.time()
    for _ in range(N):
        step()
    nd.waitall()
    return (time.time() - tic) / N


def compare_optimizer(
    opt1,
    opt2,
    shape,
    dtype,
    w_stype="default",
    g_stype="default",
    rtol=1e-4,
    atol=1e-5,
    compare_states=True,
    ntensors=1,
):
    """Apply one update of ``opt1`` and ``opt2`` to equal weights and compare the results."""
    if isinstance(shape, list):
        _compare_multi_tensor(opt1, opt2, shape, dtype, rtol, atol, compare_states, ntensors)
        return
    assert ntensors == 1
    ctx = default_context()
    # as MXNet: opt2 gets the sparse arrays, opt1 their dense copies
    w2, w1 = _optimizer_input(shape, dtype, w_stype, ctx, density=1)
    g2, g1 = _optimizer_input(shape, dtype, g_stype, ctx)
    state1 = opt1.create_state_multi_precision(0, w1)
    state2 = opt2.create_state_multi_precision(0, w2)
    if compare_states:
        compare_ndarray_tuple(state1, state2)
    opt1.update_multi_precision(0, w1, g1, state1)
    opt2.update_multi_precision(0, w2, g2, state2)
    if compare_states:
        compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
    assert_almost_equal(w1, w2, rtol=rtol, atol=atol)


def _optimizer_input(shape, dtype, stype, ctx, density=None):
    """(array for opt2, dense copy for opt1): uniform when dense, ``rand_ndarray``'s when sparse."""
    if stype == "default":
        array = mx_random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        return array, array.copyto(ctx)
    if stype in ("row_sparse", "csr"):
        array = rand_ndarray(shape, stype, density=density, dtype=dtype)
        return array, array.copyto(ctx).tostype("default")
    raise ValueError(
        f"compare_optimizer: storage type {stype!r} is not supported; use 'default', "
        "'row_sparse' or 'csr'"
    )


def _compare_multi_tensor(opt1, opt2, shapes, dtype, rtol, atol, compare_states, ntensors):
    """``opt2`` updates all ``shapes`` in one call, ``opt1`` one weight at a time; compare."""
    ctx = default_context()
    w1 = tuple(mx_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shapes)
    g1 = tuple(mx_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shapes)
    w2, g2 = tuple(w.copy() for w in w1), tuple(g.copy() for g in g1)
    # as MXNet: every state of opt2 is made for index 0
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def check_gluon_hybridize_consistency(*args, **kwargs):
    """MXNet's check of a Gluon block hybridized and not: rebind has no Gluon."""
    raise NotImplementedError(
        "check_gluon_hybridize_consistency: rebind has no Gluon (it rebuilds MXNet's Module "
        "API); compare symbols with check_consistency instead"
    )
