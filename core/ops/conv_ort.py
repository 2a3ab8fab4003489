"""Convolution kernels from ONNX Runtime for float32 NumPy arrays (issue 31).

ONNX Runtime's CPU convolutions (MLAS) compute a layer's forward pass and its
data gradient (a ConvTranspose with the same weight) in less CPU than
rebind's im2col and OpenBLAS products where the images are large (one
thread, ResNet-18 at batch 16, 3x3 layer at 56x56: 41 against 78 ms forward,
47 against 67 ms data gradient); at 14x14 and 7x7 MLAS measured slower, so
``auto`` leaves those layers on NumPy. The weight gradient stays a product
over im2col columns (rebuilt in backward when the forward ran here): as a
convolution with batch and channels exchanged MLAS took twice its CPU. In
the whole ResNet-18 step the convolutions take 8% less CPU (2.27 -> 2.10 s).

Each call runs a one-node session cached per (kind, window, groups, shapes,
threads). ``REBIND_CONV_KERNELS`` (``auto``, ``onednn``, ``onnxruntime``,
``numpy``, ``torch``; read once) picks the kernels: ``auto`` takes oneDNN's
(``conv_dnnl``) where that library is installed, else ONNX Runtime for large
enough layers where it is installed; ``onnxruntime`` takes it for every
float32 layer on the CPU, ``numpy`` never; ``onednn`` and ``torch`` hand every
float32 layer to those libraries (``conv_dnnl``, ``conv_torch``), never this
module's. Other dtypes, CuPy arrays and installs without any of the libraries
run the NumPy kernels.
"""

import functools
import logging
import math
import os
import warnings

import numpy

from ..threadpool import engine_threads

__all__ = [
    "KERNELS_VARIABLE",
    "SETTINGS",
    "data_gradient",
    "forward",
    "kernels_setting",
    "takes_data_gradient",
    "takes_forward",
    "warn_missing",
]

KERNELS_VARIABLE = "REBIND_CONV_KERNELS"
SETTINGS = ("auto", "onnxruntime", "numpy", "torch", "onednn")
# ``auto`` runs ONNX Runtime for layers whose image has at least this many positions
# per image (forward: the output's; data gradient: the input's). Below, ResNet-18's
# 7x7 and 14x14 layers measured faster on NumPy (512 channels at 7x7: 40 against
# 52 ms forward, 44 against 73 ms data gradient).
_MIN_FORWARD_POSITIONS = 28 * 28
_MIN_GRADIENT_POSITIONS = 28 * 28
_OPSET = 17
_CACHE_SIZE = 128

logger = logging.getLogger(__name__)


@functools.cache
def kernels_setting():
    """``REBIND_CONV_KERNELS``, read once and checked: auto, onnxruntime, numpy or torch."""
    value = os.environ.get(KERNELS_VARIABLE, "auto").strip().lower() or "auto"
    if value not in SETTINGS:
        raise ValueError(
            f"{KERNELS_VARIABLE}={value!r} is not a choice of convolution kernels; "
            f"use one of {', '.join(SETTINGS)}"
        )
    return value


@functools.cache
def _runtime():
    """(onnxruntime, onnx.helper, ONNX's float32 code), or None when either is not installed."""
    try:
        import onnxruntime  # noqa: PLC0415 (optional: the ``cpu`` extra)
        from onnx import TensorProto, helper  # noqa: PLC0415
    except ImportError:
        return None
    return onnxruntime, helper, TensorProto.FLOAT


def _eligible(xp, arrays, spatial_axes, positions, at_least):
    """A NumPy float32 call the setting gives ONNX Runtime, and it is installed.

    Under ``auto`` a layer of fewer than ``at_least`` ``positions`` is refused
    before onnxruntime is imported (small networks never load it).
    """
    setting = kernels_setting()
    if setting in ("numpy", "torch", "onednn") or xp is not numpy or spatial_axes > 3:
        return False
    if any(a.dtype != numpy.float32 for a in arrays):
        return False
    if setting == "auto" and positions < at_least:
        return False
    if _runtime() is None:
        if setting == "onnxruntime":
            warn_missing(
                "onnxruntime", "onnxruntime or onnx is not installed (pip install 'rebind[cpu]')"
            )
        return False
    return True


@functools.cache
def warn_missing(setting, why):
    """Say once per setting that the kernels it asks for are missing (NumPy's run instead)."""
    warnings.warn(
        f"{KERNELS_VARIABLE}={setting}, but {why}; running the NumPy convolution kernels",
        RuntimeWarning,
        stacklevel=5,
    )


def takes_forward(xp, data, weight, window):
    """Whether ``forward`` should run this convolution."""
    positions = math.prod(window.out)
    return _eligible(xp, (data, weight), len(window.kernel), positions, _MIN_FORWARD_POSITIONS)


def takes_data_gradient(xp, grad, weight, window):
    """Whether ``data_gradient`` should compute this convolution's data gradient."""
    positions = math.prod(window.size)
    return _eligible(xp, (grad, weight), len(window.kernel), positions, _MIN_GRADIENT_POSITIONS)


def forward(data, weight, bias, window, groups):
    """Convolution of (N, C, *spatial) ``data`` (``bias`` may be None): (N, F, *out) or None.

    None: ONNX Runtime refused the layer (the caller runs the NumPy kernels).
    """
    inputs = [numpy.ascontiguousarray(data), numpy.ascontiguousarray(weight)]
    if bias is not None:
        inputs.append(numpy.ascontiguousarray(bias, dtype=numpy.float32))
    key = ("Conv", window, groups, tuple(tuple(a.shape) for a in inputs))
    return _run(key, inputs)


def data_gradient(grad, weight, window, groups):
    """The gradient of a convolution's data from its output's ``grad`` (N, F, *out), or None."""
    inputs = [numpy.ascontiguousarray(grad), numpy.ascontiguousarray(weight)]
    key = ("ConvTranspose", window, groups, tuple(tuple(a.shape) for a in inputs))
    return _run(key, inputs)


def _run(key, inputs):
    # a fixed pool of sleeping threads, as the inference engine's: a count following
    # the load would build every layer's session again each time the load changes
    session = _session(*key, engine_threads())
    if session is None:
        return None
    names = ("x", "w", "b")
    return session.run(None, dict(zip(names, inputs, strict=False)))[0]


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _session(kind, window, groups, shapes, threads):
    """A one-node session computing ``kind`` over inputs of ``shapes`` on ``threads``."""
    ort, helper, float32 = _runtime()
    attributes = {
        "kernel_shape": list(window.kernel),
        "strides": list(window.stride),
        "dilations": list(window.dilate),
        "pads": list(window.pad) * 2,
        "group": groups,
    }
    if kind == "ConvTranspose":
        attributes["output_padding"] = _output_padding(window)
    names = ("x", "w", "b")[: len(shapes)]
    node = helper.make_node(kind, list(names), ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        kind,
        [helper.make_tensor_value_info(n, float32, s) for n, s in zip(names, shapes, strict=True)],
        [helper.make_tensor_value_info("y", float32, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # an arena per session would keep each layer's peak scratch for the process's life
    options.enable_cpu_mem_arena = False
    # between two kernels Python runs: threads spinning there only take its core
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
    except (RuntimeError, ValueError, *_session_errors(ort)) as exc:
        logger.info("ONNX Runtime refused a %s layer (%s): running the NumPy kernels", kind, exc)
        return None


def _session_errors(ort):
    """The exception types ONNX Runtime raises when it cannot make a session."""
    state = getattr(ort.capi, "onnxruntime_pybind11_state", None)
    names = ("Fail", "InvalidArgument", "InvalidGraph", "NotImplemented", "RuntimeException")
    return tuple(getattr(state, name) for name in names if hasattr(state, name))


def _output_padding(window):
    """Rows the forward's last window left out at the end of each axis (below its stride)."""
    return [
        n + 2 * p - d * (k - 1) - 1 - s * (o - 1)
        for n, k, s, d, p, o in zip(
            window.size,
            window.kernel,
            window.stride,
            window.dilate,
            window.pad,
            window.out,
            strict=True,
        )
    ]
