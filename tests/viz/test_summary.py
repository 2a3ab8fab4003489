"""mx.viz.print_summary prints the table real MXNet 1.9.1 prints for the same network."""

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError

from .networks import NETWORKS, summary_cases

RECORDED = json.loads((Path(__file__).parent / "mxnet_viz.json").read_text())


def printed_summary(symbol, **kwargs):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = mx.viz.print_summary(symbol, **kwargs)
    assert result is None
    return buffer.getvalue()


@pytest.mark.parametrize("case, name, kwargs", summary_cases(), ids=[c[0] for c in summary_cases()])
def test_summary_matches_mxnet(case, name, kwargs):
    text = printed_summary(NETWORKS[name][0](mx), **kwargs)
    assert text == RECORDED["print_summary"][case]


def test_aliases_are_one_module():
    import rebind.visualization
    from rebind import viz

    assert mx.viz is mx.visualization is viz is rebind.visualization
    assert {"viz", "visualization"} <= set(mx.__all__)


def test_mlp_total_is_the_true_parameter_count():
    # for an MLP MXNet's counting rule is exact: compare with the inferred weight shapes
    symbol = NETWORKS["mlp"][0](mx)
    arg_shapes, _, _ = symbol.infer_shape(data=(32, 64))
    names = symbol.list_arguments()
    expected = sum(
        int(np.prod(shape))
        for name, shape in zip(names, arg_shapes, strict=True)
        if name.endswith(("_weight", "_bias"))
    )
    text = printed_summary(symbol, shape={"data": (32, 64)})
    assert f"Total params: {expected}\n" in text
    assert expected == 64 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10


def test_rows_are_cut_to_the_column_positions():
    text = printed_summary(NETWORKS["lenet_bn"][0](mx), line_length=40)
    lines = text.splitlines()
    assert lines[0] == "_" * 40
    assert lines[2] == "=" * 40
    assert all(len(line) == 40 for line in lines if not line.startswith("Total params"))
    # columns end at 0.44, 0.64, 0.74 of 40 characters: 17, 25, 29
    assert lines[3] == "data(null)" + " " * 15 + "0" + " " * 14
    softmax = next(line for line in lines if line.startswith("softmax("))
    assert softmax == "softmax(SoftmaxOu" + " " * 8 + "0   " + "fc2" + " " * 8


def test_shape_for_a_name_the_symbol_lacks_is_refused():
    with pytest.raises(ShapeError, match=r"\['dta'\].*inputs are \['data'"):
        mx.viz.print_summary(NETWORKS["mlp"][0](mx), shape={"dta": (32, 64)})


def test_shapes_that_cannot_be_inferred_are_refused():
    symbol = NETWORKS["two_inputs"][0](mx)
    with pytest.raises(ShapeError, match="print_summary: cannot infer the network's shapes"):
        mx.viz.print_summary(symbol, shape={"data": (16, 10)})


def test_shapes_that_do_not_fit_are_refused():
    with pytest.raises(ShapeError, match="print_summary"):
        mx.viz.print_summary(NETWORKS["lenet_bn"][0](mx), shape={"data": (4, 1, 3, 3)})


def test_a_non_symbol_is_refused():
    with pytest.raises(TypeError, match="print_summary: symbol must be a rebind Symbol, got dict"):
        mx.viz.print_summary({"data": (1, 2)})
