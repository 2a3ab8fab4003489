"""Without the optional graphviz package, plot_network says which extra to install."""

import sys

import pytest

import rebind as mx
from rebind.errors import RebindError
from rebind.visualization import GraphvizMissingError

from .networks import NETWORKS


def test_missing_graphviz_raises_an_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # makes `import graphviz` fail
    with pytest.raises(GraphvizMissingError, match=r"pip install rebind\[viz\]") as caught:
        mx.viz.plot_network(NETWORKS["mlp"][0](mx))
    assert isinstance(caught.value, ImportError)
    assert isinstance(caught.value, RebindError)


def test_print_summary_needs_no_graphviz(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    mx.viz.print_summary(NETWORKS["mlp"][0](mx))
    assert "Total params: " in capsys.readouterr().out
