"""Symbol: a list of output entries of a graph, with MXNet's Symbol API."""

import numbers
import warnings

from ..base import NotImplementedForSymbol
from ..errors import FormatError, ShapeError
from ..fileutil import write_atomic
from .graph import Node, topological_order, without_amp_casts
from .infer import arguments_and_aux, infer_graph_shapes, infer_graph_types, unresolved
from .json_io import graph_from_json, graph_to_json
from .names import HIDDEN_KEYS, stored_key

__all__ = ["Symbol", "load", "load_json", "Group"]


def _listed(attrs):
    """Attributes as MXNet lists them: hidden ones also under their plain name."""
    listed = dict(attrs)
    for key in HIDDEN_KEYS:
        if f"__{key}__" in attrs:
            listed[key] = attrs[f"__{key}__"]
    return listed


class Symbol:
    """One or more outputs of a graph of operators (``mx.sym.Symbol``)."""

    __slots__ = ("_heads", "__weakref__")

    def __init__(self, heads):
        self._heads = list(heads)

    # -- description ------------------------------------------------------------
    @property
    def name(self):
        """The name of this symbol's node; None for a group of several nodes."""
        node = self._node()
        return None if node is None else node.name

    def _node(self):
        """The node every output comes from (one, even for split's outputs), or None."""
        nodes = {id(node): node for node, _ in self._heads}
        return next(iter(nodes.values())) if len(nodes) == 1 else None

    def _nodes(self):
        return topological_order(self._heads)

    def list_arguments(self):
        """Names of the arguments (inputs that are not auxiliary states), in graph order."""
        return [n.name for n in arguments_and_aux(self._nodes())[0]]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (BatchNorm's moving statistics), in graph order."""
        return [n.name for n in arguments_and_aux(self._nodes())[1]]

    def list_inputs(self):
        """Names of every input variable, arguments and auxiliary states, in graph order."""
        return [n.name for n in self._nodes() if n.op is None]

    def list_outputs(self):
        """Names of the outputs: ``<node>_output`` and the like, or a variable's name."""
        return [node.output_name(index) for node, index in self._heads]

    def get_internals(self):
        """A symbol whose outputs are every output of every node, in graph order."""
        return Symbol([(n, i) for n in self._nodes() for i in range(n.num_outputs)])

    def get_children(self):
        """The inputs of this symbol's node(s) as one grouped symbol; None for a variable."""
        nodes = {id(node): node for node, _ in self._heads}
        inputs = [entry for node in nodes.values() for entry in node.inputs]
        return Symbol(inputs) if inputs else None

    def __bool__(self):
        """A symbol has no truth value until it is computed: NotImplementedForSymbol, as MXNet."""
        raise NotImplementedForSymbol(self.__bool__, "bool")

    def __len__(self):
        return len(self._heads)

    def __iter__(self):
        return (Symbol([entry]) for entry in self._heads)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if len(matches) != 1:
                found = "no" if not matches else "several"
                raise ValueError(f"{found} output named {index!r}; outputs are: {names}")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._heads[index])
        if not isinstance(index, numbers.Integral):
            raise TypeError(f"symbol index must be an int, a slice or a name, got {index!r}")
        if not -len(self._heads) <= index < len(self._heads):
            raise IndexError(f"output {index} out of range: the symbol has {len(self._heads)}")
        return Symbol([self._heads[index]])

    def __repr__(self):
        if self.name is not None:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(node.name for node, _ in self._heads)}]>"

    def __getstate__(self):
        return {"json": self.tojson()}

    def __setstate__(self, state):
        self._heads = graph_from_json(state["json"], source="<pickle>")

    # -- attributes -------------------------------------------------------------
    def _single_node(self, what):
        node = self._node()
        if node is None:
            raise ValueError(
                f"{what} needs a symbol of one node, this one groups "
                f"{len(self)} outputs of different nodes"
            )
        return node

    def attr(self, key):
        """Attribute ``key`` (or ``'name'``) of this symbol's node; None if absent or grouped."""
        node = self._node()
        if node is None:
            return None
        if key == "name":
            return node.name
        return node.attrs.get(key, node.attrs.get(stored_key(key)))

    def list_attr(self, recursive=False):
        """The attributes of this symbol's (first output's) node, hidden ones also as plain keys.

        ``recursive`` is MXNet's removed option: use ``attr_dict()``.
        """
        if recursive:
            raise DeprecationWarning(
                "list_attr(recursive=True) is gone in MXNet 1.x: use attr_dict()"
            )
        return _listed(self._heads[0][0].attrs)

    def attr_dict(self):
        """{node name: attributes} for every node that has attributes."""
        return {n.name: _listed(n.attrs) for n in self._nodes() if n.attrs}

    def _set_attr(self, **kwargs):
        """Set string attributes of this symbol's node; ``name=`` renames the node.

        An operator's parameters are parsed again, so a bad value raises
        ParamError and leaves the node unchanged.
        """
        node = self._single_node("_set_attr")
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"attribute {key!r} must be a string, got {value!r}")
        if "name" in kwargs:
            node.name = kwargs.pop("name")
        node.update_attrs({stored_key(k): v for k, v in kwargs.items()})

    # -- copies and JSON ----------------------------------------------------------
    def __copy__(self):
        return self.__deepcopy__(None)

    def __deepcopy__(self, memo):
        clones = {}
        for node in self._nodes():
            inputs = [(clones[id(child)], index) for child, index in node.inputs]
            clones[id(node)] = Node(node.op, node.name, node.attrs, inputs)
        return Symbol([(clones[id(node)], index) for node, index in self._heads])

    def tojson(self, remove_amp_cast=True):
        """The symbol in MXNet's JSON format, byte for byte as MXNet 1.9.1 writes it.

        As in MXNet, the amp_cast/amp_multicast nodes of a mixed-precision graph
        are left out unless ``remove_amp_cast=False``.
        """
        return graph_to_json(without_amp_casts(self._heads) if remove_amp_cast else self._heads)

    def save(self, fname, remove_amp_cast=True):
        """Write ``tojson(remove_amp_cast)`` to ``fname`` atomically."""
        write_atomic(fname, self.tojson(remove_amp_cast).encode("utf-8"))

    # -- inference ------------------------------------------------------------------
    def _given(self, args, kwargs, what):
        if args and kwargs:
            raise ValueError(f"{what}: pass shapes either positionally or by name, not both")
        if args:
            names = self.list_arguments()
            if len(args) > len(names):
                raise ValueError(f"{what}: {len(args)} values for {len(names)} arguments")
            kwargs = {n: v for n, v in zip(names, args, strict=False) if v is not None}
        unknown = set(kwargs) - set(self.list_inputs())
        if unknown:
            raise ValueError(
                f"{what}: {sorted(unknown)} are not inputs of this symbol; "
                f"inputs are {self.list_inputs()}"
            )
        return kwargs

    def _infer_shape(self, args, kwargs, partial, strict=True):
        given = {k: tuple(v) for k, v in self._given(args, kwargs, "infer_shape").items()}
        nodes, shapes = infer_graph_shapes(self._heads, given)
        if not partial:
            problem = unresolved(nodes, shapes, given)
            if problem is None:
                problem = self._unknown_argument(nodes, shapes, given)
            if problem is not None and strict:
                raise problem
            if problem is not None:
                self._warn_undecided(nodes, shapes, problem)
                return None, None, None
        args_, aux_ = arguments_and_aux(nodes)

        def shape_of(node, index=0):
            return tuple(shapes.get((id(node), index)) or ())

        return (
            [shape_of(n) for n in args_],
            [shape_of(n, i) for n, i in self._heads],
            [shape_of(n) for n in aux_],
        )

    def _unknown_argument(self, nodes, shapes, given):
        for node in nodes:
            if node.op is None and shapes.get((id(node), 0)) is None:
                return ShapeError(
                    f"cannot infer the shape of argument {node.name!r}; input shapes given: {given}"
                )
        return None

    @staticmethod
    def _warn_undecided(nodes, shapes, problem):
        """MXNet's warning when ``infer_shape`` cannot decide every shape, plus the first gap."""
        args_, _ = arguments_and_aux(nodes)
        unknown = [
            f"{n.name}: {tuple(shapes.get((id(n), 0)) or ())}"
            for n in args_
            if not shapes.get((id(n), 0)) or 0 in shapes[(id(n), 0)]
        ]
        warnings.warn(
            "Cannot decide shape for the following arguments (0s in shape means unknown "
            "dimensions). Consider providing them as input:\n\t"
            + "\n\t".join(unknown[:10] + (["..."] if len(unknown) > 10 else []))
            + f"\n({problem})",
            stacklevel=3,
        )

    def infer_shape(self, *args, **kwargs):
        """(argument shapes, output shapes, aux shapes) from some input shapes.

        As in MXNet, shapes that cannot all be inferred give ``(None, None,
        None)`` and a warning naming the arguments still unknown; shapes that
        conflict raise ShapeError naming the node, the argument and both shapes.
        """
        return self._infer_shape(args, kwargs, partial=False, strict=False)

    def _infer_shape_strict(self, *args, **kwargs):
        """``infer_shape`` for binding: shapes that cannot all be inferred raise ShapeError.

        The error names the first node and argument whose shape stays unknown
        and the shapes given, which is what a bind needs to report.
        """
        return self._infer_shape(args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        """Like ``infer_shape``, leaving unknown shapes as ``()`` or with 0 dims."""
        return self._infer_shape(args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        """(argument dtypes, output dtypes, aux dtypes) as NumPy types; float32 by default."""
        return self._infer_types(args, kwargs, "infer_type", unknown="float32")

    def infer_type_partial(self, *args, **kwargs):
        """As ``infer_type``, but a dtype nothing determines is None, as in MXNet."""
        return self._infer_types(args, kwargs, "infer_type_partial", unknown=None)

    def _infer_types(self, args, kwargs, what, unknown):
        import numpy as np

        given = {k: np.dtype(v).name for k, v in self._given(args, kwargs, what).items()}
        nodes, types = infer_graph_types(self._heads, given, default=unknown)
        args_, aux_ = arguments_and_aux(nodes)

        def type_of(node, index=0):
            name = types.get((id(node), index)) or unknown
            return None if name is None else np.dtype(name).type

        return (
            [type_of(n) for n in args_],
            [type_of(n, i) for n, i in self._heads],
            [type_of(n) for n in aux_],
        )

    # -- binding --------------------------------------------------------------------
    def simple_bind(
        self,
        ctx,
        grad_req="write",
        type_dict=None,
        stype_dict=None,
        group2ctx=None,
        shared_arg_names=None,
        shared_exec=None,
        shared_buffer=None,
        **kwargs,
    ):
        """Allocate arrays from input shapes and bind them (see ``rebind.executor``).

        As in MXNet, keyword values that are not shapes (``axis=0`` passed along
        with the shapes, as MXNet's own tests do) are ignored.
        """
        from ..executor import simple_bind

        kwargs = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        return simple_bind(
            self,
            ctx,
            grad_req=grad_req,
            type_dict=type_dict,
            group2ctx=group2ctx,
            shared_arg_names=shared_arg_names,
            shared_exec=shared_exec,
            shared_buffer=shared_buffer,
            shapes=kwargs,
            stype_dict=stype_dict,
        )

    def bind(
        self,
        ctx,
        args,
        args_grad=None,
        grad_req="write",
        aux_states=None,
        group2ctx=None,
        shared_exec=None,
    ):
        """Bind to given argument arrays (see ``rebind.executor``)."""
        from ..executor import bind

        return bind(
            self,
            ctx,
            args,
            args_grad=args_grad,
            grad_req=grad_req,
            aux_states=aux_states,
            group2ctx=group2ctx,
            shared_exec=shared_exec,
        )

    def eval(self, ctx=None, **kwargs):
        """Bind to ``kwargs`` (name -> NDArray), run forward, and return the outputs."""
        from ..context import current_context

        executor = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return executor.forward()


def Group(symbols):
    """One symbol whose outputs are the outputs of ``symbols``, in order."""
    symbols = list(symbols)
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise TypeError("Group takes a non-empty list of Symbols")
    return Symbol([entry for s in symbols for entry in s._heads])


def load_json(json_str):
    """A symbol from MXNet JSON text."""
    return Symbol(graph_from_json(json_str))


def load(fname):
    """A symbol from an MXNet ``-symbol.json`` file."""
    with open(fname, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{fname}: not UTF-8 text at offset {exc.start}") from None
    return Symbol(graph_from_json(text, source=str(fname)))
