"""``launcher_environment``: what Open MPI's and MPICH's ``mpiexec`` need to start jobs."""

import os
import stat

import pytest

from rebind.plugins import mpi_comm

ROOT_VARIABLES = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


def _launcher(tmp_path, version_text):
    """A stand-in ``mpiexec`` that prints ``version_text`` for ``--version``."""
    script = tmp_path / "mpiexec"
    script.write_text(f"#!/bin/sh\necho '{version_text}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.mark.parametrize(
    ("version_text", "as_root", "expected"),
    [
        ("mpiexec (Open MPI) 5.0.3", True, True),
        ("mpiexec (OpenRTE) 4.1.2", True, True),
        ("mpiexec (Open MPI) 5.0.3", False, False),
        ("HYDRA build details:\n    Version: 4.2.0", True, False),
    ],
    ids=["open-mpi-5-root", "open-mpi-4-root", "open-mpi-user", "mpich-root"],
)
def test_open_mpi_as_root_gets_its_two_permissions(
    tmp_path, monkeypatch, version_text, as_root, expected
):
    monkeypatch.setattr(os, "geteuid", lambda: 0 if as_root else 1000)
    environment = mpi_comm.launcher_environment(_launcher(tmp_path, version_text), {"PATH": "/bin"})
    for name in ROOT_VARIABLES:
        assert (environment.get(name) == "1") is expected
    assert environment["PATH"] == "/bin"


def test_a_value_the_user_set_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    given = {"OMPI_ALLOW_RUN_AS_ROOT": "0"}
    environment = mpi_comm.launcher_environment(
        _launcher(tmp_path, "mpiexec (Open MPI) 5.0.3"), given
    )
    assert environment["OMPI_ALLOW_RUN_AS_ROOT"] == "0"
    assert environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert given == {"OMPI_ALLOW_RUN_AS_ROOT": "0"}  # the caller's mapping is not changed


def test_a_launcher_that_cannot_run_needs_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    missing = str(tmp_path / "no-such-mpiexec")
    assert mpi_comm.launcher_environment(missing, {}) == {}
