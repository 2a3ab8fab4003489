"""The package layout: every sub-package is listed in pyproject, and imports are lazy."""

from pathlib import Path

import tomllib

ROOT = Path(__file__).parents[1]
FOLDERS = {"rebind": "core", "rebind.backends": "backends", "rebind.plugins": "plugins"}


def _declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]


def test_package_dir_maps_the_three_folders():
    assert _declared()["package-dir"] == FOLDERS


def test_every_subpackage_is_listed():
    found = set()
    for package, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *relative)))
    assert found == set(_declared()["packages"])
