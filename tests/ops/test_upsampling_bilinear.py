"""UpSampling(sample_type='bilinear') against MXNet 1.9.1: golden cases and gradients."""

import numpy as np
import pytest

from tests.ops.harness import case_ids, check_numeric_gradient, infer, replay_golden

BILINEAR = [c for c in case_ids("UpSampling") if c.startswith("upsampling_bilinear")]


@pytest.mark.parametrize("case_id", BILINEAR)
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def test_cases_were_recorded():
    assert len(BILINEAR) == 2


@pytest.mark.parametrize("scale", [2, 3])
def test_numeric_gradient(ctx, scale):
    rng = np.random.default_rng(scale)
    kernel = 2 * scale - scale % 2
    attrs = {"scale": str(scale), "sample_type": "bilinear", "num_filter": "2", "num_args": "2"}
    inputs = [rng.standard_normal((1, 2, 3, 3)), rng.standard_normal((2, 1, kernel, kernel))]
    check_numeric_gradient("UpSampling", attrs, inputs, ctx)


def test_inference_gives_the_weight_shape_and_scaled_output():
    attrs = {"scale": "2", "sample_type": "bilinear", "num_filter": "3", "num_args": "2"}
    ins, outs, _ = infer("UpSampling", attrs, [(2, 3, 4, 5), None])
    assert ins[1] == (3, 1, 4, 4) and outs == [(2, 3, 8, 10)]
