"""rebind.alias: ``import mxnet`` resolves to rebind for code that cannot be edited."""

import subprocess
import sys

import pytest

import rebind
from rebind import alias


@pytest.fixture
def alias_on():
    alias.install()
    yield
    alias.uninstall()


def test_import_mxnet_gives_the_rebind_modules(alias_on):
    import mxnet
    import mxnet.module.executor_group as group
    from mxnet import nd
    from mxnet.io import NDArrayIter

    assert mxnet is rebind
    assert nd is rebind.nd
    assert group is sys.modules["rebind.module.executor_group"]
    assert NDArrayIter is rebind.io.NDArrayIter


def test_uninstall_forgets_the_alias():
    alias.install()
    import mxnet  # noqa: F401

    alias.uninstall()
    assert not alias.installed()
    assert "mxnet" not in sys.modules


def test_a_missing_submodule_is_still_a_module_not_found_error(alias_on):
    with pytest.raises(ModuleNotFoundError):
        import mxnet.no_such_namespace  # noqa: F401


def test_run_a_script_unchanged(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "import mxnet as mx\n"
        "x = mx.nd.array([[1, 2], [3, 4]])\n"
        "print(mx.__name__, (x * 2).asnumpy().sum(), sys.argv[1:])\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "rebind.alias", str(script), "--epochs", "2"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "rebind 20.0 ['--epochs', '2']"


def test_pytest_plugin_turns_the_alias_on(tmp_path):
    (tmp_path / "test_uses_mxnet.py").write_text(
        "import mxnet as mx\n"
        "def test_it():\n"
        "    assert mx.nd.ones((2,)).asnumpy().tolist() == [1.0, 1.0]\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "rebind.alias",
            "-p",
            "no:cacheprovider",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


@pytest.mark.parametrize(
    ("statement", "shown"),
    [
        ("import mxnet.gluon", "mxnet.gluon"),
        ("from mxnet.gluon import nn", "mxnet.gluon"),
        ("import mxnet.autograd", "mxnet.autograd"),
        ("from mxnet import gluon", "rebind.gluon"),
    ],
)
def test_a_namespace_rebind_lacks_is_explained(alias_on, statement, shown):
    with pytest.raises(ModuleNotFoundError, match=f"No module named '{shown}': ") as info:
        exec(statement, {})
    assert isinstance(info.value, rebind.errors.MissingModuleError)
    assert "not part of rebind" in str(info.value)
