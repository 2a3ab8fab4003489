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
