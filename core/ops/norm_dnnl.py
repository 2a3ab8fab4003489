"""BatchNorm with given statistics of channels-last float32 NumPy arrays on oneDNN (issue 31).

Between oneDNN's convolutions (``conv_dnnl``) activations are channels-last
views. oneDNN's batch normalization reads that layout directly, one pass
forward and one backward, and keeps no normalized copy of the input.

Taken only where the statistics are given (``use_global_stats``, and every
forward outside training): for a batch's own statistics oneDNN sums in
float32, and on a ResNet-18 v2 whose activations have means of many standard
deviations that moved one SGD step's parameters 2.6e-4 (relative) away from
MXNet's; ``norm_cpu`` sums those in float64 (1e-6).
"""

import numpy

from rebind.backends.cupy_kernels import fusable

from . import dnnl_lib, dnnl_plan
from .dnnl_plan import channels_last, is_channels_last

__all__ = ["backward", "forward", "takes"]

_PLANS = 64


def takes(xp, data, axis, batch_stats):
    """Whether oneDNN should normalize ``data`` over ``axis`` (with given statistics)."""
    return (
        xp is numpy
        and not batch_stats
        and axis == 1
        and is_channels_last(data)
        and data.shape[1] > 1
        and not fusable(data)
        and dnnl_lib.library() is not None
    )


class _Plan(dnnl_plan.Plan):
    """oneDNN's batch normalization primitives for one shape and epsilon, in one thread."""

    def __init__(self, lib, key):
        super().__init__(lib)
        shape, self.eps, training = key
        self.flags = dnnl_lib.USE_SCALE | dnnl_lib.USE_SHIFT | dnnl_lib.USE_GLOBAL_STATS
        self.data = self.strided(shape, dnnl_plan.channels_last_strides(shape))
        self.vector = self.keep("memory_desc", lib.plain_md((shape[1],)))
        prop = dnnl_lib.FORWARD_TRAINING if training else dnnl_lib.FORWARD_INFERENCE
        self.forward_pd = self.make(
            "dnnl_batch_normalization_forward_primitive_desc_create",
            lib.engine,
            prop,
            self.data,
            self.data,
            self.eps,
            self.flags,
            None,
        )
        self.forward = self.primitive(self.forward_pd)
        self.backward = None

    def backward_primitive(self):
        """The backward primitive, data and parameter gradients (built on first use)."""
        if self.backward is None:
            pd = self.make(
                "dnnl_batch_normalization_backward_primitive_desc_create",
                self.lib.engine,
                dnnl_lib.BACKWARD,
                self.data,
                self.data,
                self.data,
                self.eps,
                self.flags,
                self.forward_pd,
                None,
            )
            self.backward = self.primitive(pd)
        return self.backward

    def vectors(self, prefix, **arrays):
        """(ARG key, memory) of each per-channel float32 array."""
        return [(k, self.memory(prefix + k, self.vector, a)) for k, a in arrays.items()]


def _plan(lib, key):
    return dnnl_plan.plan(lib, "batchnorm", key, _Plan, _PLANS, dnnl_plan.MEMORY_BOUND_THREADS)


def _vector(array):
    return numpy.ascontiguousarray(array, dtype=numpy.float32)


def forward(x, scale, shift, eps, stats, training):
    """``(out, mean, var, state)``: BatchNorm of channels-last ``x`` over axis 1.

    ``stats`` (mean, var) are the moving statistics to use; ``training``
    builds the primitive backward needs. ``state`` is what ``backward`` reads.
    """
    lib = dnnl_lib.library()
    key = (x.shape, float(eps), training)
    plan = _plan(lib, key)
    mean, var = _vector(stats[0]), _vector(stats[1])
    scale, shift = _vector(scale), _vector(shift)
    out = channels_last(x.shape)
    args = [
        ("src", plan.memory("src", plan.data, x)),
        ("dst", plan.memory("dst", plan.data, out)),
        *plan.vectors("f:", mean=mean, variance=var, scale=scale, shift=shift),
    ]
    lib.execute(plan.forward, args)
    return out, mean, var, (key, x, mean, var, scale)


def backward(state, grad):
    """``(dx, gamma gradient, beta gradient)`` from the output's ``grad`` (statistics constant)."""
    lib = dnnl_lib.library()
    key, x, mean, var, scale = state
    plan = _plan(lib, key)
    primitive = plan.backward_primitive()
    grad = dnnl_plan.as_channels_last(grad)
    channels = x.shape[1]
    dx = channels_last(x.shape)
    gamma_grad = numpy.empty(channels, numpy.float32)
    beta_grad = numpy.empty(channels, numpy.float32)
    args = [
        ("src", plan.memory("src", plan.data, x)),
        ("diff_dst", plan.memory("diff_dst", plan.data, grad)),
        ("diff_src", plan.memory("diff_src", plan.data, dx)),
        *plan.vectors("b:", mean=mean, variance=var, scale=scale),
        *plan.vectors("b:", diff_scale=gamma_grad, diff_shift=beta_grad),
    ]
    lib.execute(primitive, args)
    return dx, gamma_grad, beta_grad
