"""Upgrading symbol JSON written by older MXNet versions, as MXNet's loader does.

A file records the MXNet version that wrote it (``attrs.mxnet_version``,
``major*10000 + minor*100 + patch``); a file without it counts as 0.8.0.
MXNet 1.9.1 upgrades an older graph on load, and so does rebind:

* older than 1.9.1: hidden keys written plainly become hidden
  (``lr_mult`` -> ``__lr_mult__``), and ``<input>_lr_mult`` on an operator
  moves to that input variable as ``__lr_mult__``;
* older than 0.9.0: auxiliary inputs were not stored; they are created as
  variables ``<node>_<input>`` carrying the node's attributes;
* older than 0.9.4: variable inputs get the attributes their operator sets on
  compose (BatchNorm's moving statistics get ``__init__``);
* older than 0.9.5: ``argmax``/``argmin`` with ``axis=-1`` meant "no axis".
"""

from .graph import Node
from .names import HIDDEN_KEYS

__all__ = ["CURRENT_VERSION", "file_version", "split_hidden", "upgrade_node"]

CURRENT_VERSION = 10901
_OLDEST = 800  # 0.8.0: files that do not say


def file_version(document):
    """The MXNet version number recorded in a parsed symbol file."""
    attrs = document.get("attrs")
    value = attrs.get("mxnet_version") if isinstance(attrs, dict) else None
    if isinstance(value, list) and len(value) == 2 and type(value[1]) is int:
        return value[1]
    return _OLDEST


def split_hidden(attrs, version):
    """(attrs, {key: value} of plainly written hidden keys to place after parsing)."""
    if version >= CURRENT_VERSION:
        return attrs, {}
    plain = {k: v for k, v in attrs.items() if _hidden_suffix(k) is not None}
    return {k: v for k, v in attrs.items() if k not in plain}, plain


def _hidden_suffix(key):
    """The hidden key ``key`` is (``lr_mult``) or ends with (``weight_lr_mult``), or None."""
    for hidden in HIDDEN_KEYS:
        if key == hidden or (key.endswith("_" + hidden) and len(key) > len(hidden) + 1):
            return hidden
    return None


def upgrade_node(node, plain_hidden, version):
    """Apply MXNet's upgrades for a file of ``version`` to a freshly read node."""
    _place_hidden(node, plain_hidden)
    if node.op is None:
        return
    if version < 900:
        _add_missing_inputs(node)
    if version < 904:
        node.set_input_var_attrs()
    if version < 905 and node.op.name in ("argmax", "argmin") and node.attrs.get("axis") == "-1":
        del node.attrs["axis"]
        node.update_attrs({})


def _place_hidden(node, plain_hidden):
    slots = () if node.op is None else (*node.argument_names(), *node.aux_names())
    for key, value in plain_hidden.items():
        hidden = _hidden_suffix(key)
        if key == hidden:
            node.attrs[f"__{hidden}__"] = value
            continue
        target = _input_variable(node, slots, key[: -len(hidden) - 1])
        if target is None:
            node.attrs[key] = value  # as MXNet: kept, and the op's parser decides
        else:
            target.attrs[f"__{hidden}__"] = value
    node.update_attrs({})


def _input_variable(node, slots, slot):
    if slot not in slots or slots.index(slot) >= len(node.inputs):
        return None
    child, _ = node.inputs[slots.index(slot)]
    return child if child.op is None else None


def _add_missing_inputs(node):
    slots = (*node.argument_names(), *node.aux_names())
    for slot in slots[len(node.inputs) :]:
        node.inputs.append((Node(None, f"{node.name}_{slot}", node.attrs), 0))
