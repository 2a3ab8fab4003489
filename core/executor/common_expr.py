"""Common-expression elimination, MXNet's first graph pass, for ``get_optimized_symbol``.

MXNet 1.9's executor merges operator nodes that apply the same operator, with
the same attributes, to the same inputs (``MXNET_ELIMINATE_COMMON_EXPR``, on
by default, read at bind), and repeats until nothing merges. Graph outputs
that end up as the same entry get ``_copy`` nodes (``<node>_<k>_copy``) so
each output stays a distinct array. ``Executor.get_optimized_symbol``
returns that graph. The merge is exact (same inputs, same deterministic
computation), so rebind computes the bound graph as planned and shows the
merged one; nodes that draw random numbers, keep state or update their
inputs are never merged, as in MXNet.
"""

import os

from .. import registry
from ..symbol.graph import Node, topological_order
from ..symbol.symbol import Symbol

__all__ = ["enabled", "eliminate_common_expr"]

ENV_VAR = "MXNET_ELIMINATE_COMMON_EXPR"

# MXNet's ops with a random resource, an op state or mutated inputs (never equal)
_NEVER_MERGED = frozenset({"Dropout", "RNN", "Custom", "_shuffle", "_sample_unique_zipfian"})
_RANDOM_PREFIXES = ("_random_", "_sample_", "_image_random_")


def enabled():
    """Whether binding now eliminates common expressions (MXNet's default: yes)."""
    return os.environ.get(ENV_VAR, "1").strip() not in ("0", "false", "False")


def _mergeable(node):
    """Whether ``node`` may stand for an equal node: deterministic, stateless, not mutating."""
    op = node.op
    if op is None or op.name in _NEVER_MERGED or "_update" in op.name:
        return False
    if op.name.startswith(_RANDOM_PREFIXES) and not op.name.startswith("_random_pdf_"):
        return False
    if op.name == "LeakyReLU" and node.attrs.get("act_type") == "rrelu":
        return False
    # aux states (BatchNorm's moving statistics) are updated in place
    return not op.aux_states(node.params)


def _equal(first, second):
    return (
        first.op is second.op
        and first.attrs == second.attrs
        and _mergeable(first)
        and _mergeable(second)
    )


def _common_nodes(heads):
    """``{id(replaced): src}`` for nodes equal to an earlier node with the same inputs."""
    groups = {}
    for node in topological_order(heads):
        if node.inputs:
            key = tuple((id(child), index) for child, index in node.inputs)
            groups.setdefault(key, []).append(node)
    replaced = {}
    for group in groups.values():
        for i, src in enumerate(group):
            if id(src) in replaced:
                continue
            for other in group[i + 1 :]:
                if id(other) not in replaced and _equal(src, other):
                    replaced[id(other)] = src
    return replaced


def _copy_duplicate_outputs(heads):
    """Give each repeated output entry its own ``_copy`` node, named as MXNet names it."""
    copy_op, seen, result = registry.lookup("operators", "_copy"), {}, []
    for node, index in heads:
        key = (id(node), index)
        if key not in seen:
            seen[key] = 0
            result.append((node, index))
            continue
        copy = Node(copy_op, f"{node.name}_{seen[key]}_copy", {}, [(node, index)])
        seen[key] += 1
        result.append((copy, 0))
    return result


def eliminate_common_expr(symbol):
    """A copy of ``symbol`` with equal nodes merged, passes repeated until none merge."""
    heads = symbol.__deepcopy__(None)._heads
    while True:
        replaced = _common_nodes(heads)
        if not replaced:
            return Symbol(heads)
        for node in topological_order(heads):
            node.inputs = [(replaced.get(id(c), c), i) for c, i in node.inputs]
        heads = _copy_duplicate_outputs([(replaced.get(id(n), n), i) for n, i in heads])
