"""The contrib operators of helper I (issue 33) take MXNet 1.9.1's parameters and inputs."""

import json
from pathlib import Path

import attrs
import pytest

from rebind import registry

SIGNATURES = json.loads(
    (Path(__file__).parents[1] / "namespaces" / "mxnet_operator_signatures.json").read_text()
)["operators"]

REQUIRED = {  # values for the required parameters, so each op parses
    "DeformableConvolution": {"kernel": (3, 3), "num_filter": 2},
    "ModulatedDeformableConvolution": {"kernel": (3, 3), "num_filter": 2},
    "DeformablePSROIPooling": {
        "spatial_scale": 0.5,
        "output_dim": 2,
        "group_size": 2,
        "pooled_size": 2,
    },
    "RROIAlign": {"pooled_size": (2, 2), "spatial_scale": 1.0},
    "SyncBatchNorm": {"key": "bn"},
    "count_sketch": {"out_dim": 4},
    "fft": {},
    "ifft": {},
    "hawkesll": {},
    "edge_id": {},
}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_parameters_and_inputs_are_mxnets(name):
    op = registry.get_registry("operators").get(f"_contrib_{name}")
    recorded = SIGNATURES[f"_contrib_{name}"]
    assert op is registry.get_registry("operators").get(recorded["real_name"])
    fields = set(attrs.fields_dict(op.params)) if attrs.has(op.params) else set()
    assert fields == set(recorded["params"])
    params = op.parse(REQUIRED[name])
    assert [*op.arguments(params), *op.aux_states(params)] == recorded["inputs"]
