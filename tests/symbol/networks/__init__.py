"""Networks built from issue 13's operators, defined once for the recorder and the tests.

``builders(mx)`` returns {name: build}, each ``build()`` giving ``(symbol,
shapes, inputs)``: the symbol composed with ``mx`` (real MXNet in
tests/recording/record_networks.py, rebind in tests/symbol/test_networks.py),
the shape of every argument, and for non-float arguments how to draw them.
"""

__all__ = ["builders"]


def _spatial_transformer(mx):
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    loc = mx.sym.FullyConnected(mx.sym.Activation(conv, act_type="tanh"), num_hidden=6, name="loc")
    warped = mx.sym.SpatialTransformer(
        data, loc, target_shape=(6, 6), transform_type="affine", sampler_type="bilinear", name="st"
    )
    norm = mx.sym.LRN(warped, nsize=3, alpha=0.001, beta=0.75, knorm=2.0, name="lrn")
    pool = mx.sym.Pooling(norm, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    fc = mx.sym.FullyConnected(mx.sym.Flatten(pool), num_hidden=3, name="fc")
    return (
        mx.sym.SoftmaxOutput(fc, name="softmax"),
        {"data": (2, 2, 8, 8)},
        {"softmax_label": (0, 3)},
    )


def _padded_groups(mx):
    data = mx.sym.Variable("data")
    padded = mx.sym.Pad(data, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 1, 1), name="pad")
    conv = mx.sym.Convolution(padded, num_filter=8, kernel=(3, 3), name="conv")
    norm = mx.sym.GroupNorm(conv, num_groups=2, name="gn")
    cropped = mx.sym.Crop(norm, h_w=(4, 4), offset=(1, 1), name="crop")
    shuffled = mx.sym.depth_to_space(cropped, block_size=2, name="d2s")
    return (
        mx.sym.MakeLoss(mx.sym.mean(mx.sym.square(shuffled)), name="loss"),
        {"data": (2, 4, 6, 6)},
        {},
    )


def _ctc(mx):
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("label")
    scores = mx.sym.FullyConnected(data, num_hidden=5, flatten=False, name="proj")
    loss = mx.sym.ctc_loss(scores, label, blank_label="first", name="ctc")
    return (
        mx.sym.MakeLoss(loss, name="loss"),
        {"data": (6, 2, 4), "label": (2, 3)},
        {"label": (1, 5)},
    )


def _gaussian_loglik(mx):
    a = mx.sym.Variable("a")
    x = mx.sym.Variable("x")
    cov = mx.sym.linalg.syrk(a, alpha=1.0) + mx.sym.eye(3) * 3.0
    chol = mx.sym.linalg.potrf(cov)
    solved = mx.sym.linalg.trsm(chol, x, rightside=False, alpha=1.0)
    quad = mx.sym.sum(mx.sym.square(solved))
    logdet = mx.sym.linalg.sumlogdiag(chol)
    return mx.sym.MakeLoss(quad + 2 * logdet, name="nll"), {"a": (3, 3), "x": (3, 2)}, {}


def _fresh_names(mx, build):
    """Build under a new NameManager, so automatic names do not depend on what ran before."""

    def run():
        with mx.name.NameManager():
            return build(mx)

    return run


def builders(mx):
    return {
        name: _fresh_names(mx, build)
        for name, build in (
            ("spatial_transformer", _spatial_transformer),
            ("padded_groups", _padded_groups),
            ("ctc", _ctc),
            ("gaussian_loglik", _gaussian_loglik),
        )
    }
