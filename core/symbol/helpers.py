"""``mx.sym``'s functions that are not operators, and Symbol's non-operator methods.

``hypot`` composes the existing operators. ``eye``, ``linspace``, ``histogram``
and ``split_v2`` need operators rebind does not have yet (``_eye``,
``_linspace``, ``_histogram``, ``_split_v2``: the operator issue, #13), so they
refuse. The NDArray-only methods raise MXNet's own ``NotImplementedForSymbol``.
"""

import numbers

import numpy as np

from ..base import NotImplementedForSymbol
from .compose import create
from .graph import topological_order
from .symbol import Symbol

__all__ = ["hypot", "eye", "linspace", "histogram", "split_v2", "install_extras"]


def missing_operator_reason(function, op_name):
    """Why ``mx.sym.<function>`` refuses: its operator is not in rebind yet."""
    return (
        f"mx.sym.{function} needs the operator {op_name}, which rebind does not have yet "
        "(operator issue #13); mx.nd." + function + " works on arrays"
    )


def hypot(left, right):
    """``sqrt(left**2 + right**2)`` element-wise, for symbols and scalars."""
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return create("_hypot", "_hypot", (left, right), {})
    if isinstance(left, Symbol) and isinstance(right, numbers.Number):
        return create("_hypot_scalar", "_hypotscalar", (left,), {"scalar": right})
    if isinstance(right, Symbol) and isinstance(left, numbers.Number):
        return create("_hypot_scalar", "_hypotscalar", (right,), {"scalar": left})
    if isinstance(left, numbers.Number) and isinstance(right, numbers.Number):
        return np.hypot(left, right)
    raise TypeError(
        f"hypot: operands must be Symbols or numbers, got "
        f"{type(left).__name__} and {type(right).__name__}"
    )


def eye(*args, **kwargs):
    """MXNet's ``eye(N, M=0, k=0, dtype=None)`` symbol; refused until ``_eye`` lands."""
    raise NotImplementedError(missing_operator_reason("eye", "_eye"))


def linspace(*args, **kwargs):
    """MXNet's ``linspace(start, stop, num, endpoint=True, name=None, dtype=None)`` symbol.

    Refused until the ``_linspace`` operator lands.
    """
    raise NotImplementedError(missing_operator_reason("linspace", "_linspace"))


def histogram(*args, **kwargs):
    """MXNet's ``histogram(a, bins=10, range=None)`` symbol; refused until ``_histogram`` lands."""
    raise NotImplementedError(missing_operator_reason("histogram", "_histogram"))


def split_v2(*args, **kwargs):
    """MXNet's ``split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False)`` symbol.

    Refused until the ``_split_v2`` operator lands.
    """
    raise NotImplementedError(missing_operator_reason("split_v2", "_split_v2"))


# -- Symbol methods ------------------------------------------------------------------
def _ndarray_only(method):
    def refuse(self, *args, **kwargs):
        raise NotImplementedForSymbol(refuse, None)

    refuse.__name__ = refuse.__qualname__ = method
    refuse.__doc__ = f"NDArray's ``{method}``; a Symbol has no values (NotImplementedForSymbol)."
    return refuse


def _as_nd_ndarray(self):
    """``self``: rebind has only the classic Symbol (no ``mx.sym.np`` symbols)."""
    return self


def _input_line(index, child, output, versions):
    line = f"\targ[{index}]={child.name}({output})"
    if child.op is None:
        line += f" version={versions.get(id(child), 0)}"
    return line + "\n"


def _op_block(node, versions):
    lines = ["--------------------\n", f"Op:{node.op.name}, Name={node.name}\n", "Inputs:\n"]
    first_aux = len(node.argument_names())
    for index, (child, output) in enumerate(node.inputs):
        if index >= first_aux and child.op is None:
            # an operator that updates a state bumps the variable's version, as in NNVM
            versions[id(child)] = versions.get(id(child), 0) + 1
        lines.append(_input_line(index, child, output, versions))
    if node.attrs:
        lines.append("Attrs:\n")
        lines.extend(f"\t{key}={value}\n" for key, value in node.attrs.items())
    return lines


def debug_str(self):
    """A text listing of the graph: outputs, variables, and each operator's inputs and attrs.

    The layout is MXNet's (NNVM's ``Symbol::Print``); operator attributes are
    listed in the order they were given, where MXNet's order is its hash map's.
    """
    heads = self._heads
    if len(heads) == 1 and heads[0][0].op is None:
        return f"Variable:{heads[0][0].name}\n"
    lines = ["Symbol Outputs:\n"]
    lines.extend(f"\toutput[{i}]={node.name}({index})\n" for i, (node, index) in enumerate(heads))
    versions = {}
    for node in topological_order(heads):
        if node.op is None:
            lines.append(f"Variable:{node.name}\n")
        else:
            lines.extend(_op_block(node, versions))
    return "".join(lines)


def _gradient(self, *wrt):
    """MXNet's symbolic gradient, which MXNet 1.9.1 itself does not implement."""
    raise NotImplementedError(
        "Symbol.gradient: MXNet 1.9.1 does not implement it either (MXSymbolGrad fails); "
        "bind the symbol and call Executor.backward for gradients"
    )


_BACKENDS_REASON = (
    "rebind has no subgraph backends (MKLDNN, TensorRT, custom partitioners): "
    "the symbol runs as is on NumPy or CuPy"
)


def _optimize_for(self, *args, **kwargs):
    """MXNet's ``optimize_for(backend, ...)``: graph partitioning for a backend; not in rebind."""
    raise NotImplementedError(f"Symbol.optimize_for: {_BACKENDS_REASON}")


def _get_backend_symbol(self, *args):
    """MXNet's ``get_backend_symbol(backend)``: a subgraph rewrite; not in rebind."""
    raise NotImplementedError(f"Symbol.get_backend_symbol: {_BACKENDS_REASON}")


_METHODS = {
    "as_nd_ndarray": _as_nd_ndarray,
    "debug_str": debug_str,
    "gradient": _gradient,
    "optimize_for": _optimize_for,
    "get_backend_symbol": _get_backend_symbol,
}
_NDARRAY_ONLY = (
    "asnumpy",
    "asscalar",
    "as_in_context",
    "copy",
    "wait_to_read",
    "detach",
    "backward",
)


def install_extras(cls):
    """Give Symbol the methods above (kept apart so symbol.py stays the core type)."""
    for name, function in _METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, function)
    for name in _NDARRAY_ONLY:
        if name not in cls.__dict__:
            setattr(cls, name, _ndarray_only(name))
