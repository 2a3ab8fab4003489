"""mx.runtime: MXNet's feature list, answered for this install."""

import importlib.util

import pytest

import rebind as mx
from rebind import runtime

# MXNet 1.9.1's names, in its order (mx.runtime.feature_list() there)
MXNET_FEATURES = [
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP",
]  # fmt: skip


def test_names_and_order_are_mxnets():
    features = mx.runtime.Features()
    assert list(features) == MXNET_FEATURES
    assert [f.name for f in mx.runtime.feature_list()] == MXNET_FEATURES


def test_answers_follow_what_is_installed():
    features = mx.runtime.Features()
    assert features.is_enabled("CUDA") == (mx.util.get_gpu_count() > 0)
    assert features.is_enabled("dist_kvstore") == (importlib.util.find_spec("mpi4py") is not None)
    assert features.is_enabled("OPENCV") == (importlib.util.find_spec("cv2") is not None)
    for name in ("MKLDNN", "TENSORRT", "TVM_OP", "CUDNN", "JEMALLOC", "CXX14"):
        assert not features.is_enabled(name), name


@pytest.fixture
def fresh_features(monkeypatch):
    """Features looked at again (it is a singleton), and forgotten after the test."""
    monkeypatch.setattr(runtime.Features, "_instance", None)


def test_is_a_singleton():
    assert mx.runtime.Features() is mx.runtime.Features()


def test_cpu_flags_come_from_cpuinfo(monkeypatch, fresh_features):
    monkeypatch.setattr(runtime, "_cpu_flags", lambda: {"sse", "sse2", "avx2"})
    features = runtime.Features()
    assert features.is_enabled("CPU_AVX2") and features.is_enabled("CPU_SSE2")
    assert not features.is_enabled("CPU_AVX") and not features.is_enabled("F16C")


def test_mpi_feature_follows_importability(monkeypatch, fresh_features):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        runtime.importlib.util, "find_spec", lambda n: None if n == "mpi4py" else real(n)
    )
    assert not runtime.Features().is_enabled("DIST_KVSTORE")


def test_unknown_feature_is_a_runtime_error_listing_the_known():
    with pytest.raises(RuntimeError, match="Feature 'FOO' is unknown, known features are"):
        mx.runtime.Features().is_enabled("foo")


def test_repr_marks_each_feature():
    text = repr(mx.runtime.Features())
    assert text.startswith("[") and "✔ LAPACK" in text and "✖ MKLDNN" in text
