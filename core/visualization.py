"""``mx.viz``: a network's layer table (``print_summary``) and its graph (``plot_network``).

Both read the symbol's JSON graph, the same one ``Symbol.tojson`` saves, and
follow MXNet 1.9's output to the character: the same columns, separators and
parameter-count rules in the table, the same node labels, colours, shapes and
edge labels in the Graphviz graph. MXNet's counting rules are rough and are
kept as they are, so a summary printed here equals the one MXNet prints (see
``print_summary`` for where they differ from the true parameter count).

``plot_network`` needs the ``graphviz`` Python package (``pip install rebind[viz]``);
rendering its result to a picture also needs Graphviz's ``dot`` program.
"""

import copy
import json
import re
import warnings

from .errors import RebindError, ShapeError
from .symbol import Symbol

__all__ = ["GraphvizMissingError", "plot_network", "print_summary"]

HEADER = ["Layer (type)", "Output Shape", "Param #", "Previous Layer"]

# MXNet's palette, one colour per family of operators
COLOURS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
OP_COLOUR = {
    "null": COLOURS[0],
    "Convolution": COLOURS[1],
    "FullyConnected": COLOURS[1],
    "Activation": COLOURS[2],
    "LeakyReLU": COLOURS[2],
    "BatchNorm": COLOURS[3],
    "Pooling": COLOURS[4],
    "Concat": COLOURS[5],
    "Flatten": COLOURS[5],
    "Reshape": COLOURS[5],
    "Softmax": COLOURS[6],
}
OTHER_COLOUR = COLOURS[7]

NODE_DEFAULTS = {
    "shape": "box",
    "fixedsize": "true",
    "width": "1.3",
    "height": "0.8034",
    "style": "filled",
}

# inputs hidden by hide_weights=True (and never drawn as nodes of their own)
WEIGHT_SUFFIXES = (
    "_weight",
    "_bias",
    "_beta",
    "_gamma",
    "_moving_var",
    "_moving_mean",
    "_running_var",
    "_running_mean",
)


class GraphvizMissingError(RebindError, ImportError):
    """plot_network was called but the optional ``graphviz`` package is not installed."""


def _digits(text):
    """The integers written in an attribute string such as ``"(5, 5)"``, as strings."""
    return re.findall(r"\d+", text)


def _check_symbol(symbol, caller):
    if not isinstance(symbol, Symbol):
        raise TypeError(
            f"{caller}: symbol must be a rebind Symbol, got {type(symbol).__name__}; "
            "build the network with mx.sym.* or load it with mx.sym.load"
        )


def _check_input_names(symbol, given, caller, what):
    """Refuses names that are not inputs of the symbol, listing the inputs it has."""
    inputs = symbol.list_arguments()
    unknown = [name for name in given if name not in inputs]
    if unknown:
        raise ShapeError(
            f"{caller}: {what} given for {unknown}, which are not inputs of the symbol; "
            f"its inputs are {inputs}"
        )


def _output_shapes(symbol, shape, caller):
    """Every internal output's name -> shape, inferred from the input shapes given."""
    _check_input_names(symbol, shape, caller, "shape")
    internals = symbol.get_internals()
    try:
        _, out_shapes, _ = internals._infer_shape_strict(**shape)
    except ValueError as error:
        raise ShapeError(
            f"{caller}: cannot infer the network's shapes from shape={shape!r}: {error}; "
            "give the shape of every data input (list them with symbol.list_arguments())"
        ) from error
    if out_shapes is None:
        raise ShapeError(f"{caller}: shape={shape!r} is incomplete; give every data input's shape")
    return dict(zip(internals.list_outputs(), out_shapes, strict=True))


def _output_types(symbol, dtype, caller):
    """Every internal output's name -> NumPy type, inferred from the input types given."""
    _check_input_names(symbol, dtype, caller, "dtype")
    internals = symbol.get_internals()
    _, out_types, _ = internals.infer_type(**dtype)
    if out_types is None:
        raise ShapeError(f"{caller}: dtype={dtype!r} is incomplete; give every data input's type")
    return dict(zip(internals.list_outputs(), out_types, strict=True))


def _output_key(node):
    """The name under which ``get_internals`` lists a node's (first) output."""
    return node["name"] if node["op"] == "null" else node["name"] + "_output"


def _joined(shape):
    """A shape without its batch axis, as MXNet writes it: ``20x24x24``."""
    return "x".join(str(size) for size in shape[1:])


# ---------------------------------------------------------------- print_summary


def _print_row(fields, positions):
    """One table row: each field cut or padded so the next starts at its position."""
    line = ""
    for field, end in zip(fields, positions, strict=False):
        line = (line + str(field))[:end]
        line += " " * (end - len(line))
    print(line)


def _previous_layers(node, nodes, heads, shape_dict):
    """The input names shown in 'Previous Layer', and the sum of their first non-batch axes.

    As in MXNet, a variable counts as a previous layer only when its index
    appears among the numbers of the first head entry (in practice: node 0, the
    first input), and only the channel axis of an input feeds the counts.
    """
    names, channels = [], 0
    for entry in node["inputs"]:
        source = nodes[entry[0]]
        if source["op"] == "null" and entry[0] not in heads:
            continue
        names.append(source["name"])
        key = _output_key(source)
        if shape_dict is not None and key in shape_dict:
            channels += int(shape_dict[key][1])
    return names, channels


def _layer_params(node, channels, shape_dict):
    """Parameters MXNet's print_summary counts for one layer (0 for kinds it does not know)."""
    op, attrs = node["op"], node.get("attrs", {})
    with_bias = attrs.get("no_bias") != "True"
    if op == "Convolution":
        filters = int(attrs["num_filter"])
        count = channels * filters // int(attrs.get("num_group", "1"))
        for size in _digits(attrs["kernel"]):
            count *= int(size)
        return count + (filters if with_bias else 0)
    if op == "FullyConnected":
        return (channels + (1 if with_bias else 0)) * int(attrs["num_hidden"])
    if op == "BatchNorm":
        # gamma and beta; the moving mean and variance are auxiliary states, not counted
        if shape_dict is None:
            return 0
        return 2 * int(shape_dict[node["name"] + "_output"][1])
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def _print_layer(index, nodes, heads, shape_dict, positions):
    """Prints one layer's row (and one more per extra previous layer); returns its count."""
    node = nodes[index]
    names, channels = [], 0
    if node["op"] != "null":
        names, channels = _previous_layers(node, nodes, heads, shape_dict)
    params = _layer_params(node, channels, shape_dict)
    key = _output_key(node)
    shown = shape_dict is not None and (node["op"] != "null" or index in heads)
    shape = _joined(shape_dict[key]) if shown and key in shape_dict else ""
    first = names[0] if names else ""
    _print_row([f"{node['name']}({node['op']})", shape, params, first], positions)
    for name in names[1:]:
        _print_row(["", "", "", name], positions)
    return params


def print_summary(symbol, shape=None, line_length=120, positions=[0.44, 0.64, 0.74, 1.0]):  # noqa: B006
    """Prints a table of the network's layers: output shape, parameter count, inputs.

    Args:
        symbol: the network.
        shape: optional dict input name -> shape (batch axis first); without it
            the Output Shape column stays empty and BatchNorm and the layers
            right after the inputs count fewer parameters.
        line_length: width of the table in characters.
        positions: where each column ends, as fractions of ``line_length``
            (when the last is at most 1) or as absolute character positions.

    The counts follow MXNet 1.9's rules, not the true sizes: a layer's input
    size is the first non-batch axis of its inputs (so a FullyConnected fed a
    4-d tensor counts its channels only), only the data input the graph starts
    with feeds a count, BatchNorm counts gamma and beta, Embedding
    ``input_dim * output_dim``, and every other operator (RNN included) 0.
    """
    _check_symbol(symbol, "print_summary")
    shape_dict = None if shape is None else _output_shapes(symbol, shape, "print_summary")
    graph = json.loads(symbol.tojson())
    nodes = graph["nodes"]
    heads = set(graph["heads"][0])  # MXNet's rule: the numbers of the first head entry
    if positions[-1] <= 1:
        positions = [int(line_length * fraction) for fraction in positions]
    print("_" * line_length)
    _print_row(HEADER, positions)
    print("=" * line_length)
    total = 0
    for index, node in enumerate(nodes):
        # variables are listed only as the graph's first node, as MXNet does
        if node["op"] == "null" and index > 0:
            continue
        total += _print_layer(index, nodes, heads, shape_dict, positions)
        print(("=" if index == len(nodes) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


# ---------------------------------------------------------------- plot_network


def _digraph_class():
    try:
        from graphviz import Digraph
    except ImportError as error:
        raise GraphvizMissingError(
            "plot_network draws with the graphviz Python package, which is not installed; "
            "install it with `pip install rebind[viz]` (or `pip install graphviz`), and "
            "Graphviz's `dot` program to render pictures"
        ) from error
    return Digraph


def _node_label(node):
    """The text MXNet writes in a node's box: the op and its key settings, or the name."""
    op, attrs = node["op"], node.get("attrs") or {}
    if op == "Convolution":
        kernel = "x".join(_digits(attrs["kernel"]))
        stride = "x".join(_digits(attrs["stride"])) if "stride" in attrs else "1"
        return f"Convolution\n{kernel}/{stride}, {attrs['num_filter']}"
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}"
    if op == "Activation":
        return f"Activation\n{attrs['act_type']}"
    if op == "LeakyReLU":
        return f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}"
    if op == "Pooling":
        kernel = "x".join(_digits(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_digits(attrs["stride"])) if "stride" in attrs else "1"
        return f"Pooling\n{attrs['pool_type']}, {kernel}/{stride}"
    if op == "Custom":
        return attrs["op_type"]
    return node["name"]


def _add_nodes(dot, nodes, node_attrs, hide_weights):
    """Adds one node per drawn graph node; returns the names of the hidden weights."""
    hidden = set()
    base = {**NODE_DEFAULTS, **node_attrs}
    for node in nodes:
        if node["op"] == "null" and node["name"].endswith(WEIGHT_SUFFIXES):
            # shown (as an edge to a bare, default-styled node) only when hide_weights=False
            if hide_weights:
                hidden.add(node["name"])
            continue
        attrs = copy.deepcopy(base)
        if node["op"] == "null":
            attrs["shape"] = "oval"
        attrs["fillcolor"] = OP_COLOUR.get(node["op"], OTHER_COLOUR)
        dot.node(name=node["name"], label=_node_label(node), **attrs)
    return hidden


def _edge_key(source):
    """The internal output an edge's label describes (MXNet: a multi-output op's last one)."""
    key = _output_key(source)
    attrs = source.get("attrs") or {}
    if source["op"] != "null" and "num_outputs" in attrs:
        key += str(int(attrs["num_outputs"]) - 1)
    return key


def _edge_label(source, shape_dict, type_dict):
    label = ""
    if shape_dict is not None:
        label = _joined(shape_dict[_edge_key(source)])
    if type_dict is not None:
        label += f"({type_dict[_edge_key(source)].__name__})"
    return label


def _add_edges(dot, nodes, hidden, shape_dict, type_dict):
    """One edge per drawn input, pointing from the layer back to its input."""
    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"]
        if node["op"] == "_contrib_BilinearResize2D":
            inputs = inputs[:1]  # its second input is a shape-like hint, not data
        for entry in inputs:
            source = nodes[entry[0]]
            if source["name"] in hidden:
                continue
            label = _edge_label(source, shape_dict, type_dict)
            dot.edge(
                tail_name=node["name"],
                head_name=source["name"],
                dir="back",
                arrowtail="open",
                label=label,
            )


def _warn_repeated_names(nodes):
    seen, repeated = set(), []
    for node in nodes:
        if node["name"] in seen and node["name"] not in repeated:
            repeated.append(node["name"])
        seen.add(node["name"])
    if repeated:
        warnings.warn(
            "There are multiple variables with the same name in your graph, this may result "
            "in cyclic graph. Repeated names: " + ",".join(repeated),
            RuntimeWarning,
            stacklevel=3,
        )


def plot_network(
    symbol,
    title="plot",
    save_format="pdf",
    shape=None,
    dtype=None,
    node_attrs={},  # noqa: B006 (MXNet's signature; never mutated here)
    hide_weights=True,
):
    """Draws the network as a ``graphviz.Digraph`` (render it with ``.render()`` or ``.pipe()``).

    Args:
        symbol: the network.
        title: the graph's name (and the default file name when rendered).
        save_format: the picture format ``render`` writes ("pdf", "png", "svg", ...).
        shape: optional dict input name -> shape; edges are then labelled with
            the shape (batch axis dropped) of the tensor they carry.
        dtype: optional dict input name -> NumPy type; appended to edge labels.
        node_attrs: Graphviz attributes that override the node defaults,
            e.g. ``{"shape": "oval", "fixedsize": "false"}``.
        hide_weights: leave out weight, bias and BatchNorm state inputs.

    Raises:
        GraphvizMissingError: the graphviz package is missing (an ImportError).
    """
    digraph = _digraph_class()
    _check_symbol(symbol, "plot_network")
    shape_dict = None if shape is None else _output_shapes(symbol, shape, "plot_network")
    type_dict = None if dtype is None else _output_types(symbol, dtype, "plot_network")
    nodes = json.loads(symbol.tojson())["nodes"]
    _warn_repeated_names(nodes)
    dot = digraph(name=title, format=save_format)
    hidden = _add_nodes(dot, nodes, node_attrs, hide_weights)
    _add_edges(dot, nodes, hidden, shape_dict, type_dict)
    return dot
