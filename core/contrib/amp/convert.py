"""The graph rewrite behind ``convert_symbol``: MXNet's ReducePrecision pass, on rebind's graph.

Nodes are copied in topological order. Each copied output entry is known to
be float32 (``fp32``), low precision (``low``), or unknown. An operator of the
low-precision list gets ``amp_cast`` to float16 on its inputs, one of the
float32 list gets ``amp_cast`` to float32, one that needs one type across its
inputs gets casts to the widest known type, or ``amp_multicast`` when a type
is unknown. A cast of one entry to one dtype is made once and shared. The
outputs of the whole graph leave in float32. Names follow MXNet's:
``<node>_<output>_amp_cast_<dtype>`` and ``<node>_<output>_amp_multicast``.
"""

import attrs

from ... import registry
from ...symbol import Symbol
from ...symbol.graph import Node, topological_order

__all__ = ["Plan", "reduce_precision"]

# operators MXNet registers without output names: their casts are named by output index
# (recorded with tests/recording/record_amp.py; see output_suffixes there)
INDEX_SUFFIX_OPS = frozenset(
    """
    BlockGrad ElementWiseSum Flatten Reshape _Div _DivScalar _Equal _EqualScalar _Greater
    _GreaterEqualScalar _GreaterScalar _Greater_Equal _Lesser _LesserEqualScalar _LesserScalar
    _Lesser_Equal _LogicalAndScalar _LogicalOrScalar _LogicalXorScalar _Logical_And _Logical_Or
    _Logical_Xor _Maximum _MaximumScalar _Minimum _MinimumScalar _Minus _MinusScalar _Mod
    _ModScalar _Mul _MulScalar _NotEqualScalar _Not_Equal _PlusScalar _RMinusScalar _RModScalar
    _copy _copyto _cvimread _div _div_scalar _equal _equal_scalar _grad_add _greater
    _greater_equal _greater_equal_scalar _greater_scalar _identity_with_attr_like_rhs _lesser
    _lesser_equal _lesser_equal_scalar _lesser_scalar _logical_and _logical_and_scalar
    _logical_or _logical_or_scalar _logical_xor _logical_xor_scalar _maximum _maximum_scalar
    _minimum _minimum_scalar _minus _minus_scalar _mod _mod_scalar _mul _mul_scalar _not_equal
    _not_equal_scalar _plus_scalar _random_pdf_dirichlet _random_pdf_exponential
    _random_pdf_gamma _random_pdf_generalized_negative_binomial _random_pdf_negative_binomial
    _random_pdf_normal _random_pdf_poisson _random_pdf_uniform _ravel_multi_index _rminus_scalar
    _rmod_scalar _sample_multinomial _scatter_elemwise_div _scatter_minus_scalar
    _scatter_plus_scalar _set_value _shuffle _sub _unravel_index abs add_n arccosh arcsinh
    arctan argmax argmax_channel argmin batch_dot broadcast_add broadcast_axes broadcast_axis
    broadcast_div broadcast_equal broadcast_greater broadcast_greater_equal broadcast_lesser
    broadcast_lesser_equal broadcast_like broadcast_logical_and broadcast_logical_or
    broadcast_logical_xor broadcast_maximum broadcast_minimum broadcast_minus broadcast_mod
    broadcast_mul broadcast_not_equal broadcast_plus broadcast_sub broadcast_to cbrt ceil cos
    degrees diag dot elemwise_div elemwise_mul elemwise_sub erf fix flatten floor gather_nd
    hard_sigmoid identity logical_not max max_axis min min_axis negative ones_like radians
    random_pdf_dirichlet random_pdf_exponential random_pdf_gamma
    random_pdf_generalized_negative_binomial random_pdf_negative_binomial random_pdf_normal
    random_pdf_poisson random_pdf_uniform ravel_multi_index relu reshape reshape_like rint round
    sample_multinomial shape_array shuffle sigmoid sign sin size_array slice_like softsign sort
    sqrt squeeze stack stop_gradient tanh transpose trunc unravel_index where zeros_like
""".split()
)


@attrs.define
class Plan:
    """What to cast: operator name sets, conditions, exclusions (see ``reduce_precision``)."""

    target: str
    low_ops: frozenset
    fp32_ops: frozenset
    widest_ops: frozenset
    conditional: dict  # op -> {param: [values]}
    excluded: frozenset
    data_names: frozenset
    cast_optional_params: bool


class _Rewrite:
    """The state of one pass: copies of nodes and the typed entries known so far."""

    def __init__(self, plan):
        self.plan = plan
        self.mirror = {}  # id(old node) -> new node
        self.typed = {"float32": {}, plan.target: {}}  # dtype -> {old entry key: new entry}

    def entry(self, child, index):
        """The copy of entry (child, index), uncast."""
        return (self.mirror[id(child)], index)

    def suffix(self, child, index):
        """MXNet's name part for output ``index`` of ``child`` in cast names."""
        if child.op is None:
            return ""
        if INDEX_SUFFIX_OPS.intersection((child.op.name, *child.op.aliases)):
            return f"_{index}"
        return "_" + child.output_suffixes()[index]

    def cast(self, child, index, dtype, consumer):
        """Add an amp_cast of entry (child, index) to ``dtype`` and feed it to ``consumer``."""
        name = f"{child.name}{self.suffix(child, index)}_amp_cast_{dtype}"
        node = Node(_op("amp_cast"), name, {"dtype": dtype}, [self.entry(child, index)])
        self.typed[dtype][(id(child), index)] = (node, 0)
        if consumer is not None:
            consumer.inputs.append((node, 0))
        return (node, 0)

    def known(self, child, index):
        """The dtype already settled for entry (child, index), or None."""
        key = (id(child), index)
        return next((dtype for dtype, table in self.typed.items() if key in table), None)

    def mark_outputs(self, node, new, dtypes):
        """Record the outputs of ``node`` whose dtype is settled (float32 or the target)."""
        for index, dtype in enumerate(dtypes):
            if dtype in self.typed:
                self.typed[dtype][(id(node), index)] = (new, index)


def _op(name):
    return registry.lookup("operators", name)


def _mutable(node):
    """Input positions an op writes in place (aux states): never cast."""
    if node.op is None:
        return set()
    start = len(node.argument_names())
    return set(range(start, start + len(node.aux_names())))


def _infer_first(node, dtype):
    """(input dtypes, output dtypes) of ``node`` with input 0 of ``dtype``; None if it fails."""
    n_args = len(node.argument_names())
    known = [dtype] + [None] * (len(node.inputs) - 1)
    try:
        ins, outs, auxs = node.op.infer_types(node.params, known[:n_args], None, known[n_args:])
    except Exception:  # noqa: BLE001 - an op refusing the dtype simply stays unknown
        return None
    return [None if t is None else str(t) for t in (*ins, *auxs)], [
        None if t is None else str(t) for t in outs
    ]


def _visit_fp32(rw, node, new):
    rw.mark_outputs(node, new, ["float32"] * node.num_outputs)
    table = rw.typed["float32"]
    for child, index in node.inputs:
        if (id(child), index) in table:
            new.inputs.append(table[(id(child), index)])
        elif child.op is None:
            new.inputs.append(rw.entry(child, index))  # variables are float32 already
        else:
            rw.cast(child, index, "float32", new)


def _visit_low(rw, node, new):
    target, plan = rw.plan.target, rw.plan
    inferred = _infer_first(node, target)
    in_types = inferred[0] if inferred else [None] * len(node.inputs)
    if inferred:
        rw.mark_outputs(node, new, inferred[1])
    table, mutable = rw.typed[target], _mutable(node)
    for position, (child, index) in enumerate(node.inputs):
        key = (id(child), index)
        optional = (
            plan.cast_optional_params and child.op is None and child.name not in plan.data_names
        )
        if key in table:
            new.inputs.append(table[key])
        elif optional or position in mutable or in_types[position] not in (target, None):
            new.inputs.append(rw.entry(child, index))
            if plan.cast_optional_params and child.op is None:
                table[key] = rw.entry(child, index)
        else:
            rw.cast(child, index, target, new)


def _visit_widest(rw, node, new):
    kinds = [rw.known(child, index) for child, index in node.inputs]
    if None in kinds:
        first, index = node.inputs[0]
        name = f"{first.name}{rw.suffix(first, index)}_amp_multicast"
        count = len(node.inputs)
        multicast = Node(
            _op("amp_multicast"),
            name,
            {"num_outputs": str(count)},
            [rw.entry(child, i) for child, i in node.inputs],
        )
        new.inputs.extend((multicast, i) for i in range(count))
        return
    dtype = "float32" if "float32" in kinds else rw.plan.target
    rw.mark_outputs(node, new, [dtype] * node.num_outputs)
    for child, index in node.inputs:
        key = (id(child), index)
        if key in rw.typed[dtype]:
            new.inputs.append(rw.typed[dtype][key])
        else:
            rw.cast(child, index, dtype, new)


def _visit_other(rw, node, new):
    if node.inputs:
        dtype = rw.known(*node.inputs[0])
        inferred = _infer_first(node, dtype) if dtype else None
        if inferred:
            rw.mark_outputs(node, new, inferred[1])
    new.inputs.extend(rw.entry(child, index) for child, index in node.inputs)


def _conditional(plan, node):
    wanted = plan.conditional.get(node.op.name, {})
    return any(node.attrs.get(param) in values for param, values in wanted.items())


def _visit(rw, node):
    plan, name = rw.plan, node.op.name if node.op is not None else None
    new = Node(node.op, node.name, node.attrs, [])
    if (name in plan.fp32_ops) or node.name in plan.excluded:
        _visit_fp32(rw, node, new)
    elif name in plan.low_ops:
        _visit_low(rw, node, new)
    elif name in plan.widest_ops:
        _visit_widest(rw, node, new)
    elif name is not None and _conditional(plan, node):
        _visit_conditional(rw, node, new)
    else:
        _visit_other(rw, node, new)
    rw.mirror[id(node)] = new


def _visit_conditional(rw, node, new):
    rw.mark_outputs(node, new, ["float32"] * node.num_outputs)
    table, mutable = rw.typed["float32"], _mutable(node)
    for position, (child, index) in enumerate(node.inputs):
        if (id(child), index) in table:
            new.inputs.append(table[(id(child), index)])
        elif position in mutable:
            new.inputs.append(rw.entry(child, index))
        else:
            rw.cast(child, index, "float32", new)


def reduce_precision(symbol, plan):
    """A new Symbol: ``symbol`` with the casts ``plan`` asks for (the input is unchanged)."""
    rw = _Rewrite(plan)
    for node in topological_order(symbol._heads):
        _visit(rw, node)
    heads = []
    for node, index in symbol._heads:
        settled = rw.typed["float32"].get((id(node), index))
        heads.append(settled if settled else rw.cast(node, index, "float32", None))
    return Symbol(heads)
