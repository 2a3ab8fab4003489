"""``export_model``: a rebind symbol and its parameters as an ONNX file.

The walk: load what was given (objects or files), infer every shape and
dtype at the export shapes, make sure every operator has a converter, let
each converter emit its ONNX nodes into an ``ExportGraph``, check the model
with ``onnx.checker`` and only then write it (atomically). Parameters become
initializers named as in rebind; the other inputs become graph inputs in
``list_inputs()`` order, without the labels that only a loss reads.
"""

import logging
import os

import numpy as np

from ..fileutil import write_atomic
from ..symbol.graph import without_amp_casts
from .errors import OnnxExportError, require_onnx
from .graph import ExportGraph, ExportNode, tensor_type
from .plan import Plan, load_params, load_symbol, needed_nodes

__all__ = [
    "build_model",
    "export_model",
    "get_operator_support",
    "graph_input_names",
    "DEFAULT_OPSET",
    "MIN_OPSET",
]

DEFAULT_OPSET = 17
MIN_OPSET = 13

logger = logging.getLogger(__name__)


def get_operator_support(opset_version=None):
    """The rebind operator names (and aliases) that export to ONNX, sorted.

    Every converter works for every opset this exporter accepts
    (``MIN_OPSET`` to the installed onnx's newest), so ``opset_version``
    only checks that the opset is one of them.
    """
    require_onnx()
    if opset_version is not None:
        _check_opset(opset_version)
    return _converters().supported_operators()


def export_model(
    sym,
    params,
    in_shapes=None,
    in_types=np.float32,
    onnx_file_path="model.onnx",
    verbose=False,
    dynamic=False,
    dynamic_input_shapes=None,
    run_shape_inference=False,
    input_type=None,
    input_shape=None,
    opset_version=DEFAULT_OPSET,
):
    """Export ``sym`` with ``params`` to the ONNX file ``onnx_file_path``; returns the path.

    Args:
        sym: a Symbol, or the path of a symbol JSON file.
        params: {name: NDArray or array} (``arg:``/``aux:`` prefixes accepted), an
            ``(arg_params, aux_params)`` pair as ``get_params()`` returns, or a
            ``.params`` file path.
        in_shapes: one shape per graph input (inputs that are not parameters,
            nor labels only a loss reads), in ``list_inputs()`` order.
        in_types: one dtype for all inputs, or one per input.
        dynamic: make axis 0 of every input a symbolic ``batch`` dimension.
        dynamic_input_shapes: per input, a shape whose None (or string)
            entries are symbolic; implies ``dynamic``.
        run_shape_inference: annotate intermediate values with ONNX's shape
            inference (kept out when it fails, as in MXNet).
        input_type, input_shape: MXNet's old names of ``in_types``, ``in_shapes``.
        opset_version: the ONNX opset to target (13 or newer; default 17).

    Unlike MXNet 1.9, ``dynamic=True`` without ``dynamic_input_shapes`` makes
    only the batch axis symbolic, and every check runs before the file is
    written: an unconvertible operator leaves no file behind.
    """
    onnx = require_onnx()
    in_types = input_type if input_type is not None else in_types
    in_shapes = input_shape if input_shape is not None else in_shapes
    model, plan = build_model(
        sym, params, in_shapes, in_types, dynamic, dynamic_input_shapes, verbose, opset_version
    )
    if run_shape_inference:
        model = _with_shape_inference(onnx, model)
    path = os.fspath(onnx_file_path)
    write_atomic(path, model.SerializeToString())
    logger.info("exported ONNX model %s (inputs %s)", path, plan.input_shapes)
    return path


def build_model(
    sym,
    params,
    in_shapes,
    in_types=np.float32,
    dynamic=False,
    dynamic_input_shapes=None,
    verbose=False,
    opset_version=DEFAULT_OPSET,
    check=True,
):
    """The ONNX ``ModelProto`` of ``sym`` with ``params``, and its export plan.

    What ``export_model`` writes, kept in memory (the inference engine hands it
    to ONNX Runtime, which validates it itself: ``check=False`` skips
    ``onnx.checker``); ``plan.inputs`` names the graph inputs in order.
    """
    onnx = require_onnx()
    _check_opset(opset_version)
    symbol, params = load_symbol(sym), load_params(params)
    heads = without_amp_casts(symbol._heads)
    plan = Plan(heads, params, in_shapes, in_types, dynamic_input_shapes)
    dynamic = bool(dynamic or dynamic_input_shapes is not None)
    return _build_model(onnx, plan, opset_version, dynamic, verbose, check), plan


def _converters():
    """The converter registry, imported on first use so ``import rebind`` stays light."""
    from . import converters

    return converters


def graph_input_names(sym, params):
    """The names ``in_shapes`` and ``in_types`` follow, for ``export_model(sym, params)``.

    The symbol's inputs in ``list_inputs()`` order, less the parameters and
    the labels that only a loss layer reads.
    """
    params = load_params(params)
    nodes = needed_nodes(without_amp_casts(load_symbol(sym)._heads))
    return [n.name for n in nodes if n.op is None and n.name not in params]


def _check_opset(opset_version):
    newest = require_onnx().defs.onnx_opset_version()
    if not MIN_OPSET <= int(opset_version) <= newest:
        raise OnnxExportError(
            f"opset_version {opset_version} is not supported: rebind exports opsets "
            f"{MIN_OPSET} to {newest} (the newest the installed onnx knows)"
        )


# -- building -----------------------------------------------------------------------
def _build_model(onnx, plan, opset, dynamic, verbose, check=True):
    _check_convertible(plan.nodes)
    names = _value_names(plan)
    params = {k: v.astype(_param_dtype(plan, k), copy=False) for k, v in plan.params.items()}
    batch_input = plan.inputs[0] if plan.inputs else None
    g = ExportGraph(opset, dynamic, params, _readers(plan.nodes), batch_input)
    for name in names.values():
        g.reserve(name)
    for node in plan.nodes:
        if node.op is not None:
            _convert(_export_node(plan, node, names), g, verbose)
    outputs = _graph_outputs(onnx, plan, names, g, dynamic)
    graph = onnx.helper.make_graph(
        g.nodes,
        "rebind",
        _graph_inputs(onnx, plan, dynamic),
        outputs,
        initializer=_initializers(onnx, g, {o.name for o in outputs}),
    )
    opsets = [onnx.helper.make_opsetid("", opset)]
    model = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="rebind")
    model.ir_version = onnx.helper.find_min_ir_version_for(opsets)
    if not check:
        return model
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise OnnxExportError(f"the exported ONNX model does not pass onnx.checker: {exc}") from exc
    return model


def _check_convertible(nodes):
    converters = _converters()
    for node in nodes:
        if node.op is not None and converters.lookup(node.op) is None:
            reason = converters.refusal(node.op) or "no ONNX converter exists for this operator"
            raise OnnxExportError(
                f"cannot export {node.op.name} node {node.name!r}: {reason}; nothing was written "
                "(rebind.onnx.get_operator_support() lists the operators that export)"
            )


def _param_dtype(plan, name):
    node = next(n for n in plan.nodes if n.op is None and n.name == name)
    return plan.dtype(node)


def _readers(nodes):
    counts = {}
    for node in nodes:
        for child in {id(c): c for c, _ in node.inputs}.values():
            if child.op is None:
                counts[child.name] = counts.get(child.name, 0) + 1
    return counts


def _value_names(plan):
    """ONNX value name of every entry: variables keep theirs, heads get list_outputs()."""
    names, taken = {}, set()

    def assign(key, preferred):
        name, i = preferred, 0
        while name in taken:
            i += 1
            name = f"{preferred}_{i}"
        taken.add(name)
        names[key] = name

    for node in plan.nodes:
        if node.op is None:
            names[(id(node), 0)] = node.name
            taken.add(node.name)
    for node, index in plan.heads:
        if (id(node), index) not in names:
            assign((id(node), index), node.output_name(index))
    for node in plan.nodes:
        for index in range(node.num_outputs):
            if (id(node), index) not in names:
                assign((id(node), index), node.output_name(index))
    return names


def _export_node(plan, node, names):
    ins = [(id(child), index) for child, index in node.inputs]
    outs = [(id(node), index) for index in range(node.num_outputs)]
    return ExportNode(
        name=node.name,
        op=node.op,
        params=node.params,
        attrs=dict(node.attrs),
        inputs=tuple(names.get(k, "") for k in ins),  # "": a label nothing computes
        outputs=tuple(names[k] for k in outs),
        in_shapes=tuple(tuple(plan.shapes.get(k) or ()) for k in ins),
        out_shapes=tuple(tuple(plan.shapes[k]) for k in outs),
        in_dtypes=tuple(plan.types.get(k, "float32") for k in ins),
        out_dtypes=tuple(plan.types[k] for k in outs),
    )


def _convert(node, g, verbose):
    before = len(g.nodes)
    try:
        _converters().lookup(node.op)(node, g)
    except OnnxExportError:
        raise
    except Exception as exc:
        raise OnnxExportError(
            f"{node.op.name} node {node.name!r}: the ONNX converter failed: {exc}"
        ) from exc
    if verbose:
        emitted = ", ".join(n.op_type for n in g.nodes[before:]) or "nothing"
        logger.info("%s node %r -> %s", node.op.name, node.name, emitted)


def _graph_inputs(onnx, plan, dynamic):
    shapes = plan.dynamic_shapes if dynamic else plan.input_shapes
    return [
        onnx.helper.make_tensor_value_info(name, tensor_type(dtype), list(shape))
        for name, dtype, shape in zip(plan.inputs, plan.input_types, shapes, strict=True)
    ]


def _graph_outputs(onnx, plan, names, g, dynamic):
    """One output per head; a head listed twice gets a copy (ONNX names are unique)."""
    outputs, seen = [], set()
    for node, index in plan.heads:
        name = names[(id(node), index)]
        if name in seen:
            name = g.add_node("Identity", [name], [g.fresh(name)])
        seen.add(name)
        shape = plan.shape(node, index)
        dims = [None] * len(shape) if dynamic else list(shape)
        outputs.append(
            onnx.helper.make_tensor_value_info(name, tensor_type(plan.dtype(node, index)), dims)
        )
    return outputs


def _initializers(onnx, g, outputs):
    used = outputs | {name for node in g.nodes for name in node.input}
    return [
        onnx.numpy_helper.from_array(np.ascontiguousarray(value).reshape(np.shape(value)), name)
        for name, value in g.initializers.items()
        if name in used
    ]


def _with_shape_inference(onnx, model):
    try:
        return onnx.shape_inference.infer_shapes(model)
    except Exception as exc:  # MXNet keeps the model when inference fails, so do we
        logger.info("ONNX shape inference failed (%s); the model is kept without it", exc)
        return model
