"""Shared fixtures: the golden cases and one run of each test per backend present."""

from pathlib import Path

import pytest

import rebind as mx
from rebind import registry

GOLDEN = Path(__file__).parent / "golden"

# name -> context to run on; a backend missing here skips with the reason
BACKEND_CONTEXTS = {"numpy": mx.cpu(0), "cupy": mx.gpu(0)}


def _skip_reason(name):
    backend = registry.lookup("backends", name)
    reason = backend.unavailable_reason()
    return None if reason is None else f"backend {name!r} unavailable: {reason}"


@pytest.fixture(
    params=[
        pytest.param("numpy"),
        pytest.param("cupy", marks=pytest.mark.gpu),
    ]
)
def backend_name(request):
    """Runs the test once per built-in backend; skipped where one is unavailable."""
    reason = _skip_reason(request.param)
    if reason:
        pytest.skip(reason)
    return request.param


@pytest.fixture
def ctx(backend_name):
    """The context of the backend under test."""
    return BACKEND_CONTEXTS[backend_name]


@pytest.fixture
def xp(ctx):
    """The array namespace of the backend under test."""
    return ctx.backend.xp


@pytest.fixture
def golden():
    """The directory of the cases recorded from MXNet 1.9.1."""
    return GOLDEN


@pytest.fixture
def fresh_registry(monkeypatch):
    """A registry rebuilt from the environment, restored after the test."""
    for name in ("REBIND_BACKEND", "REBIND_BLOCKED_PLUGINS", "REBIND_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(name, raising=False)
    # run-time registrations (MXNet's register decorators) made by the test go too
    monkeypatch.setitem(registry._state, "runtime", list(registry._state["runtime"]))
    registry.reset()
    yield registry
    monkeypatch.undo()
    registry.reset()


@pytest.fixture(autouse=True)
def fresh_automatic_names():
    """Each test names nodes from a fresh NameManager, as a new process would (dot0, ...)."""
    with mx.name.NameManager():
        yield


def _wait_for_helpers(tasks):
    for task in tasks:
        task.done.acquire()


@pytest.fixture
def helpers_run_their_calls(monkeypatch):
    """Every call handed to a side-by-side helper runs in that helper thread (the caller
    takes none over, see ``side_by_side.run``), so that tests can tell the threads apart."""
    from rebind import side_by_side

    monkeypatch.setattr(side_by_side, "_finish", _wait_for_helpers)
