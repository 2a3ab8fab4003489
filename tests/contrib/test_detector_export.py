"""A GluonCV-style detector exported by MXNet 1.9.1 loads through mx.mod.Module and matches.

The checkpoint (tests/recording/record_detector.py) holds box_decode and
box_nms over per-class rows as GluonCV's SSD exports them, MultiBoxPrior and
MultiBoxDetection, ROIAlign over the best boxes, BilinearResize2D and
AdaptiveAvgPooling2D; expected.npz holds MXNet's inference outputs.
"""

import numpy as np

import rebind as mx
from tests.conftest import GOLDEN

FOLDER = GOLDEN / "detector"


def test_detector_checkpoint_reproduces_mxnet():
    expected = np.load(FOLDER / "expected.npz")
    sym, args, aux = mx.model.load_checkpoint(str(FOLDER / "detector"), 0)
    module = mx.mod.Module(sym, data_names=["data"], label_names=None, context=mx.cpu())
    module.bind(data_shapes=[("data", expected["data"].shape)], for_training=False)
    module.set_params(args, aux)
    module.forward(mx.io.DataBatch([mx.nd.array(expected["data"])]), is_train=False)
    outputs = [o.asnumpy() for o in module.get_outputs()]
    assert len(outputs) == 5
    for index, output in enumerate(outputs):
        np.testing.assert_allclose(
            output, expected[f"out{index}"], rtol=1e-4, atol=1e-5, err_msg=f"output {index}"
        )
    detections = outputs[0][0]
    assert (detections[:, 0] >= 0).any(), "the recording should hold real detections"
