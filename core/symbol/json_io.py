"""Symbol JSON in MXNet's format, read and written byte for byte.

The writer reproduces the layout of MXNet 1.9.1's JSON writer: two-space
indentation, ``", "`` before each line break, objects of one key and short
arrays on one line (see reference/FORMATS.md, part (b)). The reader also
accepts older files (``attr``/``param`` keys, two-element input entries,
missing ``node_row_ptr``).
"""

import json

from .. import registry
from ..errors import FormatError, RebindError
from .graph import Node, topological_order
from .upgrade import CURRENT_VERSION, file_version, split_hidden, upgrade_node

__all__ = ["graph_to_json", "graph_from_json"]

MXNET_VERSION = CURRENT_VERSION


# -- writing --------------------------------------------------------------------


_ESCAPES = str.maketrans({"\r": "\\r", "\n": "\\n", "\\": "\\\\", "\t": "\\t", '"': '\\"'})


def _text(value):
    """A JSON string as dmlc's writer makes it: five escapes, every other character raw."""
    return '"' + value.translate(_ESCAPES) + '"'


def _inline(items):
    return "[" + ", ".join(items) + "]"


def _block(items, indent):
    """A multi-line container body in MXNet's style (each line ends with ', ')."""
    pad = " " * (indent + 2)
    return (", ".join("\n" + pad + item for item in items)) + "\n" + " " * indent


def _attrs_text(attrs, indent):
    pairs = [f"{_text(k)}: {_text(v)}" for k, v in sorted(attrs.items())]
    if len(pairs) == 1:
        return "{" + pairs[0] + "}"
    return "{" + _block(pairs, indent) + "}"


def _node_text(node, ids, versions, indent):
    fields = [
        f'"op": {_text("null" if node.op is None else node.op.name)}',
        f'"name": {_text(node.name)}',
    ]
    if node.attrs:
        fields.append(f'"attrs": {_attrs_text(node.attrs, indent + 2)}')
    entries = [
        f"[{ids[id(child)]}, {index}, {version}]"
        for (child, index), version in zip(
            node.inputs, _input_versions(node, versions), strict=True
        )
    ]
    fields.append(f'"inputs": {_array(entries, indent + 2)}')
    return "{" + _block(fields, indent) + "}"


def _input_versions(node, versions):
    """Entry versions: MXNet counts each mutation of a variable (an aux-state input)."""
    if node.op is None:
        return []
    first_aux = len(node.argument_names())
    result = []
    for position, (child, _) in enumerate(node.inputs):
        if position >= first_aux and child.op is None:
            versions[id(child)] = versions.get(id(child), 0) + 1
            result.append(versions[id(child)])
        else:
            result.append(0)
    return result


def _array(items, indent):
    """dmlc's writer puts an array of more than 10 items one item per line."""
    return _inline(items) if len(items) <= 10 else "[" + _block(items, indent) + "]"


def _int_array(values, indent):
    return _array([str(v) for v in values], indent)


def graph_to_json(heads):
    """The JSON text MXNet writes for a symbol with these head entries."""
    nodes = topological_order(heads)
    ids = {id(node): i for i, node in enumerate(nodes)}
    row_ptr = [0]
    for node in nodes:
        hidden = 0 if node.op is None else node.op.num_hidden(node.params)
        row_ptr.append(row_ptr[-1] + node.num_outputs + hidden)
    versions = {}
    sections = [
        '"nodes": [' + _block([_node_text(n, ids, versions, 4) for n in nodes], 2) + "]",
        f'"arg_nodes": {_int_array([ids[id(n)] for n in nodes if n.op is None], 2)}',
        f'"node_row_ptr": {_int_array(row_ptr, 2)}',
        '"heads": ' + _array([f"[{ids[id(n)]}, {i}, 0]" for n, i in heads], 2),
        f'"attrs": {{"mxnet_version": ["int", {MXNET_VERSION}]}}',
    ]
    return "{" + _block(sections, 0) + "}"


# -- reading --------------------------------------------------------------------


def graph_from_json(text, source="<json>"):
    """The head entries of the graph described by MXNet JSON ``text``."""
    try:
        document = json.loads(text, strict=False)  # MXNet writes control characters raw
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise FormatError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("nodes"), list):
        raise FormatError(f"{source}: a symbol file is an object with a 'nodes' list")
    nodes, version = [], file_version(document)
    for index, spec in enumerate(document["nodes"]):
        nodes.append(_read_node(spec, index, nodes, source, version))
    heads = document.get("heads")
    if not isinstance(heads, list) or not heads:
        raise FormatError(f"{source}: 'heads' must be a non-empty list of entries")
    return [_entry(entry, nodes, f"heads[{i}]", source) for i, entry in enumerate(heads)]


def _read_node(spec, index, nodes, source, version):
    where = f"{source}: node {index}"
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise FormatError(f"{where} must be an object with a string 'name'")
    op_name, name = spec.get("op", "null"), spec["name"]
    if not isinstance(op_name, str):
        raise FormatError(f"{where} ({name!r}): 'op' must be a string, got {op_name!r}")
    if not isinstance(spec.get("inputs", []), list):
        raise FormatError(f"{where} ({name!r}): 'inputs' must be a list of entries")
    attrs, plain_hidden = split_hidden(_read_attrs(spec, f"{where} ({name!r})"), version)
    inputs = [
        _entry(e, nodes, f"node {name!r} input {i}", source)
        for i, e in enumerate(spec["inputs"] if "inputs" in spec else [])
    ]
    if op_name == "null":
        if inputs:
            raise FormatError(f"{where} ({name!r}): a variable cannot have inputs")
        node = Node(None, name, attrs)
    else:
        node = Node(_operator(op_name, f"{where} ({name!r})"), name, attrs, inputs)
    try:
        upgrade_node(node, plain_hidden, version)
    except RebindError as exc:
        raise FormatError(f"{where} ({name!r}): {exc}") from None
    if node.op is not None:
        _check_node(node, where)
    return node


def _read_attrs(spec, where):
    attrs = {}
    for key in ("param", "attr", "attrs"):  # older files split attributes in two
        value = spec.get(key) or {}
        if not isinstance(value, dict):
            raise FormatError(f"{where}: {key!r} must be an object")
        attrs.update({str(k): str(v) for k, v in value.items()})
    return attrs


def _operator(op_name, where):
    try:
        return registry.lookup("operators", op_name)
    except RebindError as exc:
        raise FormatError(f"{where} uses operator {op_name!r}: {exc}") from None


def _check_node(node, where):
    try:
        expected = len(node.argument_names()) + len(node.aux_names())
    except RebindError as exc:
        raise FormatError(f"{where} ({node.name!r}): {exc}") from None
    if len(node.inputs) != expected:
        raise FormatError(
            f"{where} ({node.name!r}): {node.op.name} takes {expected} inputs "
            f"({', '.join((*node.argument_names(), *node.aux_names()))}), the file gives "
            f"{len(node.inputs)}"
        )


def _entry(entry, nodes, what, source):
    if not isinstance(entry, list) or len(entry) not in (2, 3):
        raise FormatError(f"{source}: {what} must be [node, output, version], got {entry!r}")
    node_id, index = entry[0], entry[1]
    if not isinstance(node_id, int) or not 0 <= node_id < len(nodes):
        raise FormatError(
            f"{source}: {what} refers to node {node_id!r}, which comes later "
            "or does not exist (nodes must be in topological order)"
        )
    node = nodes[node_id]
    if not isinstance(index, int) or not 0 <= index < node.num_outputs:
        raise FormatError(
            f"{source}: {what} refers to output {index!r} of {node.name!r}, "
            f"which has {node.num_outputs}"
        )
    return node, index
