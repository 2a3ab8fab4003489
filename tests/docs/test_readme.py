"""README.md stays a user's first page: short, its commands and lists true to the project."""

import re

import tomllib

from .blocks import ROOT

README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def section(title):
    """The text of the README section ``## title`` (up to the next ``## ``)."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert found, f"README.md has no section '## {title}'"
    return found[1]


def test_readme_is_short():
    assert len(README.splitlines()) < 300


def test_first_screen_has_install_the_first_script_a_checkpoint_and_the_limits():
    titles = re.findall(r"^## (.+)$", README, re.M)
    assert titles[:6] == [
        "Quick start",
        "Install",
        "Your MXNet script, one line changed",
        "I have a checkpoint, or an exported Gluon model",
        "MXNet code you cannot edit",
        "What is and is not supported",
    ]
    intro = README.split("\n## ", 1)[0]
    for limit in ("Gluon", "mx.autograd", "mx.np", "sparse"):
        assert limit in intro


def test_quick_start_is_two_commands_and_ci_runs_the_second():
    commands = re.search(r"```sh\n(.*?)```", section("Quick start"), re.S)[1].splitlines()
    assert commands == [
        'python -m pip install -e ".[examples]" && python examples/mlp_digits.py',
        'python -m pip install -e ".[test,mpi,cuda-check]" && python -m pytest',
    ]
    assert commands[1] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_quick_start_says_how_long_the_suite_takes():
    assert re.search(r"about [0-9,]+ tests, .* minutes", section("Quick start").replace("\n", " "))


def test_the_extras_table_lists_every_extra_of_pyproject():
    listed = re.findall(r"^\| `([\w-]+)` \|", section("Install"), re.M)
    assert sorted(listed) == sorted(PYPROJECT["project"]["optional-dependencies"])


def test_the_examples_table_lists_every_example():
    listed = set(re.findall(r"^\| `([\w.]+\.py)` \|", section("Examples"), re.M))
    assert listed == {path.name for path in (ROOT / "examples").glob("*.py")}


def test_relative_links_point_at_files_that_exist():
    for target in re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)", README):
        assert (ROOT / target).is_file(), target
