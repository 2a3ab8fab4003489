"""Fixtures of the operator tests."""

import pytest

from rebind.ops import conv_ort
from tests.ops.conv_kernels import use_kernels


@pytest.fixture
def kernels(monkeypatch):
    """Sets ``REBIND_CONV_KERNELS`` for the test (the setting is otherwise read once)."""
    yield lambda setting: use_kernels(monkeypatch, setting)
    conv_ort.kernels_setting.cache_clear()
