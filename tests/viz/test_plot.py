"""mx.viz.plot_network draws the graph real MXNet 1.9.1 draws, and renders it with dot."""

import json
import shutil
import warnings
from pathlib import Path

import pytest

import rebind as mx
from rebind.errors import ShapeError

from .networks import NETWORKS, plot_cases

graphviz = pytest.importorskip(
    "graphviz", reason="the graphviz package is not installed (pip install 'rebind[viz]')"
)

RECORDED = json.loads((Path(__file__).parent / "mxnet_viz.json").read_text())
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot program is not on PATH; rendering needs it (apt install graphviz)",
)


def replayed(record):
    """MXNet's recorded node and edge calls, made again on this graphviz version."""
    dot = graphviz.Digraph(name=record["name"], format=record["format"])
    for kind, first, second, attrs in record["calls"]:
        if kind == "node":
            dot.node(name=first, label=second, **dict(attrs))
        else:
            dot.edge(tail_name=first, head_name=second, **dict(attrs))
    return dot


@pytest.mark.parametrize("case, name, kwargs", plot_cases(), ids=[c[0] for c in plot_cases()])
def test_graph_matches_mxnet(case, name, kwargs):
    dot = mx.viz.plot_network(NETWORKS[name][0](mx), **kwargs)
    expected = replayed(RECORDED["plot_network"][case])
    assert isinstance(dot, graphviz.Digraph)
    assert (dot.name, dot.format) == (expected.name, expected.format)
    assert dot.source == expected.source


def test_edges_carry_shapes_and_weights_hide():
    dot = mx.viz.plot_network(NETWORKS["mlp"][0](mx), shape={"data": (32, 64)})
    assert "\tfc1 -> data [label=64 arrowtail=open dir=back]\n" in dot.body
    assert "\tfc2 -> relu1 [label=128 arrowtail=open dir=back]\n" in dot.body
    assert not any("_weight" in line or "_bias" in line for line in dot.body)


def test_shape_and_dtype_for_unknown_inputs_are_refused():
    symbol = NETWORKS["mlp"][0](mx)
    with pytest.raises(ShapeError, match=r"plot_network: shape given for \['x'\]"):
        mx.viz.plot_network(symbol, shape={"x": (1, 64)})
    with pytest.raises(ShapeError, match=r"plot_network: dtype given for \['x'\]"):
        mx.viz.plot_network(symbol, dtype={"x": "float32"})


def test_incomplete_shapes_are_refused():
    with pytest.raises(ShapeError, match="plot_network: cannot infer"):
        mx.viz.plot_network(NETWORKS["two_inputs"][0](mx), shape={"tokens": (16, 3)})


def test_repeated_names_warn():
    twice = mx.sym.Variable("x") + mx.sym.Variable("x")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(twice)
    assert any(
        issubclass(w.category, RuntimeWarning) and "Repeated names: x" in str(w.message)
        for w in caught
    )


@needs_dot
def test_renders_a_png():
    dot = mx.viz.plot_network(NETWORKS["lenet_bn"][0](mx), shape={"data": (64, 1, 28, 28)})
    picture = dot.pipe(format="png")
    assert picture[:8] == b"\x89PNG\r\n\x1a\n"
    assert picture[12:16] == b"IHDR"
    width = int.from_bytes(picture[16:20], "big")
    height = int.from_bytes(picture[20:24], "big")
    # 13 layers stacked top to bottom: taller than wide
    assert 0 < width < height


@needs_dot
def test_render_writes_the_file(tmp_path):
    dot = mx.viz.plot_network(NETWORKS["mlp"][0](mx), title="mlp", save_format="svg")
    written = Path(dot.render(directory=tmp_path, cleanup=True))
    assert written == tmp_path / "mlp.gv.svg"
    text = written.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "<title>fc1&#45;&gt;data</title>" in text
