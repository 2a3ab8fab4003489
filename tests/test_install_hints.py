"""Every ``rebind[extra]`` an error message or docstring names is an extra pyproject defines."""

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).parents[1]
EXTRAS = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
)


def test_install_hints_name_real_extras():
    named = {}
    for folder in ("core", "backends", "plugins", "examples"):
        for path in (ROOT / folder).rglob("*.py"):
            for match in re.finditer(r"rebind\[([\w,\- ]+)\]", path.read_text()):
                for extra in match[1].split(","):
                    named.setdefault(extra.strip(), set()).add(str(path.relative_to(ROOT)))
    unknown = {extra: sorted(paths) for extra, paths in named.items() if extra not in EXTRAS}
    assert not unknown, f"pyproject.toml has no such extra: {unknown}"
    assert {"gpu", "viz", "image", "onnx", "mpi"} <= set(named)
