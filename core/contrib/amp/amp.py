"""Automatic mixed precision for the Symbol/Module API (``mx.contrib.amp``).

``convert_symbol``/``convert_model`` rewrite a float32 network so that the
operators of the float16 list run in float16 between ``amp_cast`` nodes;
``init`` makes newly built symbols and imperative calls cast the same way.
Only float16 is a target: NumPy and CuPy have no bfloat16. Gluon is not part
of rebind, so ``convert_hybrid_block`` and the Trainer-only loss scaling
(``init_trainer``, ``scale_loss``, ``unscale``) refuse with the reason.
"""

import logging

import numpy as np

from ... import registry
from ...module import BucketingModule
from ...symbol import Symbol
from . import lists
from .convert import Plan, reduce_precision
from .wrap import wrap_functions

__all__ = [
    "init",
    "init_trainer",
    "scale_loss",
    "unscale",
    "convert_model",
    "convert_hybrid_block",
    "convert_bucketing_module",
    "list_lp16_ops",
    "list_fp32_ops",
    "list_lp16_fp32_ops",
    "list_conditional_fp32_ops",
    "list_widest_type_cast",
    "list_loss_output_functions",
    "list_lp16_use_fp32_params",
    "convert_symbol",
]

_DTYPE_FLAGS = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5}
_initialized = False


def _target(target_dtype, what):
    """'float16' for the float16 target; a clear refusal for anything else."""
    name = None
    try:
        name = np.dtype(target_dtype).name
    except TypeError:
        pass
    if name == "float16":
        return name
    hint = " (NumPy and CuPy have no bfloat16)" if str(target_dtype) == "bfloat16" else ""
    raise ValueError(f"{what}: target_dtype must be 'float16', got {target_dtype!r}{hint}")


def _registered(names):
    known = set(registry.get_registry("operators").names())
    return [n for n in names if n in known]


def list_lp16_ops(target_dtype):
    """Operators run in float16 (MXNet's list, those rebind has)."""
    _target(target_dtype, "list_lp16_ops")
    return _registered(lists.symbol_fp16.FP16_FUNCS)


def list_fp32_ops(target_dtype):
    """Operators always run in float32."""
    _target(target_dtype, "list_fp32_ops")
    return _registered(lists.symbol_fp16.FP32_FUNCS)


def list_lp16_fp32_ops(target_dtype):
    """Operators that run in whichever precision their inputs have."""
    _target(target_dtype, "list_lp16_fp32_ops")
    return _registered(lists.symbol_fp16.FP16_FP32_FUNCS)


def list_conditional_fp32_ops(target_dtype):
    """(operator, parameter, values) run in float32 when the parameter has one of the values."""
    _target(target_dtype, "list_conditional_fp32_ops")
    known = set(_registered([op for op, _, _ in lists.symbol_fp16.CONDITIONAL_FP32_FUNCS]))
    return [row for row in lists.symbol_fp16.CONDITIONAL_FP32_FUNCS if row[0] in known]


def list_widest_type_cast(target_dtype):
    """Operators whose inputs are cast to the widest float type among them."""
    _target(target_dtype, "list_widest_type_cast")
    return _registered(lists.symbol_fp16.WIDEST_TYPE_CASTS)


def list_loss_output_functions(target_dtype):
    """Loss outputs a dynamic loss scale would scale."""
    _target(target_dtype, "list_loss_output_functions")
    return _registered(lists.symbol_fp16.LOSS_OUTPUT_FUNCTIONS)


def list_lp16_use_fp32_params(target_dtype):
    """Parameters kept in float32 inside float16 ops: none for float16 (MXNet: bfloat16 only)."""
    _target(target_dtype, "list_lp16_use_fp32_params")


def missing_ops():
    """{list name: MXNet operators of that list rebind does not have}."""
    source = lists.symbol_fp16
    tables = {
        "FP16_FUNCS": source.FP16_FUNCS,
        "FP16_FP32_FUNCS": source.FP16_FP32_FUNCS,
        "FP32_FUNCS": source.FP32_FUNCS,
        "CONDITIONAL_FP32_FUNCS": [op for op, _, _ in source.CONDITIONAL_FP32_FUNCS],
        "WIDEST_TYPE_CASTS": source.WIDEST_TYPE_CASTS,
        "LOSS_OUTPUT_FUNCTIONS": source.LOSS_OUTPUT_FUNCTIONS,
    }
    return {name: sorted(set(ops) - set(_registered(ops))) for name, ops in tables.items()}


def init(
    target_dtype="float16",
    target_precision_ops=None,
    conditional_fp32_ops=None,
    fp32_ops=None,
    layout_optimization=False,
):
    """Make symbols and NDArray calls made from now on cast per the AMP lists (once per process).

    ``layout_optimization`` (MXNet 2's NHWC rewrite) is accepted only as False.
    """
    global _initialized
    if layout_optimization:
        raise NotImplementedError(
            "amp.init: layout_optimization=True (MXNet 2's layout rewrite for cuDNN) is not "
            "implemented in rebind; call amp.init() without it"
        )
    if _initialized:
        return
    target = _target(target_dtype, "amp.init")
    lp16 = list_lp16_ops(target) if target_precision_ops is None else target_precision_ops
    fp32 = list_fp32_ops(target) if fp32_ops is None else fp32_ops
    if conditional_fp32_ops is None:
        conditional_fp32_ops = list_conditional_fp32_ops(target)
    wrap_functions(
        target,
        lp16,
        fp32,
        conditional_fp32_ops,
        list_widest_type_cast(target),
        list_loss_output_functions(target),
    )
    _initialized = True
    logging.info("Using AMP")


def _gluon_only(name):
    raise NotImplementedError(
        f"amp.{name}: dynamic loss scaling works on a Gluon Trainer in MXNet 1.9 (given an "
        "Optimizer it raises TypeError there too) and rebind has no Gluon; with the Module API "
        "keep float32 master weights through optimizer_params={'multi_precision': True}"
    )


def init_trainer(optimizer_or_trainer):
    """Dynamic loss scaling for a Gluon Trainer: not available (no Gluon in rebind)."""
    _gluon_only("init_trainer")


def scale_loss(loss, optimizer_or_trainer):
    """Loss scaling context of a Gluon Trainer: not available (no Gluon in rebind)."""
    _gluon_only("scale_loss")


def unscale(optimizer_or_trainer):
    """Unscaling a Gluon Trainer's gradients: not available (no Gluon in rebind)."""
    _gluon_only("unscale")


def convert_hybrid_block(
    block,
    target_dtype="float16",
    target_dtype_ops=None,
    fp32_ops=None,
    conditional_fp32_ops=None,
    excluded_sym_names=None,
    ctx=None,
    cast_optional_params=False,
):
    """Converting a Gluon HybridBlock: not available (no Gluon in rebind)."""
    raise NotImplementedError(
        "amp.convert_hybrid_block converts Gluon HybridBlocks and rebind has no Gluon; "
        "convert the network's Symbol with amp.convert_model(sym, arg_params, aux_params)"
    )


def _check_list(value, what):
    if value is not None and not isinstance(value, list):
        raise TypeError(f"convert_symbol: {what} must be a list, got {type(value).__name__}")


def _conditional_table(rows):
    """{op: {parameter: [values]}} from (op, parameter, values) rows, checked."""
    table = {}
    for row in rows:
        if len(row) != 3 or not isinstance(row[2], list):
            raise TypeError(
                f"convert_symbol: conditional_fp32_ops entry {row!r} is not "
                "(op name, parameter name, list of values)"
            )
        table.setdefault(row[0], {})[row[1]] = list(row[2])
    return table


def _plan(
    target,
    target_dtype_ops,
    fp32_ops,
    conditional_fp32_ops,
    excluded,
    data_names,
    cast_optional_params,
):
    """The conversion Plan for the given (or default) lists, checked as MXNet checks them."""
    for value, what in (
        (target_dtype_ops, "target_dtype_ops"),
        (fp32_ops, "fp32_ops"),
        (conditional_fp32_ops, "conditional_fp32_ops"),
        (excluded, "excluded_sym_names"),
    ):
        _check_list(value, what)
    low = list_lp16_ops(target) if target_dtype_ops is None else target_dtype_ops
    fp32 = list_fp32_ops(target) if fp32_ops is None else fp32_ops
    cond = (
        list_conditional_fp32_ops(target) if conditional_fp32_ops is None else conditional_fp32_ops
    )
    conditional = _conditional_table(cond)
    _check_disjoint(
        {"target_dtype_ops": low, "fp32_ops": fp32, "conditional_fp32_ops": list(conditional)},
        target,
    )
    return Plan(
        target=target,
        low_ops=frozenset(low),
        fp32_ops=frozenset(fp32),
        widest_ops=frozenset(list_widest_type_cast(target)),
        conditional=conditional,
        excluded=frozenset(excluded or ()),
        data_names=frozenset(data_names),
        cast_optional_params=bool(cast_optional_params),
    )


def _check_disjoint(groups, target):
    names = list(groups)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            common = set(groups[first]) & set(groups[second])
            if common:
                raise ValueError(
                    f"convert_symbol: ops {sorted(common)} are in both {first} and "
                    f"{second}; an op can be in one list only"
                )
    allowed = set(list_lp16_ops(target) + list_fp32_ops(target) + list_lp16_fp32_ops(target))
    allowed |= {row[0] for row in list_conditional_fp32_ops(target)}
    illegal = set().union(*groups.values()) - allowed
    if illegal:
        raise ValueError(
            f"convert_symbol: ops {sorted(illegal)} are in none of amp.list_lp16_ops, "
            "list_fp32_ops, list_lp16_fp32_ops, list_conditional_fp32_ops"
        )


def convert_symbol(
    sym,
    target_dtype="float16",
    target_dtype_ops=None,
    fp32_ops=None,
    conditional_fp32_ops=None,
    excluded_sym_names=None,
    data_names=None,
    cast_optional_params=False,
):
    """A copy of the float32 network ``sym`` with amp_cast/amp_multicast nodes per the lists."""
    if not isinstance(sym, Symbol):
        raise TypeError(f"convert_symbol: sym must be a Symbol, got {type(sym).__name__}")
    target = _target(target_dtype, "convert_symbol")
    attrs = sym.attr_dict()
    if data_names is None:  # inputs without a dtype of their own are data
        data_names = [n for n in sym.list_inputs() if "__dtype__" not in attrs.get(n, {})]
    plan = _plan(
        target,
        target_dtype_ops,
        fp32_ops,
        conditional_fp32_ops,
        excluded_sym_names,
        data_names,
        cast_optional_params,
    )
    converted = reduce_precision(sym, plan)
    params = set(sym.list_inputs()) - set(data_names)
    _set_input_dtypes(converted, params, {n: "float32" for n in data_names})
    return converted


def _set_input_dtypes(converted, params, given):
    """Record the inferred dtype of model parameters as ``__dtype__`` (MXNet's flag numbers)."""
    if not params:
        return
    arg_types, _, aux_types = converted.infer_type_partial(**given)
    names = converted.list_arguments() + converted.list_auxiliary_states()
    types = dict(zip(names, list(arg_types) + list(aux_types), strict=True))
    for node in converted._nodes():
        if node.op is None and node.name in params:
            dtype = "float32" if types.get(node.name) is None else np.dtype(types[node.name]).name
            node.set_attr("__dtype__", str(_DTYPE_FLAGS[dtype]))


def convert_model(
    sym,
    arg_params,
    aux_params,
    target_dtype="float16",
    target_dtype_ops=None,
    fp32_ops=None,
    conditional_fp32_ops=None,
    excluded_sym_names=None,
    cast_optional_params=False,
):
    """(converted symbol, arg_params, aux_params); params cast where the graph wants it."""
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise TypeError("convert_model: arg_params and aux_params must be dicts of name -> NDArray")
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    converted = convert_symbol(
        sym,
        target_dtype,
        target_dtype_ops,
        fp32_ops,
        conditional_fp32_ops,
        excluded_sym_names,
        data_names,
        cast_optional_params,
    )
    attrs = converted.attr_dict()
    flags = {v: k for k, v in _DTYPE_FLAGS.items()}
    for table in (arg_params, aux_params):
        for name, value in list(table.items()):
            flag = attrs.get(name, {}).get("__dtype__", "-1")
            if flag != "-1" and np.dtype(value.dtype).name != flags[int(flag)]:
                table[name] = value.astype(flags[int(flag)])
    return converted, arg_params, aux_params


def convert_bucketing_module(
    bucketing_mod,
    target_dtype="float16",
    target_dtype_ops=None,
    fp32_ops=None,
    conditional_fp32_ops=None,
    excluded_sym_names=None,
    cast_optional_params=False,
):
    """A new BucketingModule whose existing buckets' symbols (and params) are converted.

    As in MXNet, buckets made later by ``sym_gen`` are not converted.
    """
    if not isinstance(bucketing_mod, BucketingModule):
        raise TypeError(
            f"convert_bucketing_module: expected a BucketingModule, got {type(bucketing_mod)}"
        )
    if not bucketing_mod._buckets or not bucketing_mod.params_initialized:
        raise ValueError(
            "convert_bucketing_module: bind the module and initialize its params first "
            "(it has no bucket or no params yet)"
        )
    arg_params, aux_params = bucketing_mod.get_params()
    symbols = {}
    for key, module in bucketing_mod._buckets.items():
        symbols[key], arg_params, aux_params = convert_model(
            module.symbol, arg_params, aux_params, target_dtype, target_dtype_ops, fp32_ops,
            conditional_fp32_ops, excluded_sym_names, cast_optional_params,
        )  # fmt: skip
    return BucketingModule.load_dict(
        symbols,
        sym_gen=bucketing_mod._sym_gen,
        default_bucket_key=bucketing_mod._default_bucket_key,
        arg_params=arg_params,
        aux_params=aux_params,
        logger=bucketing_mod.logger,
        context=bucketing_mod._context,
        work_load_list=bucketing_mod._work_load_list,
        fixed_param_names=bucketing_mod._fixed_param_names,
        state_names=bucketing_mod._state_names,
        group2ctxs=bucketing_mod._group2ctxs,
        compression_params=bucketing_mod._compression_params,
    )
