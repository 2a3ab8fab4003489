"""Convolution kernels from PyTorch for float32 NumPy arrays (issue 31).

An optional path (the ``torch-kernels`` extra): ``REBIND_CONV_KERNELS=torch``
runs every CPU float32 convolution's forward pass and gradients (data,
weight, bias) through ``aten.convolution`` and ``aten.convolution_backward``
(oneDNN/fused kernels) on zero-copy views of the NumPy arrays. Nothing here
imports torch until a convolution asks for it under that setting.

Measured (2 cores, ResNet-18 v1 training step at batch 16, load 1.7-2.5):
11.4 and 12.4 images/s against 7.6 and 8.6 for ``auto`` (1.20x and 1.34x
MXNet 1.9.1). Not part of ``auto``: LeNet's small layers ran 2x slower
(2000-2170 against 4500-4635 samples/s) and torch adds ~190 MiB to the RSS.
"""

import functools
import os

import numpy

from ..threadpool import engine_threads
from . import conv_ort

__all__ = ["backward", "forward", "takes"]


@functools.cache
def _torch():
    """The torch module, or None when it is not installed."""
    # torch's OpenMP threads would spin between its kernels, taking the cores NumPy's
    # code runs on next (LeNet's step took twice as long); read when OpenMP loads
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch  # noqa: PLC0415 (optional: the ``torch-kernels`` extra)
    except ImportError:
        return None
    return torch


def takes(xp, arrays, setting, spatial_axes):
    """Whether a NumPy float32 convolution of ``spatial_axes`` (1 to 3) runs here."""
    if setting != "torch" or xp is not numpy or not 1 <= spatial_axes <= 3:
        return False
    if any(a.dtype != numpy.float32 for a in arrays):
        return False
    if _torch() is None:
        conv_ort.warn_missing(
            "torch", "torch is not installed (pip install 'rebind[torch-kernels]')"
        )
        return False
    return True


def _view(torch, array):
    """A tensor sharing a C-contiguous float32 copy-free view of ``array`` where possible."""
    array = numpy.ascontiguousarray(array, dtype=numpy.float32)
    if not array.flags.writeable:
        array = array.copy()  # from_numpy warns on read-only memory
    return torch.from_numpy(array)


def _threads(torch):
    """Size torch's intra-op pool as the inference engine's: its threads sleep (passive).

    The load does not reduce it: a sleeping thread whose CPU another process
    takes costs the pool little, as for ONNX Runtime (``engine_threads``).
    """
    threads = engine_threads()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _window_args(window):
    """(stride, padding, dilation) as aten's lists (MXNet pads both ends alike)."""
    return list(window.stride), list(window.pad), list(window.dilate)


def forward(data, weight, bias, window, groups):
    """``(out, data)``: the convolution (N, F, *out) of (N, C, *spatial) ``data`` and ``data``.

    ``bias`` may be None; ``data`` is returned for ``backward``, as ``conv_dnnl`` does.
    """
    torch = _torch()
    _threads(torch)
    stride, pad, dilate = _window_args(window)
    b = None if bias is None else _view(torch, bias)
    with torch.inference_mode():
        out = torch.ops.aten.convolution(
            _view(torch, data),
            _view(torch, weight),
            b,
            stride,
            pad,
            dilate,
            False,
            [0] * len(stride),
            groups,
        )
    return out.contiguous().numpy(), data


def backward(grad, data, weight, window, groups, mask):
    """(data, weight, bias) gradients from the output's ``grad``; None where ``mask`` is False."""
    torch = _torch()
    _threads(torch)
    stride, pad, dilate = _window_args(window)
    with torch.inference_mode():
        grads = torch.ops.aten.convolution_backward(
            _view(torch, grad),
            _view(torch, data),
            _view(torch, weight),
            [grad.shape[1]] if mask[2] else None,
            stride,
            pad,
            dilate,
            False,
            [0] * len(stride),
            groups,
            list(mask),
        )
    return [g.contiguous().numpy() if m else None for g, m in zip(grads, mask, strict=True)]
