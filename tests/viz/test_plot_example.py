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
