"""Every cell, combinator and unroll mode writes the JSON MXNet 1.9.1 writes, byte for byte.

The networks are in ``graph_cases.py``; MXNet's JSON of each was recorded by
``make_mxnet_graphs.py``. Equal JSON means equal node names, operators,
attributes (``__init__``, ``__layout__``), wiring, and argument order, so
MXNet checkpoints of these networks load.
"""

import gzip
import json
import warnings
from pathlib import Path

import pytest

import rebind as mx
from tests.rnn import graph_cases

RECORDED = Path(__file__).parent / "data" / "mxnet_graphs.json.gz"


def _recorded():
    with gzip.open(RECORDED, "rt", encoding="utf-8") as handle:
        return json.load(handle)


MXNET = _recorded()


def test_every_case_was_recorded():
    assert sorted(MXNET) == sorted(graph_cases.cases())


@pytest.mark.parametrize("name", sorted(MXNET))
def test_json_equals_mxnet(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FusedRNNCell's advice to use TNC
        ours = graph_cases.build(mx, name)
    assert ours == MXNET[name], f"{name}: rebind's JSON differs from MXNet 1.9.1's"
