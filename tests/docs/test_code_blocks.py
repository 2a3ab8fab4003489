"""Every python block of README.md and docs/ runs: page by page, in an empty folder.

Each page runs in a fresh process (tests/docs/blocks.py), its blocks in order in
one namespace, with data the blocks make themselves. A page whose blocks need an
optional library names it (``<!-- requires: onnxruntime -->``) and is skipped,
naming it, where it is missing; the test extra installs them all.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .blocks import ROOT, parse, required_modules

RUNNER = Path(__file__).with_name("blocks.py")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# the pages with python blocks to run (the reference pages have none)
RUNNABLE = [page for page in PAGES if any(block.runs for block in parse(page.read_text()))]
RUNNABLE_IDS = [str(page.relative_to(ROOT)) for page in RUNNABLE]
PLUGIN_PACKAGE = ROOT / "examples" / "plugin_package"
MAX_NO_RUN = 2  # blocks that must not run stay rare


def toml_tables(text):
    """``{table: {key: string value}}`` of a flat TOML file (Python 3.10 has no tomllib)."""
    current = {}
    tables = {"": current}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            current = tables.setdefault(line.strip("[]"), {})
        elif "=" in line:
            key, value = (part.strip() for part in line.split("=", 1))
            current[key] = value.strip('"')
    return tables


def install_plugin_package(site):
    """Lay down what ``pip install examples/plugin_package`` installs: the package and its
    dist-info with the entry points its pyproject.toml declares."""
    tables = toml_tables((PLUGIN_PACKAGE / "pyproject.toml").read_text())
    project, entry_points = tables["project"], tables["project.entry-points.rebind"]
    name, version = project["name"].replace("-", "_"), project["version"]
    dist = site / f"{name}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n"
    )
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (dist / "entry_points.txt").write_text("[rebind]\n" + lines)
    package = site / "rebind_extras"
    package.mkdir()
    for source in (PLUGIN_PACKAGE / "rebind_extras").glob("*.py"):
        (package / source.name).write_text(source.read_text())


# pages whose blocks need something installed first, as the page tells the reader to
PAGE_SETUP = {"docs/howto/plugins.md": install_plugin_package}


def run_blocks(page, folder, env_extra=None):
    """Run a page's blocks in ``folder``; the finished process."""
    env = {**os.environ, "REBIND_PROGRESS": "0", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, str(RUNNER), str(page)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
        env=env,
    )


@pytest.mark.parametrize("page", RUNNABLE, ids=RUNNABLE_IDS)
def test_python_blocks_run(page, tmp_path):
    text = page.read_text()
    missing = [m for m in required_modules(text) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{page.name} needs {missing} (pip install -e '.[test]' installs them)")
    work, env = tmp_path / "work", {}
    work.mkdir()
    setup = PAGE_SETUP.get(str(page.relative_to(ROOT)))
    if setup:
        setup(tmp_path / "site")
        env["PYTHONPATH"] = os.pathsep.join(
            [str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]
        )
    result = run_blocks(page, work, env)
    assert result.returncode == 0, f"{page}:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"


def test_readme_shows_python_code():
    runnable = [block for block in parse((ROOT / "README.md").read_text()) if block.runs]
    assert len(runnable) >= 3
    assert "import rebind as mx" in runnable[0].code


def test_blocks_that_do_not_run_are_rare_and_say_why():
    skipped = [
        (page.name, block.line, block.no_run_reason)
        for page in PAGES
        for block in parse(page.read_text())
        if block.lang in ("python", "py") and block.no_run_reason
    ]
    assert len(skipped) <= MAX_NO_RUN, skipped
    assert all(reason for *_, reason in skipped)


def test_a_failing_block_fails_naming_page_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n```python\nvalue = 1\n```\n\ntext\n\n```python\nassert value == 2\n```\n"
    )
    result = run_blocks(page, tmp_path)
    assert result.returncode == 1
    assert f"{page}:10: this block failed" in result.stderr
    assert f'File "{page}", line 10' in result.stderr


def test_blocks_share_a_namespace_and_skip_only_marked_ones(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nopen('made.txt', 'w').write('x')\nvalue = 1\n```\n\n"
        "<!-- no-run: shows a failure -->\n```python\nraise SystemExit(3)\n```\n\n"
        "```sh\nexit 3\n```\n\n"
        "- item\n\n    ```python\n"
        "    assert value == 1 and open('made.txt').read() == 'x'\n    ```\n"
    )
    blocks = parse(page.read_text())
    assert [(b.lang, b.runs) for b in blocks] == [
        ("python", True),
        ("python", False),
        ("sh", False),
        ("python", True),
    ]
    result = run_blocks(page, tmp_path)
    assert result.returncode == 0, result.stderr
