"""Export of BatchNormWithReLU (inference BatchNorm, then Relu)."""

import pytest

import rebind as mx

from .test_nn import data, export_and_compare


@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batch_norm_with_relu_exports_as_batch_norm_then_relu(tmp_path, fix_gamma):
    net = mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), fix_gamma=fix_gamma)
    export_and_compare(net, tmp_path, data=data(2, 3, 4, 5))
