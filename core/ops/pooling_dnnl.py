"""Max and average pooling of channels-last float32 NumPy arrays on oneDNN (issue 31).

Between oneDNN's convolutions (``conv_dnnl``) activations are channels-last
views; NumPy's strided window taps over them are slow (a ResNet's first max
pooling took 0.16 s of a 2 s training step on one core). oneDNN's pooling
reads and writes that layout directly, multi-threaded; max pooling's training
forward keeps a workspace of each window's argmax for backward.

Taken only for channels-last float32 input with windows of 1 to 3 spatial axes:
max pooling, and average pooling whose padding is MXNet's symmetric one (with
``pooling_convention='full'`` an average window that runs past the pad counts
differently, so those stay on NumPy). MXNet's tie rule for max pooling (the
first maximum in row-major window order) is oneDNN's too.
"""

import numpy

from rebind.backends.cupy_kernels import fusable

from . import dnnl_lib, dnnl_plan
from .dnnl_plan import channels_last, is_channels_last

__all__ = ["backward", "forward", "takes"]

_PLANS = 64


def takes(xp, x, pool_type, window, include_pad):
    """Whether oneDNN should pool ``x`` (a channels-last float32 NumPy array)."""
    if xp is not numpy or pool_type not in ("max", "avg") or not 1 <= len(window.kernel) <= 3:
        return False
    if any(d != 1 for d in window.dilate) or x.shape[1] < 2 or not is_channels_last(x):
        return False  # one channel: MXNet's layout too, which the NumPy kernels keep
    if fusable(x):
        return False
    if pool_type == "avg" and _right_pad(window) != list(window.pad):
        return False
    return dnnl_lib.library() is not None


def _right_pad(window):
    """Padding after the data: MXNet's ``pad``, more where a 'full' window runs past it."""
    return [
        max(p, (o - 1) * s + k - n - p)
        for o, s, k, n, p in zip(
            window.out, window.stride, window.kernel, window.size, window.pad, strict=True
        )
    ]


def _algorithm(pool_type, include_pad):
    if pool_type == "max":
        return dnnl_lib.POOLING_MAX
    return dnnl_lib.POOLING_AVG_INCLUDE if include_pad else dnnl_lib.POOLING_AVG_EXCLUDE


class _Plan(dnnl_plan.Plan):
    """oneDNN's pooling primitives for one shape, window and algorithm, in one thread."""

    def __init__(self, lib, key):
        super().__init__(lib)
        shape, window, self.algorithm, training = key
        self.out_shape = (*shape[:2], *window.out)
        self.src = self.strided(shape, dnnl_plan.channels_last_strides(shape))
        self.dst = self.strided(self.out_shape, dnnl_plan.channels_last_strides(self.out_shape))
        self.dims = [
            dnnl_lib.Dims(*window.stride),
            dnnl_lib.Dims(*window.kernel),
            dnnl_lib.Dims(*([0] * len(window.kernel))),
            dnnl_lib.Dims(*window.pad),
            dnnl_lib.Dims(*_right_pad(window)),
        ]
        prop = dnnl_lib.FORWARD_TRAINING if training else dnnl_lib.FORWARD_INFERENCE
        self.forward_pd = self.make(
            "dnnl_pooling_forward_primitive_desc_create",
            lib.engine,
            prop,
            self.algorithm,
            self.src,
            self.dst,
            *self.dims,
            None,
        )
        self.forward = self.primitive(self.forward_pd)
        self.workspace = None
        if training and self.algorithm == dnnl_lib.POOLING_MAX:
            self.workspace = lib.query_md(self.forward_pd, "workspace")
        self.backward_pd = self.backward = None

    def backward_primitive(self):
        """The backward primitive (built on first use)."""
        if self.backward is None:
            self.backward_pd = self.make(
                "dnnl_pooling_backward_primitive_desc_create",
                self.lib.engine,
                self.algorithm,
                self.src,
                self.dst,
                *self.dims,
                self.forward_pd,
                None,
            )
            self.backward = self.primitive(self.backward_pd)
        return self.backward


def _plan(lib, key):
    return dnnl_plan.plan(lib, "pool", key, _Plan, _PLANS, dnnl_plan.MEMORY_BOUND_THREADS)


def forward(x, pool_type, window, include_pad, training):
    """``(out, state)``: the pooled channels-last view, and what ``backward`` reads."""
    lib = dnnl_lib.library()
    plan = _plan(lib, (x.shape, window, _algorithm(pool_type, include_pad), training))
    out = channels_last(plan.out_shape)
    args = [("src", plan.memory("src", plan.src, x)), ("dst", plan.memory("dst", plan.dst, out))]
    workspace = None
    if plan.workspace is not None:
        workspace = dnnl_plan.empty(lib.nbytes(plan.workspace))
        args.append(("workspace", plan.memory("workspace", plan.workspace, workspace)))
    lib.execute(plan.forward, args)
    return out, (x.shape, window, pool_type, include_pad, workspace)


def backward(state, grad):
    """The input's gradient (a channels-last view) from the output's ``grad``."""
    lib = dnnl_lib.library()
    shape, window, pool_type, include_pad, workspace = state
    plan = _plan(lib, (shape, window, _algorithm(pool_type, include_pad), True))
    primitive = plan.backward_primitive()
    grad = dnnl_plan.as_channels_last(grad)
    dx = channels_last(shape)
    args = [
        ("diff_dst", plan.memory("diff_dst", plan.dst, grad)),
        ("diff_src", plan.memory("diff_src", plan.src, dx)),
    ]
    if workspace is not None:
        args.append(("workspace", plan.memory("workspace", plan.workspace, workspace)))
    lib.execute(primitive, args)
    return dx
