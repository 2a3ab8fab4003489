"""Make ``import mxnet`` resolve to rebind, for code that cannot be edited.

``import rebind as mx`` is the one-line change for a script you own. For code you
should not touch (a notebook shared by colleagues, MXNet's own test files, a
third-party package that does ``import mxnet``), call ``install()`` first, or:

- ``python -m rebind.alias script.py [args]``: run a script with the alias on;
- ``python -m pytest -p rebind.alias tests/``: run a test suite with it on.

Every ``mxnet`` and ``mxnet.<sub>`` import then returns the matching ``rebind``
module (the same object, so ``mxnet.nd is rebind.nd``). A real MXNet installed
beside rebind is shadowed only while the alias is installed. The two runners
also offer NumPy 1.x names MXNet-era code uses (``np.int``; see ``alias_numpy``).
"""

import importlib
import importlib.abc
import importlib.util
import runpy
import sys

from . import alias_numpy

__all__ = ["install", "uninstall", "installed"]

ALIAS = "mxnet"
TARGET = "rebind"


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``mxnet[.x]`` as the already importable ``rebind[.x]``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        real = TARGET + fullname[len(ALIAS) :]
        missing = importlib.import_module(TARGET + ".missing").missing_module(real, fullname)
        if missing is not None:
            raise missing  # mxnet.gluon & co.: say why rebind has no such module
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(TARGET + spec.name[len(ALIAS) :])

    def exec_module(self, module):
        """The rebind module is already executed; nothing to run twice."""


_FINDER = _AliasFinder()


def installed():
    """Whether ``import mxnet`` currently resolves to rebind."""
    return _FINDER in sys.meta_path


def install():
    """Let ``import mxnet`` (and every ``mxnet.<sub>``) resolve to rebind."""
    if installed():
        return
    for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
        if not getattr(sys.modules[name], "__name__", "").startswith(TARGET):
            raise RuntimeError(
                f"install: {name!r} is already imported from a real MXNet; call "
                "rebind.alias.install() before anything imports mxnet"
            )
    sys.meta_path.insert(0, _FINDER)


def uninstall():
    """Undo ``install`` (and the runners' NumPy names): forget the alias and its modules."""
    alias_numpy.uninstall()
    if installed():
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith(TARGET):
            del sys.modules[name]


def pytest_configure(config):
    """As a pytest plugin (``-p rebind.alias``): the alias is on before test files import.

    MXNet-era NumPy names (``np.int``) are offered too, as ``alias_numpy`` explains.
    """
    install()
    alias_numpy.install()


def main(argv=None):
    """``python -m rebind.alias script.py [args]``: run the script with the alias on."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m rebind.alias SCRIPT.py [ARGS...]")
        return 0 if argv else 2
    install()
    alias_numpy.install()
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
