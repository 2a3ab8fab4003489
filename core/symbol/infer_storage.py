"""Storage-type inference over a graph: MXNet's InferStorageType pass, forward and backward.

A variable's storage type comes from the array bound to it, from
``simple_bind(stype_dict=...)``, or from its ``__storage_type__`` attribute
(``mx.sym.Variable('w', stype='row_sparse')`` writes MXNet's integer id);
each operator's outputs get what ``ops.sparse_stypes`` says. The backward pass
gives each argument's gradient storage (what ``simple_bind`` allocates): an
entry used by several nodes gets row_sparse only if every contribution is
row_sparse (MXNet sums them with ElementWiseSum), else dense.
"""

from ..ops.sparse_grad_stypes import infer_backward_storage
from ..ops.sparse_stypes import DEFAULT, RSP, StorageTypeError, infer_storage
from .graph import topological_order
from .infer import arguments_and_aux

__all__ = [
    "STYPE_IDS",
    "grad_stypes",
    "infer_graph_storage",
    "infer_storage_type",
    "stype_of_attr",
    "variable_stypes",
]

STYPE_IDS = {"default": 0, "row_sparse": 1, "csr": 2}
_NAMES = {str(v): k for k, v in STYPE_IDS.items()}


def stype_attr(stype):
    """The ``__storage_type__`` value MXNet writes for ``stype``."""
    if stype not in STYPE_IDS:
        raise ValueError(f"{stype!r} is not a storage type; expected one of {sorted(STYPE_IDS)}")
    return str(STYPE_IDS[stype])


def stype_of_attr(node):
    """A variable node's storage type from its ``__storage_type__`` attribute (default)."""
    value = node.attrs.get("__storage_type__")
    if value is None or value == "-1":
        return DEFAULT
    return _NAMES.get(value, value if value in STYPE_IDS else DEFAULT)


def variable_stypes(symbol, given=None, complete=False):
    """Name -> storage type of every variable: ``given`` first, else its attribute.

    With ``complete`` (``simple_bind(stype_dict=...)``), as in MXNet, a variable
    neither given nor carrying ``__storage_type__`` is an error: MXNet reads the
    attributes as defaults only when no ``stype_dict`` is passed.
    """
    given = dict(given or {})
    nodes = topological_order(symbol._heads)
    variables = [n for n in nodes if n.op is None]
    unknown = [
        n.name
        for n in variables
        if complete and n.name not in given and "__storage_type__" not in n.attrs
    ]
    if unknown:
        listed = "\n".join(f"{name}: -1" for name in unknown)
        raise StorageTypeError(
            "InferStorageType pass cannot decide storage type for the following arguments "
            f"(-1 means unknown stype). Please consider providing them as inputs:\n{listed}\n"
            "(simple_bind's stype_dict must name every argument without a stype attribute)"
        )
    return {n.name: given.get(n.name) or stype_of_attr(n) for n in variables}


def infer_graph_storage(symbol, var_stypes, device_type="cpu"):
    """``(nodes, stypes, modes)``: entry (id(node), index) -> stype; id(node) -> mode."""
    nodes = topological_order(symbol._heads)
    stypes, modes = {}, {}
    for node in nodes:
        if node.op is None:
            stypes[(id(node), 0)] = var_stypes.get(node.name, DEFAULT)
            continue
        in_stypes = [stypes[(id(child), index)] for child, index in node.inputs]
        n_args = len(node.argument_names())
        outs, mode = infer_storage(
            node.op.name, node.params, in_stypes[:n_args], node.num_outputs, device_type
        )
        modes[id(node)] = mode
        for index, stype in enumerate(outs):
            stypes[(id(node), index)] = stype
    return nodes, stypes, modes


def infer_storage_type(symbol, device_type="cpu", **stypes):
    """``(arg_stypes, out_stypes, aux_stypes)`` of ``symbol`` given some variables' storage.

    The storage companion of ``Symbol.infer_type`` (MXNet 1.9.1 runs this pass
    inside ``bind`` only and has no Python call for it): variables not given
    use their ``stype`` attribute, else 'default'. Raises StorageTypeError
    (an MXNetError) where an operator has no kernel for what reaches it.
    """
    nodes, entries, _ = infer_graph_storage(symbol, variable_stypes(symbol, stypes), device_type)
    args, aux = arguments_and_aux(nodes)
    return (
        [entries[(id(n), 0)] for n in args],
        [entries[(id(n), i)] for n, i in symbol._heads],
        [entries[(id(n), 0)] for n in aux],
    )


def grad_stypes(symbol, nodes, stypes):
    """Argument name -> gradient storage type, by MXNet's backward inference rules."""
    contributions = {}  # entry -> list of gradient stypes reaching it
    head_entries = {(id(n), i) for n, i in symbol._heads}
    for node in reversed(nodes):
        if node.op is None:
            continue
        n_args = len(node.argument_names())
        ograd = _summed([*contributions.get((id(node), 0), [])])
        if (id(node), 0) in head_entries and not node.op.is_loss:
            ograd = stypes[(id(node), 0)]
        in_stypes = [stypes[(id(c), i)] for c, i in node.inputs[:n_args]]
        grads = infer_backward_storage(node.op.name, node.params, in_stypes, ograd)
        for (child, index), stype in zip(node.inputs[:n_args], grads, strict=False):
            contributions.setdefault((id(child), index), []).append(stype)
    return {n.name: _summed(contributions.get((id(n), 0), [])) for n in nodes if n.op is None}


def _summed(stypes):
    """The storage of a sum of gradients: row_sparse only if all are row_sparse."""
    if stypes and all(s == RSP for s in stypes):
        return RSP
    if len(stypes) == 1:
        return stypes[0]
    return DEFAULT
