"""Export of SyncBatchNorm (as BatchNorm) and the refusal of helper I's contrib operators."""

import numpy as np
import pytest

import rebind as mx
from rebind.onnx.errors import OnnxExportError

from .test_nn import data, export_and_compare


@pytest.mark.parametrize("fix_gamma", [True, False])
def test_sync_batch_norm_exports_as_batch_norm(tmp_path, fix_gamma):
    net = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="bn", fix_gamma=fix_gamma)
    export_and_compare(net, tmp_path, data=data(2, 3, 4, 5))


def test_deformable_convolution_is_refused_with_the_reason(tmp_path):
    net = mx.sym.contrib.DeformableConvolution(
        mx.sym.var("data"), mx.sym.var("offset"), kernel=(3, 3), num_filter=2, pad=(1, 1)
    )
    with pytest.raises(OnnxExportError, match="DeformConv"):
        mx.onnx.export_model(
            net,
            {},
            in_shapes=[(1, 2, 4, 4), (1, 18, 4, 4), (2, 2, 3, 3), (2,)],
            in_types=[np.float32] * 4,
            onnx_file_path=str(tmp_path / "m.onnx"),
        )
    assert not (tmp_path / "m.onnx").exists()
