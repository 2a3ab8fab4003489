"""Deconvolution (transposed convolution, 1-D, 2-D and 3-D, channel-first layouts).

Deconvolution is Convolution's pair of products with the roles of data and
output exchanged (see ``conv``): its forward is ``col2im(weight^T @ data)``,
the data gradient of the matching convolution, and its data gradient that
convolution's forward.
"""

import math

import attrs

from .base import OpDef, merge_shape, mismatch
from .conv import CUDNN_TUNE, LAYOUTS, _arguments, _check_data, _check_groups
from .conv_utils import (
    Window,
    batch_last_for,
    check_window_params,
    col2im,
    fill_window_params,
    from_work,
    im2col,
    to_work,
    work_dtype,
)
from .params import non_negative, param, positive

__all__ = ["DECONVOLUTION", "OPS"]


@attrs.frozen(kw_only=True)
class DeconvolutionParams:
    kernel: tuple = param("shape")
    stride: tuple = param("shape", ())
    dilate: tuple = param("shape", ())
    pad: tuple = param("shape", ())
    adj: tuple = param("shape", ())
    target_shape: tuple = param("shape", ())
    num_filter: int = param("int", validator=positive)
    num_group: int = param("int", 1, validator=positive)
    workspace: int = param("int", 512, validator=non_negative)
    no_bias: bool = param("bool", True)  # unlike Convolution
    cudnn_tune: str = param("str", None, choices=CUDNN_TUNE, optional=True)
    cudnn_off: bool = param("bool", False)
    layout: str = param("str", None, choices=LAYOUTS, optional=True)

    def __attrs_post_init__(self):
        check_window_params(
            "Deconvolution", self, ("stride", "dilate"), ("pad", "adj", "target_shape")
        )
        _check_groups(self)
        stride = self.stride or (1,) * len(self.kernel)
        if (
            self.adj
            and not any(self.target_shape)
            and any(a >= s for a, s in zip(self.adj, stride, strict=True))
        ):
            raise ValueError(
                f"parameter adj={self.adj} is invalid: each adj must be smaller "
                f"than its stride {stride}"
            )


def _deconv_pad_adj(p, data_shape):
    """Effective (pad, adj) per axis; ``target_shape`` overrides both where given."""
    kernel, stride, dilate, pad = fill_window_params(p)
    size = data_shape[2:]
    adj, target = p.adj or (0,) * len(kernel), p.target_shape or (0,) * len(kernel)
    pads, adjs = list(pad), list(adj)
    for i, (n, k, s, d, t) in enumerate(zip(size, kernel, stride, dilate, target, strict=True)):
        if t and n:
            total = s * (n - 1) + d * (k - 1) + 1 - t
            if total < 0 or total % 2 >= s:
                raise mismatch(
                    "data",
                    tuple(data_shape),
                    f"sizes from which target_shape={p.target_shape} is reachable",
                    f"axis {i}: a size of {n} cannot give {t}",
                )
            pads[i], adjs[i] = (total + 1) // 2, total % 2
    return tuple(pads), tuple(adjs)


def _deconv_out_size(n, k, s, d, pad, adj):
    return s * (n - 1) + d * (k - 1) + 1 - 2 * pad + adj


def _deconv_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    kernel, stride, dilate, _ = fill_window_params(p)
    groups = p.num_group
    if not p.no_bias:
        in_shapes[2] = merge_shape((p.num_filter,), in_shapes[2], "bias")
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    _check_data(data, len(kernel), groups)
    in_shapes[1] = merge_shape((data[1], p.num_filter // groups, *kernel), in_shapes[1], "weight")
    pad, adj = _deconv_pad_adj(p, data)
    out = [
        _deconv_out_size(*g) if g[0] else 0
        for g in zip(data[2:], kernel, stride, dilate, pad, adj, strict=True)
    ]
    out = merge_shape((data[0], p.num_filter, *out), out_shapes[0], "output")
    in_shapes[0] = (data[0] or out[0], data[1] or in_shapes[1][0], *data[2:])
    return in_shapes, [out], aux_shapes


def _deconv_window(p, data_shape):
    """The window of the matching convolution: it slides over the deconvolution's output."""
    kernel, stride, dilate, _ = fill_window_params(p)
    size = data_shape[2:]
    pad, adj = _deconv_pad_adj(p, data_shape)
    out = tuple(
        _deconv_out_size(*g) for g in zip(size, kernel, stride, dilate, pad, adj, strict=True)
    )
    return Window(kernel, stride, dilate, pad, out, tuple(size))


def _deconv_forward(ctx, p, inputs, aux):
    xp, data, weight = ctx.xp, inputs[0], inputs[1]
    work, groups, batch = work_dtype(data.dtype), p.num_group, data.shape[0]
    window = _deconv_window(p, data.shape)
    batch_last = batch_last_for(window)
    xt = to_work(xp, data.astype(work, copy=False), batch_last)
    xt = xt.reshape(groups, -1, math.prod(window.out) * batch)
    w = weight.astype(work, copy=False).reshape(groups, data.shape[1] // groups, -1)
    cols = xp.matmul(w.transpose(0, 2, 1), xt)
    out = col2im(xp, cols.reshape(-1, cols.shape[-1]), window, p.num_filter, batch, batch_last)
    if not p.no_bias:
        out += inputs[2].astype(work, copy=False).reshape(-1, *(1,) * (out.ndim - 1))
    out = from_work(xp, out, batch_last).astype(data.dtype, copy=False)
    return [out], (window, batch_last, xt, w, data.dtype)


def _deconv_backward(ctx, p, saved, out_grads, need_grad):
    xp, (window, batch_last, xt, w, dtype) = ctx.xp, saved
    groups, batch = p.num_group, out_grads[0].shape[0]
    grad = to_work(xp, out_grads[0].astype(w.dtype, copy=False), batch_last)
    dcols = im2col(xp, grad, window, batch_last)
    dcols = dcols.reshape(groups, -1, dcols.shape[1])
    grads = [None] * len(_arguments(p))
    if need_grad[0]:
        dx = xp.matmul(w, dcols)
        dx = (
            dx.reshape(-1, *window.out, batch) if batch_last else dx.reshape(-1, batch, *window.out)
        )
        grads[0] = from_work(xp, dx, batch_last).astype(dtype, copy=False)
    if need_grad[1]:
        dw = xp.matmul(xt, dcols.transpose(0, 2, 1))
        grads[1] = dw.reshape(-1, p.num_filter // groups, *window.kernel).astype(dtype)
    if not p.no_bias and need_grad[2]:
        grads[2] = grad.reshape(p.num_filter, -1).sum(axis=1).astype(dtype, copy=False)
    return grads


DECONVOLUTION = OpDef(
    name="Deconvolution",
    params=DeconvolutionParams,
    arguments=_arguments,
    infer_shape=_deconv_infer_shape,
    forward=_deconv_forward,
    backward=_deconv_backward,
    doc="Transposed convolution (the data gradient of Convolution); no bias by default.",
)

OPS = [DECONVOLUTION]
