"""Making symbols: ``Variable``, one function per operator, and Python operators.

``mx.sym.FullyConnected(data=x, num_hidden=10, name='fc1')`` goes through
``create``: parameters become string attributes (as MXNet stores them),
inputs not supplied become variables named ``<node>_<input>``, unnamed nodes
get a name from the current NameManager, and the current AttrScope adds its
attributes.
"""

import numbers

import attrs
import numpy as np

from .. import registry
from ..ops import FLUENT_METHODS
from ..ops.base import positional_params, split_positional
from ..ops.params import to_attr_string
from .graph import Node
from .names import HIDDEN_KEYS, AttrScope, NameManager, stored_key
from .symbol import Symbol

__all__ = ["Variable", "var", "create", "op_function"]

_DTYPE_FLAGS = {
    "float32": 0,
    "float64": 1,
    "float16": 2,
    "uint8": 3,
    "int32": 4,
    "int8": 5,
    "int64": 6,
    "bool": 7,
    "int16": 8,
    "uint16": 9,
    "uint32": 10,
    "uint64": 11,
}


def _scoped_attrs(attr, what):
    """The current AttrScope's attributes updated with the user's ``attr`` (strings only)."""
    attr = dict(attr or {})
    for key, value in attr.items():
        if not isinstance(value, str):
            raise ValueError(f"{what}: attribute {key!r} must be a string, got {value!r}")
    return AttrScope.current.get({stored_key(k): v for k, v in attr.items()})


def _dtype_flag(dtype, name):
    dtype_name = np.dtype(dtype).name
    if dtype_name not in _DTYPE_FLAGS:
        raise TypeError(
            f"Variable {name!r}: dtype {dtype_name} has no MXNet type flag; "
            f"supported: {', '.join(_DTYPE_FLAGS)}"
        )
    return str(_DTYPE_FLAGS[dtype_name])


def Variable(
    name,
    attr=None,
    shape=None,
    lr_mult=None,
    wd_mult=None,
    dtype=None,
    init=None,
    stype=None,
    **kwargs,
):
    """A graph input named ``name`` (data, label, weight, ...)."""
    if not isinstance(name, str):
        raise TypeError(f"Variable name must be a string, got {name!r}")
    attrs = _scoped_attrs(attr, f"Variable {name!r}")
    if shape is not None:
        attrs["__shape__"] = str(shape)  # str() as MXNet: a list stays "[2, 3]"
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = _dtype_flag(dtype, name)
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:  # MXNet's integer id: default 0, row_sparse 1, csr 2
        from .infer_storage import stype_attr

        attrs["__storage_type__"] = stype_attr(stype)
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ValueError(f"Variable attribute {key!r} must start and end with '__'")
        attrs[key] = str(value)
    return Symbol([(Node(None, name, attrs), 0)])


var = Variable


def _single_entry(symbol, op_name, slot):
    if not isinstance(symbol, Symbol):
        raise TypeError(f"{op_name}: input {slot!r} must be a Symbol, got {type(symbol).__name__}")
    if len(symbol) != 1:
        raise ValueError(
            f"{op_name}: input {slot!r} has {len(symbol)} outputs; pass one of them (e.g. sym[0])"
        )
    return symbol._heads[0]


def create(op_name, hint, args, kwargs):
    """A symbol applying operator ``op_name`` (see module doc)."""
    op = registry.lookup("operators", op_name)
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    kwargs.pop("out", None)  # MXNet's generated symbol functions drop out= too
    # lr_mult=..., ctx_group=... given to an op are attributes, as in MXNet
    hidden = {stored_key(k): str(kwargs.pop(k)) for k in list(kwargs) if k in HIDDEN_KEYS}
    inputs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    positional, extra = split_positional(op, args, Symbol)
    kwargs.update(_positional_values(op, extra, kwargs))
    raw, params, slots = _parse(op, kwargs, inputs, len(positional))
    node_name = NameManager.current.get(name, hint)
    attrs = {**raw, **_scoped_attrs(attr, f"{op.name} {node_name!r}"), **hidden}
    op.parse(attrs)  # scope attributes meet the op's parser too: a plain key fails, as in MXNet
    entries = _assign_inputs(op.name, slots, positional, inputs, node_name, attrs)
    node = Node(op, node_name, attrs, entries)  # one node, whatever its number of outputs
    node.set_input_var_attrs()
    return Symbol([(node, i) for i in range(len(op.outputs(params)))])


def _parse(op, kwargs, inputs, n_positional):
    """(string attributes, parsed params, input slots); ``weight=None`` means "create it"."""
    unset = {k for k, v in kwargs.items() if v is None}
    raw = {k: to_attr_string(v) for k, v in kwargs.items() if k not in inputs and k not in unset}
    # a parameter explicitly None (slice_axis's end=None) is given, as "None"
    raw.update({k: "None" for k in sorted(unset & _parameter_names(op))})
    if op.variadic and op.variadic not in raw:
        raw[op.variadic] = str(n_positional + len(inputs))
    # any other None is an input left out (weight=None: create it; an optional
    # input such as sequence_length=None when the parameters do not use it)
    params = op.parse(raw)
    slots = (*op.arguments(params), *op.aux_states(params))
    return raw, params, slots


def _parameter_names(op):
    """The names the op's parameter class declares (none for open-ended ones)."""
    if not attrs.has(op.params):
        return set()
    return set(attrs.fields_dict(op.params))


def _positional_values(op, values, kwargs):
    """Parameters given positionally after the inputs (``Activation(x, 'relu')``)."""
    names = positional_params(op, values, kwargs)
    return dict(zip(names, values, strict=True))


def _assign_inputs(op_name, slots, positional, named, node_name, attrs):
    if len(positional) > len(slots):
        raise ValueError(
            f"{op_name}: {len(positional)} inputs given, it takes {len(slots)} ({', '.join(slots)})"
        )
    unknown = set(named) - set(slots)
    # MXNet's Compose ignores keyword symbols given to an operator without inputs
    # (mx.sym.random.randn(data=x) is _random_normal alone, its shape inferred)
    if unknown and slots:
        raise ValueError(
            f"{op_name}: unknown input {sorted(unknown)[0]!r}; inputs are {', '.join(slots)}"
        )
    entries = []
    for index, slot in enumerate(slots):
        if index < len(positional):
            if slot in named:
                raise ValueError(f"{op_name}: input {slot!r} given twice")
            entries.append(_single_entry(positional[index], op_name, slot))
        elif slot in named:
            entries.append(_single_entry(named[slot], op_name, slot))
        else:
            # an unnamed node (composed from an atomic symbol) names them by slot alone
            var_name = f"{node_name}_{slot}" if node_name else slot
            entries.append((Node(None, var_name, attrs), 0))
    return entries


def op_function(op_name, func_name):
    """The ``mx.sym.<func_name>`` function for an operator."""
    op = registry.lookup("operators", op_name)

    def creator(*args, **kwargs):
        return create(op_name, func_name.lower(), args, kwargs)

    creator.__name__ = creator.__qualname__ = func_name
    creator.__doc__ = f"{op.name}: {op.doc}" if op.doc else op.name
    return creator


# -- Python operators on symbols --------------------------------------------------

_BINARY = {  # python operator -> (op with a symbol, op with a scalar, reflected scalar op)
    "add": ("elemwise_add", "_plus", "_plus_scalar", "_plusscalar", "_plus_scalar", "_plusscalar"),
    "sub": (
        "elemwise_sub",
        "_minus",
        "_minus_scalar",
        "_minusscalar",
        "_rminus_scalar",
        "_rminusscalar",
    ),
    "mul": ("elemwise_mul", "_mul", "_mul_scalar", "_mulscalar", "_mul_scalar", "_mulscalar"),
    "truediv": ("elemwise_div", "_div", "_div_scalar", "_divscalar", "_rdiv_scalar", "_rdivscalar"),
    "pow": (
        "_power",
        "_power",
        "_power_scalar",
        "_powerscalar",
        "_rpower_scalar",
        "_rpower_scalar",
    ),
    "mod": ("_mod", "_mod", "_mod_scalar", "_modscalar", "_rmod_scalar", "_rmodscalar"),
}

_COMPARE = {
    "eq": ("_equal", "_equal_scalar"),
    "ne": ("_not_equal", "_not_equal_scalar"),
    "gt": ("_greater", "_greater_scalar"),
    "ge": ("_greater_equal", "_greater_equal_scalar"),
    "lt": ("_lesser", "_lesser_scalar"),
    "le": ("_lesser_equal", "_lesser_equal_scalar"),
}


def _binary(kind, reflected):
    sym_op, sym_hint, scalar_op, scalar_hint, rscalar_op, rscalar_hint = _BINARY[kind]

    def method(self, other):
        if isinstance(other, Symbol):
            lhs, rhs = (other, self) if reflected else (self, other)
            return create(sym_op, sym_hint, (lhs, rhs), {})
        if isinstance(other, numbers.Number):
            op, hint = (rscalar_op, rscalar_hint) if reflected else (scalar_op, scalar_hint)
            return create(op, hint, (self,), {"scalar": other})
        return NotImplemented

    return method


def _compare(kind):
    sym_op, scalar_op = _COMPARE[kind]

    def method(self, other):
        if isinstance(other, Symbol):
            return create(sym_op, sym_op, (self, other), {})
        if isinstance(other, numbers.Number):
            return create(scalar_op, scalar_op, (self,), {"scalar": other})
        return NotImplemented

    return method


def _install_operators():
    for kind in _BINARY:
        setattr(Symbol, f"__{kind}__", _binary(kind, reflected=False))
        setattr(Symbol, f"__r{kind}__", _binary(kind, reflected=True))
    Symbol.__div__, Symbol.__rdiv__ = Symbol.__truediv__, Symbol.__rtruediv__
    for kind in _COMPARE:
        setattr(Symbol, f"__{kind}__", _compare(kind))
    Symbol.__hash__ = object.__hash__
    Symbol.__neg__ = lambda self: create("_mul_scalar", "_mulscalar", (self,), {"scalar": -1.0})
    Symbol.__abs__ = lambda self: create("abs", "abs", (self,), {})
    Symbol.__call__ = _compose
    Symbol._gen_atomic_symbol = _gen_atomic_symbol
    methods = {**FLUENT_METHODS, "reshape": "Reshape", "astype": "Cast"}
    for method, op_name in methods.items():
        if method not in Symbol.__dict__:
            setattr(Symbol, method, _fluent(op_name, method))


def _fluent(op_name, method):
    def call(self, *args, **kwargs):
        return create(op_name, op_name.lower(), (self, *args), kwargs)

    call.__name__ = call.__qualname__ = method
    call.__doc__ = f"``mx.sym.{op_name}(self, ...)``."
    return call


def _compose(self, *args, **kwargs):
    """A copy of this symbol with input variables replaced by other symbols (``sym(data=x)``).

    Keyword names must be inputs of the symbol; positional symbols replace the
    arguments in ``list_arguments()`` order (MXNet accepts keywords only here).
    """
    name = kwargs.pop("name", None)
    if args and kwargs:
        raise TypeError("compose with either positional or keyword symbols, not both")
    if _is_atomic(self):
        return _compose_atomic(self, args, kwargs, name)
    clone = self.__deepcopy__(None)
    replace = _replacements(clone, args, kwargs)
    for node in clone._nodes():
        node.inputs = [
            replace.get(child.name, (child, i)) if child.op is None else (child, i)
            for child, i in node.inputs
        ]
    clone._heads = [
        replace.get(node.name, (node, i)) if node.op is None else (node, i)
        for node, i in clone._heads
    ]
    if name is not None and clone._node() is not None:
        clone._node().name = name
    return clone


def _gen_atomic_symbol(self):
    """MXNet's atomic symbol: this symbol's operator and attributes, not applied to inputs.

    It has no arguments and no name; calling it (``atomic(*inputs, name=...)``)
    applies the operator to ``inputs``, and inputs not given become variables
    (``<name>_<input>``, or the input's name alone without a name), as MXNet's
    AMP does to rebuild a node with cast inputs. Only a symbol whose outputs all
    come from one operator node has one.
    """
    node = self._node()
    if node is None or node.op is None:
        what = "a variable" if node is not None else f"{len(self._heads)} outputs of several nodes"
        raise ValueError(
            f"_gen_atomic_symbol: the symbol must be the outputs of one operator node, got "
            f"{what} ({', '.join(self.list_outputs())}); pick one node's symbol, e.g. from "
            "get_internals()"
        )
    atomic = Node(node.op, "", node.attrs)
    return Symbol([(atomic, i) for i in range(atomic.num_outputs)])


def _is_atomic(symbol):
    node = symbol._node()
    return node is not None and node.op is not None and not node.inputs and node.name == ""


def _compose_atomic(symbol, args, kwargs, name):
    """Apply an atomic symbol's operator to ``args`` or ``kwargs``: a new node named ``name``."""
    atomic = symbol._node()
    op, attrs = atomic.op, dict(atomic.attrs)
    slots = (*op.arguments(atomic.params), *op.aux_states(atomic.params))
    node_name = "" if name is None else name
    entries = _assign_inputs(op.name, slots, list(args), kwargs, node_name, attrs)
    node = Node(op, node_name, attrs, entries)
    node.set_input_var_attrs()
    return Symbol([(node, i) for i in range(node.num_outputs)])


def _replacements(symbol, args, kwargs):
    """{input variable name: entry replacing it} for ``_compose``."""
    inputs = symbol.list_inputs()
    if args:
        arguments = symbol.list_arguments()
        if len(args) > len(arguments):
            raise ValueError(
                f"compose: {len(args)} symbols given for {len(arguments)} arguments "
                f"({', '.join(arguments)})"
            )
        kwargs = dict(zip(arguments, args, strict=False))
    unknown = sorted(set(kwargs) - set(inputs))
    if unknown:
        raise ValueError(
            f"compose: {unknown[0]!r} is not an input of the symbol; inputs are {', '.join(inputs)}"
        )
    return {n: _single_entry(s, "compose", n) for n, s in kwargs.items()}


_install_operators()
