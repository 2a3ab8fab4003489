"""``mx.runtime``: which of MXNet's build features this rebind install has.

MXNet reports what its library was compiled with; rebind answers the same
questions for what this Python environment can do: ``CUDA`` when CuPy sees a
GPU, ``DIST_KVSTORE`` when mpi4py imports, ``OPENCV`` when cv2 does, the CPU
instruction sets NumPy can use, the BLAS NumPy links. Features that belong to
MXNet's C++ library (MKLDNN, TensorRT, TVM operators, jemalloc, ...) are off.
"""

import collections
import importlib.util

import numpy as np

__all__ = ["Feature", "Features", "feature_list"]

# MXNet 1.9.1's feature names, in its order (recorded from mx.runtime.feature_list())
FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP",
)  # fmt: skip

# CPU feature -> the /proc/cpuinfo flag that shows it (pni is Linux's name for SSE3)
_CPU_FLAGS = {
    "CPU_SSE": "sse", "CPU_SSE2": "sse2", "CPU_SSE3": "pni", "CPU_SSE4_1": "sse4_1",
    "CPU_SSE4_2": "sse4_2", "CPU_SSE4A": "sse4a", "CPU_AVX": "avx", "CPU_AVX2": "avx2",
    "SSE": "sse", "F16C": "f16c",
}  # fmt: skip

# BLAS feature -> a word in the name of the BLAS NumPy links
_BLAS_NAMES = {"BLAS_OPEN": "openblas", "BLAS_ATLAS": "atlas", "BLAS_MKL": "mkl"}


class Feature:
    """One feature: its ``name`` and whether it is ``enabled``."""

    def __init__(self, name, enabled):
        self.name, self.enabled = name, bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:  # not Linux: no flags to read, so none are claimed
        pass
    return set()


def _blas_name():
    try:
        config = np.show_config(mode="dicts")
        return str(config["Build Dependencies"]["blas"]["name"]).lower()
    except (TypeError, KeyError):  # NumPy before 1.25 has no dict form
        return ""


def _gpu_features():
    from .util import get_gpu_count

    cuda = get_gpu_count() > 0
    nccl = False
    if cuda:
        try:
            from cupy.cuda import nccl as cupy_nccl

            nccl = bool(getattr(cupy_nccl, "available", True))
        except ImportError:
            nccl = False
    return {"CUDA": cuda, "NCCL": nccl}


def _importable(name):
    return importlib.util.find_spec(name) is not None


def _detect():
    flags, blas = _cpu_flags(), _blas_name()
    enabled = dict.fromkeys(FEATURE_NAMES, False)
    enabled.update(_gpu_features())
    enabled.update({name: flag in flags for name, flag in _CPU_FLAGS.items()})
    enabled.update({name: word in blas for name, word in _BLAS_NAMES.items()})
    enabled["BLAS_APPLE"] = "accelerate" in blas
    enabled["LAPACK"] = True  # numpy.linalg always has one
    enabled["OPENCV"] = _importable("cv2")
    enabled["DIST_KVSTORE"] = _importable("mpi4py")
    enabled["PROFILER"] = True  # mx.profiler
    enabled["INT64_TENSOR_SIZE"] = True  # NumPy and CuPy index with 64-bit integers
    return enabled


class Features(collections.OrderedDict):
    """The features of this install, by name, in MXNet's order (``Features()['CUDA']``).

    As in MXNet it is a singleton: the install is looked at once, on first use.
    """

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            instance = super().__new__(cls)
            collections.OrderedDict.__init__(
                instance, ((name, Feature(name, on)) for name, on in _detect().items())
            )
            cls._instance = instance
        return cls._instance

    def __init__(self):
        """Nothing to do: ``__new__`` filled the one instance."""

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` is on; RuntimeError for a name MXNet does not know."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(
                f"Feature '{name}' is unknown, known features are: {list(self.keys())}"
            )
        return self[name].enabled


def feature_list():
    """Every feature as a ``Feature``, in MXNet's order."""
    return list(Features().values())
