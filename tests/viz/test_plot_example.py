"""examples/plot_network.py prints MXNet's summary of the demo MLP and draws it as SVG."""

import importlib.util
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "plot_network.py"
RECORDED = json.loads((Path(__file__).parent / "mxnet_viz.json").read_text())
SVG = "{http://www.w3.org/2000/svg}"

# what the picture holds: the layers, the label input, and one edge per drawn input
NODES = {"data", "fc1", "relu1", "fc2", "relu2", "fc3", "softmax_label", "softmax"}
EDGES = {
    "fc1->data",
    "relu1->fc1",
    "fc2->relu1",
    "relu2->fc2",
    "fc3->relu2",
    "softmax->fc3",
    "softmax->softmax_label",
}


def drawn(svg_text):
    """(node titles, edge titles, edge labels) of an SVG that dot wrote."""
    root = ElementTree.fromstring(svg_text)
    nodes, edges, labels = set(), set(), []
    for group in root.iter(f"{SVG}g"):
        title = group.find(f"{SVG}title").text
        if group.get("class") == "node":
            nodes.add(title)
        elif group.get("class") == "edge":
            edges.add(title)
            labels += [text.text for text in group.iter(f"{SVG}text")]
    return nodes, edges, labels


def test_committed_picture_shows_the_demo_mlp():
    nodes, edges, labels = drawn((ROOT / "docs" / "mlp_digits.svg").read_text())
    assert (nodes, edges) == (NODES, EDGES)
    assert sorted(labels) == sorted(["64", "128", "128", "64", "64", "10"])


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not on PATH")
@pytest.mark.skipif(
    importlib.util.find_spec("graphviz") is None,
    reason="the graphviz package is not installed (pip install 'rebind[viz]')",
)
def test_script_prints_the_summary_and_writes_the_svg(tmp_path):
    output = tmp_path / "pictures" / "mlp.svg"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(output)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    # the script's batch of 32 digits is the recorded MLP case's shape
    assert result.stdout == RECORDED["print_summary"]["mlp/shape"] + f"wrote {output}\n"
    nodes, edges, _ = drawn(output.read_text())
    assert (nodes, edges) == (NODES, EDGES)


needs_graphviz_package = pytest.mark.skipif(
    importlib.util.find_spec("graphviz") is None,
    reason="the graphviz package is not installed (pip install 'rebind[viz]')",
)


def run_script(args, cwd, path):
    """Run the example with ``PATH`` set to ``path`` (Python's own folder first)."""
    env_path = f"{Path(sys.executable).parent}:{path}" if path else str(Path(sys.executable).parent)
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"PATH": env_path, "REBIND_PROGRESS": "0"},
    )


@needs_graphviz_package
def test_without_dot_the_script_says_what_to_install(tmp_path):
    result = run_script([str(tmp_path / "mlp.svg")], tmp_path, "")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    assert "needs Graphviz's `dot` program" in result.stderr
    assert "apt-get install graphviz" in result.stderr
    assert "mlp.gv" in result.stderr  # the way without dot
    assert result.stdout.startswith(RECORDED["print_summary"]["mlp/shape"])
    assert not (tmp_path / "mlp.svg").exists()


@needs_graphviz_package
def test_dot_source_needs_no_dot_program(tmp_path):
    result = run_script(["net.gv"], tmp_path, "")
    assert result.returncode == 0, result.stderr
    source = (tmp_path / "net.gv").read_text()
    assert source.startswith("digraph mlp_digits {")
    for node in NODES:
        assert f"\t{node} [" in source


@needs_graphviz_package
def test_default_output_is_in_the_working_directory_not_the_tracked_picture(tmp_path):
    # a stand-in dot that answers every layout with a fixed picture
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_dot = bin_dir / "dot"
    fake_dot.write_text("#!/bin/sh\ncat > /dev/null\necho '<svg>stand-in</svg>'\n")
    fake_dot.chmod(0o755)
    tracked = (ROOT / "docs" / "mlp_digits.svg").read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    result = run_script([], work, f"{bin_dir}:/usr/bin:/bin")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("wrote mlp_digits.svg\n")
    assert (work / "mlp_digits.svg").read_text().strip() == "<svg>stand-in</svg>"
    assert (ROOT / "docs" / "mlp_digits.svg").read_bytes() == tracked
