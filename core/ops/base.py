"""The operator contract: one ``OpDef`` per operator.

An OpDef is data plus functions, written once against the array namespace
``xp`` so the same kernel runs on NumPy and CuPy:

* ``params``: an attrs class (see ``params.py``), parsed from string attrs.
* ``arguments(p)``, ``outputs(p)``, ``aux_states(p)``: input, visible output
  and auxiliary-state names (each a tuple, or a function of the params).
  ``hidden_outputs(p)`` counts outputs MXNet keeps but does not show
  (BatchNorm's mean and var); they matter only for the JSON ``node_row_ptr``.
* ``infer_shape(p, in_shapes, out_shapes, aux_shapes)`` returns the three
  lists completed as far as possible. A shape is a tuple in which ``0`` is an
  unknown dimension, or None when nothing is known (MXNet's convention).
  Conflicts are reported with ``mismatch(...)``; the caller adds the node.
* ``infer_type(p, in_types, out_types, aux_types)`` likewise for dtypes
  (NumPy dtype names or None).
* ``forward(ctx, p, inputs, aux) -> (outputs, saved)``: ``inputs`` and
  ``aux`` are backend arrays; aux may be updated in place. ``saved`` is
  whatever ``backward`` needs.
* ``backward(ctx, p, saved, out_grads, need_grad) -> in_grads``: one entry
  per argument, None where there is no gradient (labels, indices) or where
  ``need_grad[i]`` is false. ``out_grads`` has an array for every visible
  output (zeros where nothing consumed it).
* ``input_var_attrs(p)``: optional {input name: {attribute: value}} that
  composing gives a variable input lacking the attribute (MXNet's
  FSetInputVarAttrOnCompose: BatchNorm's moving statistics get ``__init__``).
* ``is_loss``: the op makes its own head gradient (SoftmaxOutput, the
  regression outputs, MakeLoss): ``out_grads`` are what the caller passed or
  ones, and the op decides whether to use them.
"""

import attrs
import numpy as np

from ..errors import DTypeMismatchError, ShapeError
from .params import NoParams, parse_params

__all__ = [
    "OpDef",
    "OpContext",
    "ArgShapeMismatch",
    "ArgTypeMismatch",
    "mismatch",
    "known",
    "merge_shape",
    "same_type",
    "elementwise_shape",
    "forward_only_shape",
]


class ArgShapeMismatch(Exception):
    """Raised by an op's ``infer_shape``; turned into ShapeError with the node's names."""

    def __init__(self, argument, got, expected, reason=""):
        super().__init__(argument, got, expected, reason)
        self.argument, self.got, self.expected, self.reason = argument, got, expected, reason


class ArgTypeMismatch(Exception):
    """Raised by an op's ``infer_type``; turned into DTypeMismatchError with the node's name."""

    def __init__(self, argument, got, expected, reason=""):
        super().__init__(argument, got, expected, reason)
        self.argument, self.got, self.expected, self.reason = argument, got, expected, reason


def mismatch(argument, got, expected, reason=""):
    """The exception an op raises when ``argument`` has shape ``got``, not ``expected``."""
    return ArgShapeMismatch(argument, got, expected, reason)


def known(shape):
    """Whether every dimension of ``shape`` is known."""
    return shape is not None and all(d > 0 for d in shape)


def merge_shape(a, b, argument="output"):
    """The shape that agrees with both partial shapes ``a`` and ``b``."""
    if a is None:
        return None if b is None else tuple(b)
    if b is None:
        return tuple(a)
    if len(a) != len(b):
        raise mismatch(argument, tuple(b), tuple(a))
    merged = []
    for x, y in zip(a, b, strict=True):
        if x and y and x != y:
            raise mismatch(argument, tuple(b), tuple(a))
        merged.append(x or y)
    return tuple(merged)


def _as_names(spec):
    return spec if callable(spec) else (lambda _params, _names=tuple(spec): _names)


@attrs.frozen
class OpContext:
    """What a kernel may know about the call: mode, backend, device, inferred shapes.

    ``out_shapes`` holds the output shapes shape inference settled at bind
    time (None when the op runs outside an executor); creators whose shape
    parameter has unknown (0) dimensions, such as an RNN begin state
    ``_zeros(shape=(0, H))``, take their real shape from it.
    """

    is_train: bool
    backend: object
    device_id: int = 0
    out_shapes: tuple = None
    # the executor proved input 0 dead after this op and unshared: the kernel
    # may write its output into it (see executor/optimize.py)
    inplace: bool = False
    # the executor proved that every reader of output 0 takes any memory layout:
    # the kernel may return it column-major when that computes faster
    column_major_out: bool = False
    # the executor proved that every reader of output 0 takes any memory layout and
    # hands any layout on (convolution, activation, pooling): the kernel may return
    # output 0 as a view of a batch-last (C, *spatial, N) array (see ops/conv_utils.py)
    batch_last_out: bool = False
    # the same for the gradient of input 0, whose producer's output is such a view
    batch_last_grad: bool = False
    # the executor proved that the gradient reaching output 0 is a new array nobody
    # else holds: backward may write its result into it (see executor/inplace_grads.py)
    grad_inplace: bool = False
    # the executor folded the gradient of the activation whose output this max pooling
    # reads into the pooling's backward: that act_type's derivative, taken at the pooled
    # outputs, multiplies the gradient received first; "" when off; the activation then
    # passes its gradient through (see executor/inplace_grads.py)
    grad_activation: str = ""
    grad_passthrough: bool = False
    # the executor found this many FullyConnected steps sharing this one's weight (an
    # unrolled recurrent projection): backward returns the weight's and bias's gradient
    # as terms, summed once over all steps (see ops/weight_terms.py); 0: off
    weight_grad_terms: int = 0
    # the backend's array module, looked up once: kernels read it on every call
    xp: object = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        object.__setattr__(self, "xp", self.backend.xp)


def same_type(params, in_types, out_types, aux_types):
    """Every input, output and aux state has the dtype of the first known one."""
    dtype = next((t for t in (*in_types, *out_types, *aux_types) if t is not None), None)
    if dtype is None:
        return in_types, out_types, aux_types
    return (
        [dtype] * len(in_types),
        [dtype] * len(out_types),
        [dtype] * len(aux_types),
    )


def elementwise_shape(params, in_shapes, out_shapes, aux_shapes):
    """All inputs and outputs share one shape (merged in both directions)."""
    shape = None
    names = [f"input {i}" for i in range(len(in_shapes))] + ["output"] * len(out_shapes)
    for name, s in zip(names, (*in_shapes, *out_shapes), strict=True):
        shape = merge_shape(shape, s, name)
    return [shape] * len(in_shapes), [shape] * len(out_shapes), aux_shapes


def forward_only_shape(compute, partial=False):
    """An ``infer_shape`` from ``compute(params, in_shapes) -> out_shapes`` (all inputs known).

    With ``partial``, ``compute`` runs as soon as every input has a shape, even
    one with unknown (0) dimensions, which it then carries to the outputs.
    """

    def infer(params, in_shapes, out_shapes, aux_shapes):
        given = (s is not None for s in in_shapes) if partial else (known(s) for s in in_shapes)
        if all(given):
            computed = compute(params, [tuple(s) for s in in_shapes])
            out_shapes = [
                merge_shape(c, o, "output") for c, o in zip(computed, out_shapes, strict=True)
            ]
        return in_shapes, out_shapes, aux_shapes

    infer.__name__ = getattr(compute, "__name__", "infer_shape")
    return infer


@attrs.frozen(kw_only=True)
class OpDef:
    """One operator: names, parameters, inference, and kernels (see module doc)."""

    name: str
    forward: object
    backward: object = None
    params: type = NoParams
    arguments: object = attrs.field(default=("data",), converter=_as_names)
    outputs: object = attrs.field(default=("output",), converter=_as_names)
    aux_states: object = attrs.field(default=(), converter=_as_names)
    hidden_outputs: object = 0
    infer_shape: object = elementwise_shape
    infer_type: object = same_type
    is_loss: bool = False
    aliases: tuple = ()
    variadic: str = None  # parameter holding the number of inputs (Concat's num_args)
    input_var_attrs: object = None  # params -> {input: {attr: value}} (see module doc)
    doc: str = ""

    def parse(self, raw):
        """The params object for string (or Python) attributes ``raw``."""
        return parse_params(self.name, self.params, raw)

    def num_hidden(self, params):
        hidden = self.hidden_outputs
        return hidden(params) if callable(hidden) else hidden

    def infer_shapes(self, params, in_shapes, out_shapes=None, aux_shapes=None, node=None):
        """Run ``infer_shape``, turning a mismatch into ShapeError naming the node."""
        out_shapes = out_shapes or [None] * len(self.outputs(params))
        aux_shapes = aux_shapes or [None] * len(self.aux_states(params))
        try:
            return self.infer_shape(params, list(in_shapes), list(out_shapes), list(aux_shapes))
        except ArgShapeMismatch as exc:
            raise ShapeError(
                self._conflict(params, node, exc, "shape", in_shapes, "input shapes given")
            ) from None

    def infer_types(self, params, in_types, out_types=None, aux_types=None, node=None):
        """Run ``infer_type``, turning a conflict into DTypeMismatchError naming the node."""
        out_types = out_types or [None] * len(self.outputs(params))
        aux_types = aux_types or [None] * len(self.aux_states(params))
        try:
            return self.infer_type(params, list(in_types), list(out_types), list(aux_types))
        except ArgTypeMismatch as exc:
            raise DTypeMismatchError(
                self._conflict(params, node, exc, "dtype", in_types, "input dtypes")
            ) from None

    def _conflict(self, params, node, exc, what, given, given_label):
        """The message naming the node, the argument, what it has and what was expected."""
        names = self.arguments(params)
        listed = ", ".join(f"{n}={g}" for n, g in zip(names, given, strict=False))
        reason = f" ({exc.reason})" if exc.reason else ""
        return (
            f"{self.name} node {node or self.name!r}: argument {exc.argument!r} has {what} "
            f"{exc.got}, expected {exc.expected}{reason}; {given_label}: {listed}"
        )


def split_positional(op, args, array_type):
    """(leading inputs, remaining values) of a call's positional arguments.

    As in MXNet's generated functions, inputs (``array_type`` values, or lists
    of them) come first; the values after them are parameters.
    """
    inputs, position = [], 0
    for value in args:
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], array_type):
            inputs.extend(value)
        elif isinstance(value, array_type):
            inputs.append(value)
        else:
            break
        position += 1
    rest = args[position:]
    if all(value is None for value in rest):
        # inputs passed as None are left out: Convolution(x, w, None, no_bias=True)
        rest = ()
    for value in rest:
        if isinstance(value, array_type):
            raise TypeError(f"{op.name}: inputs must come before parameters")
    return inputs, rest


def positional_params(op, values, given):
    """{parameter: string} for positional parameter ``values``, in declaration order."""
    from .params import to_attr_string

    fields = [f.name for f in attrs.fields(op.params)] if attrs.has(op.params) else []
    if len(values) > len(fields):
        raise TypeError(
            f"{op.name}: {len(values)} positional parameters given; its parameters are {fields}"
        )
    result = {}
    for field, value in zip(fields, values, strict=False):
        if field in given:
            raise TypeError(f"{op.name}: parameter {field!r} given twice")
        result[field] = to_attr_string(value)
    return result


def as_dtype_name(dtype):
    return None if dtype is None else np.dtype(dtype).name
