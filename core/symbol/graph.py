"""The graph under a Symbol: nodes, output entries, and walking them.

A ``Node`` is a variable (``op is None``) or one operator application. An
entry ``(node, index)`` names one output of a node. A Symbol is a list of
entries (its heads). Everything here is plain data plus traversal; the
operator library is consulted only through ``node.op`` (an OpDef).
"""

__all__ = ["Node", "topological_order", "aux_variables", "without_amp_casts"]


class Node:
    """One graph node: a variable, or an operator with its attributes and inputs."""

    __slots__ = ("op", "name", "attrs", "inputs", "_params")

    def __init__(self, op, name, attrs=None, inputs=()):
        self.op = op  # an OpDef, or None for a variable
        self.name = name
        self.attrs = dict(attrs or {})  # every value a string, as in MXNet's JSON
        self.inputs = list(inputs)  # [(Node, output index)]
        self._params = None

    @property
    def is_variable(self):
        return self.op is None

    @property
    def params(self):
        """The op's parsed parameters (cached; reset by ``set_attr``)."""
        if self._params is None and self.op is not None:
            self._params = self.op.parse(self.attrs)
        return self._params

    def set_attr(self, key, value):
        self.attrs[key] = value
        self._params = None

    def update_attrs(self, attrs):
        """Set several attributes; an operator re-parses them and, on error, keeps the old ones."""
        previous = dict(self.attrs)
        self.attrs.update(attrs)
        self._params = None
        if self.op is not None:
            try:
                self._params = self.op.parse(self.attrs)
            except Exception:
                self.attrs = previous
                raise

    def set_input_var_attrs(self):
        """Give variable inputs the attributes the op sets on them, where absent.

        MXNet's FSetInputVarAttrOnCompose: BatchNorm's moving statistics get
        their ``__init__``.
        """
        wanted = self.op.input_var_attrs(self.params) if self.op.input_var_attrs else {}
        slots = (*self.argument_names(), *self.aux_names())
        for slot, (child, _) in zip(slots, self.inputs, strict=False):
            if child.op is None:
                for key, value in wanted.get(slot, {}).items():
                    child.attrs.setdefault(key, value)

    def output_suffixes(self):
        return ("",) if self.op is None else self.op.outputs(self.params)

    @property
    def num_outputs(self):
        return len(self.output_suffixes())

    def output_name(self, index):
        """MXNet's name of output ``index``: the variable's name, or ``<node>_<suffix>``.

        A node without a name (an atomic symbol's) names its outputs by suffix alone.
        """
        if self.op is None:
            return self.name
        suffix = self.output_suffixes()[index]
        return f"{self.name}_{suffix}" if self.name else suffix

    def argument_names(self):
        return self.op.arguments(self.params)

    def aux_names(self):
        return self.op.aux_states(self.params)

    def __repr__(self):
        kind = "Variable" if self.op is None else self.op.name
        return f"<Node {kind} {self.name}>"


def topological_order(heads):
    """Nodes reachable from ``heads``, each after its inputs (MXNet's DFS post-order)."""
    order, seen = [], set()
    for head, _ in heads:
        if id(head) in seen:
            continue
        stack = [(head, 0)]
        seen.add(id(head))
        while stack:
            node, position = stack.pop()
            if position < len(node.inputs):
                stack.append((node, position + 1))
                child = node.inputs[position][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(node)
    return order


def aux_variables(nodes):
    """The ids of variable nodes that feed an operator's auxiliary-state inputs."""
    aux = set()
    for node in nodes:
        if node.op is not None:
            first_aux = len(node.argument_names())
            for child, _ in node.inputs[first_aux:]:
                aux.add(id(child))
    return aux


_AMP_CASTS = ("amp_cast", "amp_multicast")


def without_amp_casts(heads):
    """Copies of the graph's nodes with amp_cast/amp_multicast inputs bypassed.

    MXNet's RemoveAmpCast: a node reading output ``i`` of such a cast reads
    the cast's input ``i`` instead; a cast that is itself a head stays.
    """
    clones = {}

    def resolve(node, index):
        while node.op is not None and node.op.name in _AMP_CASTS:
            node, index = node.inputs[index]
        return clones[id(node)], index

    for node in topological_order(heads):
        inputs = [resolve(child, i) for child, i in node.inputs]
        clones[id(node)] = Node(node.op, node.name, node.attrs, inputs)
    return [(clones[id(node)], index) for node, index in heads]
