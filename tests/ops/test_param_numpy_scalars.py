"""Op parameters given as NumPy scalars inside tuples are written as MXNet (NumPy 1) wrote them."""

import numpy as np

import rebind as mx


def test_numpy_integers_in_tuples_become_plain_text():
    sym = mx.sym.Convolution(
        mx.sym.Variable("d"), kernel=(np.int64(3), np.int64(3)), num_filter=np.int32(2), name="c"
    )
    assert sym.attr_dict()["c"] == {"kernel": "(3, 3)", "num_filter": "2"}
    exe = sym.simple_bind(mx.cpu(), d=(1, 1, 5, 5))
    assert exe.outputs[0].shape == (1, 2, 3, 3)


def test_numpy_floats_and_bools_in_lists():
    from rebind.ops.params import to_attr_string

    assert to_attr_string([np.float32(0.1), np.bool_(True), 2]) == "[0.1, True, 2]"
    assert to_attr_string((np.int64(0), np.int64(4))) == "(0, 4)"
