"""MXNet's legacy layers: Convolution_v1, Pooling_v1 and BatchNorm_v1.

Each has its own parameter set (MXNet's names and defaults) and runs the
kernels of its successor (``conv.py``, ``pooling.py``, ``norm.py``); only
what the old versions compute differently is done here:

* Pooling_v1 pads with zeros (also for max pooling) and divides average
  windows by the full kernel size, including positions past the border;
* BatchNorm_v1 writes 1 into gamma in the forward pass when fix_gamma, and
  its ``var`` output is the variance (BatchNorm's is 1/sqrt(var + eps)).
"""

import attrs

from . import pooling
from .base import OpDef, mismatch
from .conv import (
    _arguments as _conv_arguments,
)
from .conv import (
    _check_groups,
    _conv_backward,
    _conv_forward,
    _conv_infer_shape,
)
from .conv_utils import check_window_params
from .norm import BatchNormParams, _bn_backward, _bn_forward, _bn_infer_shape, _bn_infer_type
from .params import non_negative, param, positive

__all__ = ["OPS"]


# -- Convolution_v1 ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ConvolutionV1Params:
    kernel: tuple = param("shape")
    stride: tuple = param("shape", ())
    dilate: tuple = param("shape", ())
    pad: tuple = param("shape", ())
    num_filter: int = param("int", validator=positive)
    num_group: int = param("int", 1, validator=positive)
    workspace: int = param("int", 1024, validator=non_negative)
    no_bias: bool = param("bool", False)
    cudnn_tune: str = param(
        "str", None, choices=("off", "limited_workspace", "fastest"), optional=True
    )
    cudnn_off: bool = param("bool", False)
    layout: str = param("str", None, choices=("NCHW", "NHWC", "NCDHW", "NDHWC"), optional=True)

    def __attrs_post_init__(self):
        if len(self.kernel) not in (2, 3):
            raise ValueError(
                f"parameter kernel={self.kernel} is invalid: Convolution_v1 takes a "
                "(h, w) or (d, h, w) kernel"
            )
        check_window_params("Convolution_v1", self, ("stride", "dilate"), ("pad",))
        _check_groups(self)


CONVOLUTION_V1 = OpDef(
    name="Convolution_v1",
    params=ConvolutionV1Params,
    arguments=_conv_arguments,
    infer_shape=_conv_infer_shape,
    forward=_conv_forward,
    backward=_conv_backward,
    doc="MXNet's legacy 2-D/3-D convolution: Convolution's maths with its own parameters.",
)


# -- Pooling_v1 --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class PoolingV1Params:
    kernel: tuple = param("shape", ())
    pool_type: str = param("str", "max", choices=("max", "avg", "sum"))
    global_pool: bool = param("bool", False)
    pooling_convention: str = param("str", "valid", choices=("full", "valid"))
    stride: tuple = param("shape", ())
    pad: tuple = param("shape", ())

    layout = None  # what check_window_params reads: Pooling_v1 is NCHW only

    def __attrs_post_init__(self):
        if self.global_pool and not self.kernel:
            return
        if len(self.kernel) == 3:
            raise NotImplementedError(
                "Pooling_v1: 3-D kernels are not implemented (as in MXNet); use Pooling"
            )
        if len(self.kernel) != 2:
            raise ValueError(
                f"parameter kernel={self.kernel} is invalid: Pooling_v1 takes a (y, x) kernel"
            )
        check_window_params("Pooling_v1", self, ("stride",), ("pad",))


def _pool_v1_geometry(p):
    ones, zeros = (1, 1), (0, 0)
    return p.kernel, p.stride or ones, p.pad or zeros


def _pool_v1_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if len(data) != 4:
        raise mismatch("data", tuple(data), "(batch, channel, y, x)", "Pooling_v1 takes 4-D data")
    if p.global_pool:
        return in_shapes, [(data[0], data[1], 1, 1)], aux_shapes
    kernel, stride, pad = _pool_v1_geometry(p)
    spatial = []
    for n, k, s, pd in zip(data[2:], kernel, stride, pad, strict=True):
        if n and k > n + 2 * pd:
            raise mismatch(
                "data",
                tuple(data),
                f"spatial sizes of at least kernel={kernel}",
                f"kernel size {k} exceeds the padded input ({n + 2 * pd})",
            )
        spatial.append(pooling._out_size(p.pooling_convention, n, k, s, pd) if n else 0)
    return in_shapes, [(data[0], data[1], *spatial)], aux_shapes


def _pool_v1_inner(p):
    """The Pooling parameters that compute Pooling_v1 on zero-padded data."""
    pool_type = "sum" if p.pool_type == "avg" else p.pool_type
    if p.global_pool:
        return pooling.PoolingParams(global_pool=True, pool_type=pool_type)
    kernel, stride, _ = _pool_v1_geometry(p)
    return pooling.PoolingParams(
        kernel=kernel, stride=stride, pool_type=pool_type, pooling_convention=p.pooling_convention
    )


def _pool_v1_scale(p, shape):
    """Average pooling divides by the whole window, wherever it lies."""
    if p.pool_type != "avg":
        return None
    size = shape[2] * shape[3] if p.global_pool else p.kernel[0] * p.kernel[1]
    return 1.0 / size


def _pool_v1_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    pad = (0, 0) if p.global_pool else _pool_v1_geometry(p)[2]
    padded = (
        xp.pad(data, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1]))) if any(pad) else data
    )
    inner = _pool_v1_inner(p)
    outs, saved = pooling._forward(ctx, inner, [padded], [])
    scale = _pool_v1_scale(p, data.shape)
    out = outs[0] if scale is None else (outs[0] * scale).astype(data.dtype, copy=False)
    return [out], (inner, saved, data.shape, pad, scale)


def _pool_v1_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    inner, pool_saved, shape, pad, scale = saved
    grad = out_grads[0] if scale is None else out_grads[0] * scale
    padded_grad = pooling._backward(
        ctx, inner, pool_saved, [grad.astype(out_grads[0].dtype)], [True]
    )
    rows, cols = slice(pad[0], pad[0] + shape[2]), slice(pad[1], pad[1] + shape[3])
    return [ctx.xp.ascontiguousarray(padded_grad[0][:, :, rows, cols])]


POOLING_V1 = OpDef(
    name="Pooling_v1",
    params=PoolingV1Params,
    infer_shape=_pool_v1_infer_shape,
    forward=_pool_v1_forward,
    backward=_pool_v1_backward,
    doc="MXNet's legacy 2-D max/avg/sum pooling: zero padding, averages over the full kernel.",
)


# -- BatchNorm_v1 ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class BatchNormV1Params:
    eps: float = param("float", 1e-3, validator=non_negative)
    momentum: float = param("float", 0.9)
    fix_gamma: bool = param("bool", True)
    use_global_stats: bool = param("bool", False)
    output_mean_var: bool = param("bool", False)


def _bn_v1_inner(p):
    return BatchNormParams(
        eps=p.eps,
        momentum=p.momentum,
        fix_gamma=p.fix_gamma,
        use_global_stats=p.use_global_stats,
        output_mean_var=True,
        axis=1,
    )


def _bn_v1_outputs(p):
    return ("output", "mean", "var") if p.output_mean_var else ("output",)


def _bn_v1_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0] or out_shapes[0]
    if data is not None and len(data) not in (2, 4):
        raise mismatch(
            "data",
            tuple(data),
            "(batch, channel) or (batch, channel, y, x)",
            "BatchNorm_v1 normalizes 2-D or 4-D data",
        )
    return _bn_infer_shape(_bn_v1_inner(p), in_shapes, out_shapes, aux_shapes)


def _bn_v1_forward(ctx, p, inputs, aux):
    if p.fix_gamma:
        inputs[1][...] = 1  # MXNet 1.9's BatchNorm_v1 writes this in forward
    outputs, saved = _bn_forward(ctx, _bn_v1_inner(p), inputs, aux)
    if not p.output_mean_var:
        return outputs[:1], saved
    mean, var, gamma = saved[5], saved[6], saved[9]
    return [outputs[0], mean.astype(gamma.dtype), var.astype(gamma.dtype)], saved


def _bn_v1_backward(ctx, p, saved, out_grads, need_grad):
    return _bn_backward(ctx, _bn_v1_inner(p), saved, out_grads[:1], need_grad)


BATCH_NORM_V1 = OpDef(
    name="BatchNorm_v1",
    params=BatchNormV1Params,
    arguments=("data", "gamma", "beta"),
    aux_states=("moving_mean", "moving_var"),
    input_var_attrs=lambda p: {
        "moving_mean": {"__init__": '["zero", {}]'},
        "moving_var": {"__init__": '["one", {}]'},
    },
    outputs=_bn_v1_outputs,
    hidden_outputs=lambda p: 0 if p.output_mean_var else 2,
    infer_shape=_bn_v1_infer_shape,
    infer_type=_bn_infer_type,
    forward=_bn_v1_forward,
    backward=_bn_v1_backward,
    doc="MXNet's legacy BatchNorm over axis 1 of 2-D/4-D data; its var output is the variance.",
)

OPS = [CONVOLUTION_V1, POOLING_V1, BATCH_NORM_V1]
