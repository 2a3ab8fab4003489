"""rebind.alias_numpy: NumPy 1.x names for MXNet-era code, only while an alias runner runs."""

import subprocess
import sys

import numpy as np
import pytest

from rebind import alias, alias_numpy


@pytest.fixture
def legacy_names():
    was_on = alias_numpy.installed()  # on when this suite itself runs under -p rebind.alias
    alias_numpy.uninstall()
    alias_numpy._state["warned"].clear()
    alias_numpy.install()
    yield
    alias_numpy.uninstall()
    if was_on:
        alias_numpy.install()


def _numpy_has(name):
    return name in np.__dict__


@pytest.mark.parametrize(
    ("name", "expected"),
    [("int", int), ("float", float), ("object", object), ("str", str), ("float_", np.float64)],
)
def test_legacy_type_names_are_the_types_numpy_1_meant(legacy_names, name, expected):
    if _numpy_has(name):
        pytest.skip(f"this NumPy ({np.__version__}) defines numpy.{name} itself")
    with pytest.warns(DeprecationWarning, match=f"numpy.{name} was removed in NumPy 2"):
        assert getattr(np, name) is expected


def test_each_name_warns_once(legacy_names, recwarn):
    if _numpy_has("NaN"):
        pytest.skip(f"this NumPy ({np.__version__}) defines numpy.NaN itself")
    assert np.isnan(np.NaN) and np.isnan(np.NaN) and np.Inf == np.inf
    notes = [str(w.message) for w in recwarn if issubclass(w.category, DeprecationWarning)]
    assert sum("numpy.NaN" in n for n in notes) == 1 and sum("numpy.Inf " in n for n in notes) == 1


def test_names_numpy_has_and_unknown_names_are_untouched(legacy_names):
    assert np.bool_ is np.bool_ and np.float64(1.5) == 1.5
    with pytest.raises(AttributeError, match="no_such_name"):
        np.no_such_name  # noqa: B018 - the attribute access is the test


def test_uninstall_takes_the_names_away(legacy_names):
    alias_numpy.uninstall()
    assert not alias_numpy.installed()
    if not _numpy_has("int"):
        with pytest.raises(AttributeError):
            np.int  # noqa: B018


def test_alias_install_alone_leaves_numpy_alone():
    was_on = alias_numpy.installed()
    alias_numpy.uninstall()
    try:
        alias.install()
        assert not alias_numpy.installed()
        alias.uninstall()
    finally:
        if was_on:
            alias_numpy.install()


def test_the_script_runner_offers_the_names(tmp_path):
    script = tmp_path / "legacy.py"
    script.write_text("import numpy as np\nprint(np.int(np.float('3.5')) + 1)\n")
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "error::DeprecationWarning:__main__",
            "-m",
            "rebind.alias",
            str(script),
        ],
        capture_output=True,
        text=True,
    )
    if "int" in np.__dict__:
        assert done.returncode == 0
    else:  # the note is a DeprecationWarning, made an error here to see it is raised
        assert "numpy.int was removed in NumPy 2" in done.stderr
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert ("int" in np.__dict__) == (plain.returncode == 0)
