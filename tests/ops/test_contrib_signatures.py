"""The contrib operators of issue 33 take MXNet 1.9.1's parameters and inputs, by name.

tests/namespaces/test_operator_signatures.py sets every ``_contrib_`` name
aside; this checks the ones rebind now has against the same recording.
"""

import json
from pathlib import Path

import attrs
import pytest

from rebind import registry

SIGNATURES = json.loads(
    (Path(__file__).parents[1] / "namespaces" / "mxnet_operator_signatures.json").read_text()
)["operators"]

CONTRIB = (
    "box_nms box_non_maximum_suppression box_iou box_encode box_decode bipartite_matching "
    "AdaptiveAvgPooling2D BilinearResize2D MultiBoxPrior MultiBoxTarget MultiBoxDetection "
    "ROIAlign arange_like div_sqrt_dim interleaved_matmul_selfatt_qk "
    "interleaved_matmul_selfatt_valatt interleaved_matmul_encdec_qk "
    "interleaved_matmul_encdec_valatt index_copy index_array boolean_mask gradientmultiplier "
    "allclose round_ste sign_ste Proposal MultiProposal PSROIPooling"
).split()


@pytest.mark.parametrize("name", [f"_contrib_{n}" for n in CONTRIB])
def test_parameters_and_inputs_are_mxnets(name):
    op = registry.get_registry("operators").get(name)
    recorded = SIGNATURES[name]
    assert op is registry.get_registry("operators").get(recorded["real_name"])
    fields = set(attrs.fields_dict(op.params)) if attrs.has(op.params) else set()
    assert fields == set(recorded["params"])
    params = op.parse({"mode": "like"} if name.endswith("BilinearResize2D") else _required(op))
    assert list(op.arguments(params)) == recorded["inputs"]


def _required(op):
    """Values for the required parameters, so the op parses."""
    values = {"heads": 1, "threshold": 0.5, "pooled_size": (2, 2), "spatial_scale": 1.0}
    if op.name == "_contrib_PSROIPooling":
        values.update(pooled_size=2, output_dim=1)
    if not attrs.has(op.params):
        return {}
    return {k: v for k, v in values.items() if k in attrs.fields_dict(op.params)}
