"""MkDocs hook: give mkdocstrings the ``rebind`` package as Python imports it.

``rebind`` is assembled from three folders (pyproject.toml's ``package-dir``:
``core/`` is ``rebind``, ``backends/`` and ``plugins/`` are ``rebind.backends``
and ``rebind.plugins``). Griffe, which reads the sources for mkdocstrings,
finds ``rebind`` in ``core/`` but not the two sub-packages that live beside it.
This hook links the three into one ``rebind`` folder under ``build/docs-src``
(ignored by git), the folder mkdocs.yml gives the python handler as ``paths``,
before any page is rendered.
"""

import shutil
from pathlib import Path

TREE = Path("build") / "docs-src"  # relative to mkdocs.yml; mkdocs.yml's handler paths
SUBPACKAGES = {"backends": "backends", "plugins": "plugins"}


def build_package_tree(root):
    """(Re)make ``root/build/docs-src/rebind`` out of links into the checkout."""
    package = root / TREE / "rebind"
    if package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for entry in (root / "core").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, source in SUBPACKAGES.items():
        (package / name).symlink_to(root / source)
    return package


def on_config(config):
    """Assemble the package before mkdocstrings first reads it."""
    build_package_tree(Path(config.config_file_path).parent)
    return config


# also at import, while mkdocs reads mkdocs.yml: mkdocstrings' python handler keeps only
# the ``paths`` that exist when it is configured, which on a fresh checkout is before
# on_config runs (the first build of a new clone then missed rebind.plugins)
build_package_tree(Path(__file__).resolve().parents[2])
