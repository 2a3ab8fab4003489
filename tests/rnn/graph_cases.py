"""Networks built from RNN cells, written once against an ``mx`` module (rebind or MXNet).

``make_mxnet_graphs.py`` runs these with MXNet 1.9.1 and records each
network's JSON in ``data/mxnet_graphs.json.gz``; ``test_mxnet_graphs.py``
builds them with rebind and expects the same text, byte for byte. Keep this
file valid Python 3.8 (MXNet's interpreter).
"""

HIDDEN = 4
STEPS = 3


def _flatten(value, into):
    if isinstance(value, (list, tuple)):
        for item in value:
            _flatten(item, into)
    else:
        into.append(value)
    return into


def _grouped(mx, outputs, states):
    """Outputs and (nested) states of an unroll as one symbol."""
    return mx.sym.Group(_flatten([outputs, states], []))


def _plain(mx, kind, layout, merge):
    if kind == "rnn":
        cell = mx.rnn.RNNCell(HIDDEN, activation="relu", prefix="r_")
    elif kind == "gru":
        cell = mx.rnn.GRUCell(HIDDEN)
    else:
        cell = mx.rnn.BidirectionalCell(
            mx.rnn.LSTMCell(HIDDEN, prefix="l_"), mx.rnn.GRUCell(HIDDEN, prefix="r_")
        )
    data = mx.sym.Variable("data")
    return _grouped(mx, *cell.unroll(STEPS, data, layout=layout, merge_outputs=merge))


def _list_inputs(mx, layout):
    cell = mx.rnn.LSTMCell(3)
    inputs = [mx.sym.Variable(f"s{i}") for i in range(STEPS)]
    return _grouped(mx, *cell.unroll(STEPS, inputs, layout=layout, merge_outputs=True))


def _variable_states(mx):
    cell = mx.rnn.LSTMCell(5, forget_bias=2.5)
    states = cell.begin_state(func=mx.sym.Variable)
    inputs = [mx.sym.Variable("a"), mx.sym.Variable("b")]
    return _grouped(mx, *cell.unroll(2, inputs, begin_state=states))


def _stack(mx, merge):
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(HIDDEN, prefix="a_"))
    stack.add(mx.rnn.DropoutCell(0.5, prefix="d_"))
    stack.add(mx.rnn.ResidualCell(mx.rnn.GRUCell(HIDDEN, prefix="b_")))
    zoned = mx.rnn.RNNCell(HIDDEN, prefix="c_")
    stack.add(mx.rnn.ZoneoutCell(zoned, zoneout_outputs=0.3, zoneout_states=0.2))
    return _grouped(mx, *stack.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=merge))


def _stack_stepped(mx):
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(HIDDEN, prefix="a_"))
    stack.add(mx.rnn.GRUCell(HIDDEN, prefix="b_"))
    states = stack.begin_state()
    output, states = stack(mx.sym.Variable("x0"), states)
    output, states = stack(output, states)
    return _grouped(mx, output, states)


def _zoneout_twice(mx):
    cell = mx.rnn.ZoneoutCell(mx.rnn.LSTMCell(3), zoneout_outputs=0.5)
    first = cell.unroll(2, mx.sym.Variable("data"))
    second = cell.unroll(2, mx.sym.Variable("more"))
    return _grouped(mx, first, second)


def _residual(mx, merge):
    cell = mx.rnn.ResidualCell(mx.rnn.GRUCell(HIDDEN))
    return _grouped(mx, *cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=merge))


def _dropout(mx, merge):
    cell = mx.rnn.DropoutCell(0.3)
    return _grouped(mx, *cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=merge))


def _fused(mx, mode, bidirectional, layout, next_state, merge):
    cell = mx.rnn.FusedRNNCell(
        5,
        num_layers=2,
        mode=mode,
        bidirectional=bidirectional,
        get_next_state=next_state,
        dropout=0.25,
    )
    return _grouped(
        mx, *cell.unroll(STEPS, mx.sym.Variable("data"), layout=layout, merge_outputs=merge)
    )


def _unfused(mx, mode, bidirectional, merge):
    fused = mx.rnn.FusedRNNCell(
        5, num_layers=2, mode=mode, bidirectional=bidirectional, dropout=0.25
    )
    cell = fused.unfuse()
    data = mx.sym.Variable("data")
    return _grouped(mx, *cell.unroll(STEPS, data, layout="TNC", merge_outputs=merge))


def _long_lm(mx):
    """More than 10 steps: MXNet writes the Concat's inputs one per line."""
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(HIDDEN, prefix="lstm_l0_"))
    embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=10, output_dim=3, name="embed")
    outputs, _ = stack.unroll(12, inputs=embed, merge_outputs=True)
    return outputs


def _conv(mx, kind):
    shape = (2, 3, 6, 5)
    if kind == "rnn":
        cell = mx.rnn.ConvRNNCell(shape, 4)
    elif kind == "lstm":
        cell = mx.rnn.ConvLSTMCell(
            shape,
            4,
            i2h_kernel=(3, 1),
            i2h_pad=(1, 0),
            h2h_kernel=(5, 3),
            h2h_dilate=(1, 2),
            activation="tanh",
            i2h_weight_initializer=mx.init.Xavier(),
        )
    else:
        cell = mx.rnn.ConvGRUCell(shape, 4, prefix="cg_")
    return _grouped(mx, *cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=True))


def cases():
    """{case name: function(mx) -> Symbol}."""
    found = {}
    for layout in ("NTC", "TNC"):
        for merge in (True, False, None):
            for kind in ("rnn", "gru", "bi"):
                found[f"{kind}_{layout}_{merge}"] = lambda mx, k=kind, lo=layout, m=merge: _plain(
                    mx, k, lo, m
                )
        found[f"list_inputs_{layout}"] = lambda mx, lo=layout: _list_inputs(mx, lo)
    found["variable_states"] = _variable_states
    for merge in (True, False, None):
        found[f"stack_{merge}"] = lambda mx, m=merge: _stack(mx, m)
        found[f"residual_{merge}"] = lambda mx, m=merge: _residual(mx, m)
        found[f"dropout_{merge}"] = lambda mx, m=merge: _dropout(mx, m)
    found["stack_stepped"] = _stack_stepped
    found["zoneout_twice"] = _zoneout_twice
    found["long_lm"] = _long_lm
    for kind in ("rnn", "lstm", "gru"):
        found[f"conv_{kind}"] = lambda mx, k=kind: _conv(mx, k)
    for mode in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        for bi in (False, True):
            found[f"fused_{mode}_{bi}_NTC_next"] = lambda mx, a=mode, b=bi: _fused(
                mx, a, b, "NTC", True, False
            )
            found[f"fused_{mode}_{bi}_TNC"] = lambda mx, a=mode, b=bi: _fused(
                mx, a, b, "TNC", False, None
            )
            found[f"unfused_{mode}_{bi}_merged"] = lambda mx, a=mode, b=bi: _unfused(mx, a, b, True)
            found[f"unfused_{mode}_{bi}_list"] = lambda mx, a=mode, b=bi: _unfused(mx, a, b, False)
    return found


def build(mx, name):
    """The JSON of case ``name`` built with ``mx``, its automatic names counted from 0."""
    with mx.name.NameManager():
        symbol = cases()[name](mx)
    return symbol.tojson()
