"""Fixtures of the tests that build the CuPy kernels for the host (host_kernels.py)."""

import pytest

from rebind.backends import cupy_kernels

from .host_kernels import HostCupy


@pytest.fixture(scope="session")
def host_cupy(tmp_path_factory):
    """A ``HostCupy`` whose kernels are compiled once per session, in a temporary folder."""
    return HostCupy(tmp_path_factory.mktemp("host-kernels"))


@pytest.fixture
def fresh_kernels(monkeypatch):
    """An empty kernel cache: a CuPy kernel compiled elsewhere must not be reused here."""
    monkeypatch.setattr(cupy_kernels, "_KERNELS", {})


def pytest_collection_modifyitems(config, items):
    """The CUDA compile check (test_cuda_compile.py) runs last: it reads the kernel calls
    that every host-kernel test before it recorded."""
    last = [item for item in items if item.path.name == "test_cuda_compile.py"]
    if last:
        others = [item for item in items if item.path.name != "test_cuda_compile.py"]
        items[:] = others + last
