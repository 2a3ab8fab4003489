"""Replay of the golden cases in tests/ops/cases/backfill.py and internal.py.

Their operators' numeric-gradient and inference tests live with their
families (test_unary.py, test_binary.py, ...); this file adds MXNet's
recorded values for the ones the shared golden set left out.
"""

import importlib

import pytest

from tests.ops.harness import replay_golden


def _ids(family):
    return [c["id"] for c in importlib.import_module(f"tests.ops.cases.{family}").CASES]


@pytest.mark.parametrize("case_id", _ids("backfill") + _ids("internal"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)
