"""Convolution kernels from oneDNN for float32 NumPy arrays (issue 31).

The forward pass and the data, weight and bias gradients of a CPU float32
convolution (1 to 3 spatial axes, groups, strides, dilation, MXNet's
symmetric padding) run on oneDNN's primitives, the kernels MXNet 1.9.1's CPU
build runs. Activations are channels-last in memory (N, *spatial, C), the
layout oneDNN's brgemm kernels read without reorders, and are handed over as
views with MXNet's (N, C, *spatial) shape: the element-wise operators,
BatchNorm and pooling between two convolutions work on such views as on any
array, and the next convolution reads its input where it lies. An input in
another layout (the network's data) is reordered once, and the channels-last
copy is what backward reads. Weights stay in MXNet's layout; each call
reorders them into the blocked layout the kernel picks (small arrays).

Primitives are built once per shape and window in each calling thread and
kept (``_PLANS`` most recent ones); the backward primitives are built on the
first backward call, so inference never builds them. ``inference_forward``
builds inference primitives, optionally with a relu applied by the kernel to
its output (a BatchNorm folded into the weights and bias, then the
activation: ``executor/fused_conv_bn.py``).
"""

import numpy

from rebind.backends.cupy_kernels import fusable

from . import conv_ort, dnnl_lib, dnnl_plan

__all__ = [
    "backward",
    "channels_last",
    "forward",
    "inference_forward",
    "is_channels_last",
    "takes",
]

_PLANS = 256  # per thread: every layer of the largest zoo network, several batch sizes


def takes(xp, arrays, spatial_axes, setting):
    """Whether oneDNN is loaded and takes a NumPy float32 convolution of ``spatial_axes``.

    ``setting`` is ``REBIND_CONV_KERNELS``: ``auto`` and ``onednn`` take it
    (``onednn`` warns once when the library is missing).
    """
    if setting not in ("auto", "onednn") or xp is not numpy or not 1 <= spatial_axes <= 3:
        return False
    if any(a.dtype != numpy.float32 for a in arrays) or fusable(*arrays):
        return False
    if dnnl_lib.library() is None:
        if setting == "onednn":
            conv_ort.warn_missing("onednn", f"oneDNN did not load ({dnnl_lib.missing_reason()})")
        return False
    return True


channels_last = dnnl_plan.channels_last
is_channels_last = dnnl_plan.is_channels_last
_channels_last_strides = dnnl_plan.channels_last_strides


# plan kind -> (prop kind, relu post-op)
_KINDS = {
    "training": (dnnl_lib.FORWARD_TRAINING, False),
    "inference": (dnnl_lib.FORWARD_INFERENCE, False),
    "inference+relu": (dnnl_lib.FORWARD_INFERENCE, True),
}


class _Plan(dnnl_plan.Plan):
    """oneDNN's primitives for one convolution shape and window, in one thread."""

    def __init__(self, lib, key):
        super().__init__(lib)
        data_shape, weight_shape, self.bias, window, groups, self.kind = key
        self.data_shape, self.weight_shape, self.groups = data_shape, weight_shape, groups
        self.out_shape = (data_shape[0], weight_shape[0], *window.out)
        dnnl_weight = weight_shape
        if groups > 1:
            dnnl_weight = (groups, weight_shape[0] // groups, *weight_shape[1:])
        self.mds = {
            "src": self.strided(data_shape, _channels_last_strides(data_shape)),
            "dst": self.strided(self.out_shape, _channels_last_strides(self.out_shape)),
            "weights": self.keep("memory_desc", lib.plain_md(dnnl_weight)),
            "bias": self.keep("memory_desc", lib.plain_md((weight_shape[0],))),
        }
        self.any_weights = self.keep("memory_desc", lib.any_md(dnnl_weight))
        self.dims = [
            dnnl_lib.Dims(*window.stride),
            dnnl_lib.Dims(*(d - 1 for d in window.dilate)),  # oneDNN counts the gaps
            dnnl_lib.Dims(*window.pad),
            dnnl_lib.Dims(*window.pad),  # MXNet pads both ends alike
        ]
        self.forward_pd = self._forward_pd()
        self.forward = self.primitive(self.forward_pd)
        self.data_pd = self.data = self.weights_pd = self.weights = None
        self.buffers, self.reorders, self.source_mds = {}, {}, {}
        self.scaling = None  # the weights' reorder with scales (inference_forward)

    def _forward_pd(self):
        """The forward primitive descriptor of the plan's kind (``_KINDS``)."""
        lib = self.lib
        prop, relu = _KINDS[self.kind]
        attr = lib.relu_attr() if relu else None
        try:
            return self.make(
                "dnnl_convolution_forward_primitive_desc_create",
                lib.engine,
                prop,
                dnnl_lib.CONVOLUTION_DIRECT,
                self.mds["src"],
                self.any_weights,
                self.mds["bias"] if self.bias else None,
                self.mds["dst"],
                *self.dims,
                attr,
            )
        finally:
            if attr is not None:  # the descriptor holds its own copy
                lib.destroy("primitive_attr", attr)

    def backward_primitives(self):
        """Build the data and weight gradient primitives (once)."""
        if self.data is not None:
            return
        lib, mds = self.lib, self.mds
        self.data_pd = self.make(
            "dnnl_convolution_backward_data_primitive_desc_create",
            lib.engine,
            dnnl_lib.CONVOLUTION_DIRECT,
            mds["src"],
            self.any_weights,
            mds["dst"],
            *self.dims,
            self.forward_pd,
            None,
        )
        self.data = self.primitive(self.data_pd)
        self.weights_pd = self.make(
            "dnnl_convolution_backward_weights_primitive_desc_create",
            lib.engine,
            dnnl_lib.CONVOLUTION_DIRECT,
            mds["src"],
            self.any_weights,
            mds["bias"] if self.bias else None,
            mds["dst"],
            *self.dims,
            self.forward_pd,
            None,
        )
        self.weights = self.primitive(self.weights_pd)

    def _reorder(self, source_md, target_md):
        key = tuple(getattr(md, "value", md) for md in (source_md, target_md))
        reorder = self.reorders.get(key)
        if reorder is None:
            reorder = self.reorders[key] = self.keep(
                "primitive", self.lib.reorder(source_md, target_md)
            )
        return reorder

    def _source_md(self, array):
        """A descriptor of ``array``'s own strides (kept per stride pattern)."""
        strides = tuple(s // 4 for s in array.strides)
        md = self.source_mds.get((array.shape, strides))
        if md is None:
            md = self.source_mds[(array.shape, strides)] = self.strided(array.shape, strides)
        return md

    def copy(self, source_md, source, target_md, target, slot):
        """Reorder ``source`` (described by ``source_md``) into ``target``."""
        memories = [
            ("src", self.memory(slot + ":from", source_md, source)),
            ("dst", self.memory(slot + ":to", target_md, target)),
        ]
        self.lib.execute(self._reorder(source_md, target_md), memories)

    def activation(self, slot, kind, array):
        """(memory, array) of float32 ``array`` (shape of ``kind``) channels-last in memory."""
        if not is_channels_last(array):
            source = array if min(array.strides) > 0 else numpy.ascontiguousarray(array)
            moved = channels_last(array.shape)
            self.copy(self._source_md(source), source, self.mds[kind], moved, slot)
            array = moved
        return self.memory(slot, self.mds[kind], array), array

    def weights_as(self, slot, pd, query, weight):
        """Memory of ``weight`` (MXNet's layout) in the layout ``pd`` wants."""
        want = self.lib.query_md(pd, query)
        if self.lib.same(self.mds["weights"], want):
            return self.memory(slot, self.mds["weights"], weight)
        buffer = self.buffers.get(slot)
        if buffer is None:
            buffer = self.buffers[slot] = dnnl_plan.empty(self.lib.nbytes(want))
        self.copy(self.mds["weights"], weight, want, buffer, slot)
        return self.memory(slot, want, buffer)

    def scaled_weights(self, weight, scale):
        """Memory of ``weight`` times ``scale`` (per output channel), as the forward wants it.

        One reorder makes both: the layout change each call makes anyway, and the product.
        """
        want = self.lib.query_md(self.forward_pd, "weights")
        if self.scaling is None:
            # grouped weights are (groups, filters per group, ...): scales vary along both
            mask = 0b11 if self.groups > 1 else 0b1
            reorder = self.lib.reorder(self.mds["weights"], want, scales_mask=mask)
            self.scaling = self.keep("primitive", reorder)
        buffer = self.buffers.get("scaled")
        if buffer is None:
            buffer = self.buffers["scaled"] = dnnl_plan.empty(self.lib.nbytes(want))
        args = [
            ("src", self.memory("scaled:from", self.mds["weights"], weight)),
            ("dst", self.memory("scaled:to", want, buffer)),
            ("src_scales", self.memory("scaled:scales", self.mds["bias"], scale)),
        ]
        self.lib.execute(self.scaling, args)
        return self.memory("scaled", want, buffer)


def _float32(array):
    """``array`` as float32 with positive strides (a copy only when it is not already)."""
    if array.dtype == numpy.float32 and min(array.strides, default=1) > 0:
        return array
    return numpy.ascontiguousarray(array, dtype=numpy.float32)


def _plan(lib, data, weight, bias, window, groups, kind="training"):
    key = (data.shape, weight.shape, bias, window, groups, kind)
    return dnnl_plan.plan(lib, "conv", key, _Plan, _PLANS)


def forward(data, weight, bias, window, groups):
    """``(out, data)``: the convolution of (N, C, *spatial) ``data`` (``bias`` may be None).

    Both are channels-last views of MXNet's shapes; the returned ``data`` is
    the input itself when it already was, else its channels-last copy (what
    ``backward`` should be given).
    """
    return _forward(data, weight, bias, window, groups, "training")


def inference_forward(data, weight, bias, window, groups, relu=False, scale=None):
    """The convolution's output for inference only, with ``max(out, 0)`` fused when ``relu``.

    A primitive built for inference (oneDNN may skip what backward would
    read); the output is a channels-last view of MXNet's shape. ``scale``, a
    float32 vector, multiplies the weights of each output channel.
    """
    kind = "inference+relu" if relu else "inference"
    return _forward(data, weight, bias, window, groups, kind, scale)[0]


def _forward(data, weight, bias, window, groups, kind, scale=None):
    lib = dnnl_lib.library()
    # every array a memory object points at stays referenced until the call returns
    data, weight = _float32(data), numpy.ascontiguousarray(weight, dtype=numpy.float32)
    plan = _plan(lib, data, weight, bias is not None, window, groups, kind)
    src, data = plan.activation("src", "src", data)
    if scale is None:
        weights = plan.weights_as("weights", plan.forward_pd, "weights", weight)
    else:
        scale = numpy.ascontiguousarray(scale, dtype=numpy.float32)
        weights = plan.scaled_weights(weight, scale)
    args = [("src", src), ("weights", weights)]
    if bias is not None:
        bias = numpy.ascontiguousarray(bias, dtype=numpy.float32)
        args.append(("bias", plan.memory("bias", plan.mds["bias"], bias)))
    out = channels_last(plan.out_shape)
    lib.execute(plan.forward, [*args, ("dst", plan.memory("dst", plan.mds["dst"], out))])
    return out, data


def backward(grad, data, weight, window, groups, mask):
    """(data, weight, bias) gradients from the output's ``grad``; None where ``mask`` is False.

    The data gradient is a channels-last view of MXNet's shape.
    """
    lib = dnnl_lib.library()
    grad, data = _float32(grad), _float32(data)
    weight = numpy.ascontiguousarray(weight, dtype=numpy.float32)
    plan = _plan(lib, data, weight, mask[2], window, groups)
    plan.backward_primitives()
    diff_dst, grad = plan.activation("diff_dst", "dst", grad)
    grads = [None, None, None]
    if mask[0]:
        grads[0] = channels_last(plan.data_shape)
        args = [
            ("diff_dst", diff_dst),
            ("weights", plan.weights_as("d:weights", plan.data_pd, "weights", weight)),
            ("diff_src", plan.memory("diff_src", plan.mds["src"], grads[0])),
        ]
        lib.execute(plan.data, args)
    if mask[1] or mask[2]:  # one primitive makes both
        weight_grad, bias_grad = _weight_gradients(lib, plan, diff_dst, data, mask[2])
        grads[1:] = [weight_grad if mask[1] else None, bias_grad]
    return grads


def _weight_gradients(lib, plan, diff_dst, data, with_bias):
    """(weight gradient, bias gradient or None) of one convolution."""
    pd = plan.weights_pd
    src, data = plan.activation("w:src", "src", data)
    got = lib.query_md(pd, "diff_weights")
    weight_grad = numpy.empty(plan.weight_shape, numpy.float32)
    if lib.same(plan.mds["weights"], got):
        target = plan.memory("diff_weights", got, weight_grad)
    else:
        buffer = plan.buffers.get("diff_weights")
        if buffer is None:
            buffer = plan.buffers["diff_weights"] = dnnl_plan.empty(lib.nbytes(got))
        target = plan.memory("diff_weights", got, buffer)
    args = [("src", src), ("diff_dst", diff_dst), ("diff_weights", target)]
    bias = None
    if with_bias:
        bias = numpy.empty(plan.weight_shape[0], numpy.float32)
        args.append(("diff_bias", plan.memory("diff_bias", plan.mds["bias"], bias)))
    lib.execute(plan.weights, args)
    if not lib.same(plan.mds["weights"], got):
        plan.copy(got, plan.buffers["diff_weights"], plan.mds["weights"], weight_grad, "dw")
    return [weight_grad, bias]
