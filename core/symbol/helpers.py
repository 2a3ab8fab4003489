"""``mx.sym``'s functions that are not operators, and Symbol's non-operator methods.

``hypot``, ``eye``, ``linspace``, ``histogram`` and ``split_v2`` compose the
operators (``_eye``, ``_linspace``, ``_histogram``, ``_split_v2``) as MXNet's
``symbol.py`` does. The NDArray-only methods raise MXNet's own ``NotImplementedForSymbol``.
"""

import numbers

import numpy as np

from ..base import NotImplementedForSymbol
from .compose import create
from .graph import topological_order
from .symbol import Symbol

__all__ = ["hypot", "eye", "linspace", "histogram", "split_v2", "install_extras"]


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


def eye(N, M=0, k=0, dtype=None, **kwargs):  # noqa: N803 - MXNet's names
    """An ``N x M`` (``M=0``: square) symbol with ones on diagonal ``k`` (``_eye``)."""
    dtype = np.float32 if dtype is None else dtype
    return create("_eye", "_eye", (N, M, k), {"dtype": dtype, **kwargs})


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (``_linspace``)."""
    dtype = np.float32 if dtype is None else dtype
    params = {"start": start, "stop": stop, "num": num, "endpoint": endpoint}
    return create("_linspace", "_linspace", (), {**params, "name": name, "dtype": dtype})


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002 - MXNet's parameter name
    """Counts and edges of ``a``: ``bins`` a Symbol of edges, or a count with ``range``."""
    if isinstance(bins, Symbol):
        return create("_histogram", "_histogram", (), {"data": a, "bins": bins, **kwargs})
    if isinstance(bins, numbers.Integral):
        if range is None:
            raise ValueError("null range is not supported in symbol mode")
        params = {"data": a, "bin_cnt": bins, "range": range, **kwargs}
        return create("_histogram", "_histogram", (), params)
    raise ValueError("bins argument should be either an integer or an NDArray")


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split ``ary`` into equal sections (an int) or at a tuple of indices (``_split_v2``)."""
    indices, sections = [], 0
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
    elif isinstance(indices_or_sections, tuple):
        indices = [0, *indices_or_sections]
    else:
        raise ValueError("indices_or_sections must either int or tuple of ints")
    return create("_split_v2", "_split_v2", (ary, indices, axis, squeeze_axis, sections), {})


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


def _split_v2_method(self, *args, **kwargs):
    """``split_v2(self, ...)``: see the function ``split_v2``."""
    return split_v2(self, *args, **kwargs)


_METHODS = {
    "split_v2": _split_v2_method,
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
