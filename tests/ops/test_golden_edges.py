"""Replay of the edge-value golden cases of tests/ops/cases/edges.py (issue 30).

Ties, zeros, NaN and infinities, bounds past an axis and indices out of
range, each recorded from MXNet 1.9.1: rebind must give MXNet's values there.
"""

import importlib

import pytest

from tests.ops.harness import replay_golden

_IDS = [c["id"] for c in importlib.import_module("tests.ops.cases.edges").CASES]


@pytest.mark.parametrize("case_id", _IDS)
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)
