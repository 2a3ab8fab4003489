"""The bucketing benchmark's model and data, shared by rebind, MXNet, PyTorch and NumPy runs.

The word-level LSTM language model of MXNet's ``lstm_bucketing`` example:
Embedding(10 000 -> 200), two unrolled ``LSTMCell`` layers of 200, a
FullyConnected back to 10 000 words and SoftmaxOutput, trained on batches of
32 sentences padded to buckets of 10, 20, ..., 60 tokens with SGD (lr 0.01,
momentum 0, wd 1e-5; gradients rescaled by 1/batch as Module does).

Imported by workers under other interpreters (MXNet 1.9.1 needs Python 3.8):
Python 3.8 compatible, NumPy only, imported after the thread variables are set.
"""

import numpy as np

VOCAB = 10000
EMBED = 200
HIDDEN = 200
LAYERS = 2
BUCKETS = (10, 20, 30, 40, 50, 60)
BATCH = 32
LEARNING_RATE = 0.01
WEIGHT_DECAY = 1e-5
INVALID_LABEL = 0
BATCHES_PER_BUCKET = 2  # per epoch
SEED = 20240607


def param_shapes():
    """Parameter name -> shape, named as MXNet's example names them."""
    shapes = {"embed_weight": (VOCAB, EMBED)}
    for layer in range(LAYERS):
        width = EMBED if layer == 0 else HIDDEN
        prefix = f"lstm_l{layer}_"
        shapes[prefix + "i2h_weight"] = (4 * HIDDEN, width)
        shapes[prefix + "i2h_bias"] = (4 * HIDDEN,)
        shapes[prefix + "h2h_weight"] = (4 * HIDDEN, HIDDEN)
        shapes[prefix + "h2h_bias"] = (4 * HIDDEN,)
    shapes["pred_weight"] = (VOCAB, HIDDEN)
    shapes["pred_bias"] = (VOCAB,)
    return shapes


def make_params(seed=SEED):
    """Deterministic float32 parameters (uniform, scaled by fan-in; forget bias 1)."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in param_shapes().items():
        if name.endswith("_bias"):
            values = np.zeros(shape)
            if name.endswith("i2h_bias"):
                values[HIDDEN : 2 * HIDDEN] = 1.0  # MXNet's LSTMBias(forget_bias=1)
        else:
            scale = np.sqrt(3.0 / shape[1]) if name != "embed_weight" else 0.1
            values = rng.uniform(-scale, scale, shape)
        params[name] = values.astype(np.float32)
    return params


def make_batches(seed=SEED, per_bucket=BATCHES_PER_BUCKET, buckets=BUCKETS):
    """One epoch of ``(bucket, data, label)`` batches in a fixed shuffled order.

    Each sentence of a bucket of length ``T`` has between ``T - 9`` and ``T``
    tokens (Zipf-like word ids in 1..VOCAB-1), padded with INVALID_LABEL as
    BucketSentenceIter pads; the label is the data shifted left by one.
    Layout NT: data and label are ``(BATCH, T)`` float32.
    """
    rng = np.random.default_rng(seed + 1)
    batches = []
    for bucket in buckets:
        for _ in range(per_bucket):
            data = np.full((BATCH, bucket), INVALID_LABEL, dtype=np.float32)
            lengths = rng.integers(max(bucket - 9, 2), bucket + 1, BATCH)
            for row, length in enumerate(lengths):
                words = np.minimum(rng.zipf(1.2, length), VOCAB - 1)
                data[row, :length] = words
            label = np.full_like(data, INVALID_LABEL)
            label[:, :-1] = data[:, 1:]
            batches.append((bucket, data, label))
    order = rng.permutation(len(batches))
    return [batches[i] for i in order]


def save_inputs(path, params, batches):
    """Write the parameters and an epoch of batches to ``path`` (.npz) for the workers.

    NumPy's random streams for ``zipf``/``permutation`` differ between NumPy
    versions, so every implementation reads the inputs one process made.
    """
    arrays = {"param:" + name: value for name, value in params.items()}
    for index, (_, data, label) in enumerate(batches):
        arrays[f"data:{index:03d}"] = data
        arrays[f"label:{index:03d}"] = label
    np.savez(path, **arrays)


def load_inputs(path):
    """``(params, batches)`` as ``save_inputs`` wrote them."""
    with np.load(path) as saved:
        params = {k[6:]: saved[k] for k in saved.files if k.startswith("param:")}
        count = sum(1 for k in saved.files if k.startswith("data:"))
        batches = []
        for index in range(count):
            data, label = saved[f"data:{index:03d}"], saved[f"label:{index:03d}"]
            batches.append((data.shape[1], data, label))
    return params, batches


def largest_only(batches):
    """As many batches as ``batches``, all of the largest bucket (for the memory baseline)."""
    largest = [b for b in batches if b[0] == max(BUCKETS)]
    return [largest[i % len(largest)] for i in range(len(batches))]


def tokens(batches):
    """Token positions computed (batch x bucket length, padding included)."""
    return sum(data.size for _, data, _ in batches)


# -- the symbol, with the mx.sym API of rebind or MXNet -----------------------------------


def lm_symbol(mx, seq_len, layout="NTC", use_cells=None):
    """The example's ``sym_gen(seq_len)`` symbol: ``(symbol, data_names, label_names)``.

    With ``use_cells`` (default: when ``mx.rnn.LSTMCell`` exists) the layers
    are ``mx.rnn.SequentialRNNCell`` of ``LSTMCell`` unrolled as the example
    does; otherwise the same graph is written out node by node.
    """
    if use_cells is None:
        use_cells = hasattr(getattr(mx, "rnn", None), "LSTMCell")
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data=data, input_dim=VOCAB, output_dim=EMBED, name="embed")
    if layout == "TNC":
        embed = mx.sym.swapaxes(embed, dim1=0, dim2=1)
    if use_cells:
        stack = mx.rnn.SequentialRNNCell()
        for layer in range(LAYERS):
            stack.add(mx.rnn.LSTMCell(num_hidden=HIDDEN, prefix=f"lstm_l{layer}_"))
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, layout=layout, merge_outputs=True)
    else:
        outputs = _unrolled_layers(mx, embed, seq_len, layout)
    if layout == "TNC":
        outputs = mx.sym.swapaxes(outputs, dim1=0, dim2=1)
    pred = mx.sym.Reshape(outputs, shape=(-1, HIDDEN))
    pred = mx.sym.FullyConnected(data=pred, num_hidden=VOCAB, name="pred")
    label = mx.sym.Reshape(label, shape=(-1,))
    pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
    return pred, ("data",), ("softmax_label",)


def _unrolled_layers(mx, inputs, seq_len, layout):
    """What SequentialRNNCell([LSTMCell] * LAYERS).unroll(merge_outputs=True) builds."""
    axis = layout.find("T")
    steps = list(mx.sym.SliceChannel(inputs, axis=axis, num_outputs=seq_len, squeeze_axis=1))
    for layer in range(LAYERS):
        steps = _lstm_layer(mx, steps, f"lstm_l{layer}_")
    steps = [mx.sym.expand_dims(step, axis=axis) for step in steps]
    return mx.sym.Concat(*steps, dim=axis)


def _lstm_layer(mx, steps, prefix):
    sym, gates = mx.sym, 4 * HIDDEN
    i2h_w, i2h_b = sym.Variable(prefix + "i2h_weight"), sym.Variable(prefix + "i2h_bias")
    h2h_w, h2h_b = sym.Variable(prefix + "h2h_weight"), sym.Variable(prefix + "h2h_bias")
    h = sym.zeros(shape=(0, HIDDEN), name=prefix + "begin_state_0", __layout__="NC")
    c = sym.zeros(shape=(0, HIDDEN), name=prefix + "begin_state_1", __layout__="NC")
    outputs = []
    for t, x in enumerate(steps):
        name = f"{prefix}t{t}_"
        i2h = sym.FullyConnected(x, i2h_w, i2h_b, num_hidden=gates, name=name + "i2h")
        h2h = sym.FullyConnected(h, h2h_w, h2h_b, num_hidden=gates, name=name + "h2h")
        parts = sym.SliceChannel(i2h + h2h, num_outputs=4, name=name + "slice")
        in_gate = sym.Activation(parts[0], act_type="sigmoid", name=name + "i")
        forget = sym.Activation(parts[1], act_type="sigmoid", name=name + "f")
        transform = sym.Activation(parts[2], act_type="tanh", name=name + "c")
        out_gate = sym.Activation(parts[3], act_type="sigmoid", name=name + "o")
        c = sym.elemwise_add(forget * c, in_gate * transform, name=name + "state")
        h = sym.elemwise_mul(out_gate, sym.Activation(c, act_type="tanh"), name=name + "out")
        outputs.append(h)
    return outputs


def cross_entropy(prob, label):
    """Mean cross-entropy of the softmax output ``prob`` (rows) at ``label`` (float ids)."""
    prob = np.asarray(prob).reshape(-1, VOCAB)
    picked = prob[np.arange(prob.shape[0]), np.asarray(label).reshape(-1).astype(np.int64)]
    return float(-np.mean(np.log(np.maximum(picked.astype(np.float64), 1e-30))))
