# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record MXNet 1.9.1's AMP conversions (run with /work/mxenv/bin/python).

Writes tests/contrib/amp/amp_reference.json: for a few small networks, the
original symbol JSON, MXNet's ``amp.convert_symbol`` JSON, and the dtypes the
converted graph infers for its arguments, outputs and internal outputs.
"""

import json
import os
import sys

import mxnet as mx
import numpy as np
from mxnet.contrib import amp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contrib", "amp"))
from amp_networks import builders  # noqa: E402

_BUILT = builders(mx)
mlp, residual, multicast, conv = (_BUILT[k] for k in ("mlp", "residual", "multicast", "conv"))


def given_types(sym):
    # as a Module binds: float32 for every argument without a __dtype__ of its own
    attrs = sym.attr_dict()
    return {
        k: np.float32
        for k in sym.list_arguments()
        if "__dtype__" not in attrs.get(k, {}) or attrs[k]["__dtype__"] == "-1"
    }


def dtypes(sym, shapes):
    args, outs, auxs = sym.infer_type(**given_types(sym))
    internals = sym.get_internals()
    _, iouts, _ = internals.infer_type(**given_types(sym))
    name = lambda t: None if t is None else np.dtype(t).name  # noqa: E731
    return {
        "arguments": dict(zip(sym.list_arguments(), map(name, args))),
        "outputs": dict(zip(sym.list_outputs(), map(name, outs))),
        "aux": dict(zip(sym.list_auxiliary_states(), map(name, auxs))),
        "internals": dict(zip(internals.list_outputs(), map(name, iouts))),
    }


def case(builder, **kwargs):
    sym, shapes = builder()
    converted = amp.convert_symbol(sym, **kwargs)
    return {
        "original": json.loads(sym.tojson()),
        "kwargs": kwargs,
        "converted": json.loads(converted.tojson(remove_amp_cast=False)),
        "converted_stripped": json.loads(converted.tojson()),
        "dtypes": dtypes(converted, shapes),
    }


def model_case():
    sym, shapes = mlp()
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {
        n: mx.nd.ones(s)
        for n, s in zip(sym.list_arguments(), arg_shapes)
        if n not in ("data", "softmax_label")
    }
    result = {}
    for optional in (False, True):
        csym, cargs, _ = amp.convert_model(sym, dict(args), {}, cast_optional_params=optional)
        result[str(optional)] = {
            "converted": json.loads(csym.tojson(remove_amp_cast=False)),
            "arg_dtypes": {k: np.dtype(v.dtype).name for k, v in cargs.items()},
        }
    return result


def main():
    record = {
        "mxnet_version": mx.__version__,
        "mlp": case(mlp),
        "mlp_excluded": case(mlp, excluded_sym_names=["fc2"]),
        "mlp_optional": case(mlp, cast_optional_params=True),
        "residual": case(residual),
        "conv": case(conv),
        "multicast": case(multicast),
        "convert_model": model_case(),
        "output_suffixes": output_suffixes(),
        "tutorial": tutorial_case(),
        "init_symbol": init_case(),
        "init_multicast": init_multicast_case(),
    }
    out = os.path.join(os.path.dirname(__file__), "..", "contrib", "amp", "amp_reference.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")


def init_case():
    # after amp.init(), symbols built through mx.sym get casts at construction
    amp.init()
    sym, _ = mlp()
    return json.loads(sym.tojson(remove_amp_cast=False))


def init_multicast_case():
    # called after init_case: the widest-type wrapper puts amp_multicast in front
    sym, _ = multicast()
    return json.loads(sym.tojson(remove_amp_cast=False))


def tutorial_case():
    # the AMP tutorial's custom lists with cast_optional_params, on a small conv net
    sym, shapes = conv()
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    inputs = ("data", "softmax_label")
    args = {n: mx.nd.ones(s) for n, s in zip(sym.list_arguments(), arg_shapes) if n not in inputs}
    auxs = {n: mx.nd.ones(s) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    csym, cargs, cauxs = amp.convert_model(
        sym,
        args,
        auxs,
        target_dtype_ops=["Convolution"],
        fp32_ops=["SoftmaxOutput", "FullyConnected"],
        cast_optional_params=True,
    )
    return {
        "converted": json.loads(csym.tojson(remove_amp_cast=False)),
        "arg_dtypes": {k: np.dtype(v.dtype).name for k, v in cargs.items()},
        "aux_dtypes": {k: np.dtype(v.dtype).name for k, v in cauxs.items()},
    }


def output_suffixes():
    """{operator: suffix MXNet gives its output in cast names} for one/two-input ops.

    MXNet names a cast after the output it casts: ``<node>_<output name>``, or
    ``<node>_<index>`` for operators registered without output names.
    """
    from mxnet.contrib.amp.lists import symbol_fp16 as lists

    found = {}
    for op in sorted(set(lists.FP16_FP32_FUNCS + lists.WIDEST_TYPE_CASTS)):
        fn = getattr(mx.sym, op, None) or getattr(mx.sym._internal, op, None)
        if fn is None:
            continue
        fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
        for inputs in ([fc], [fc, fc]):
            try:
                out = fn(*inputs, name="x")
                conv = amp.convert_symbol(mx.sym.softmax(out, name="sm"))
            except Exception:  # noqa: BLE001 - ops needing parameters are skipped
                continue
            for n in json.loads(conv.tojson(remove_amp_cast=False))["nodes"]:
                if n["op"] == "amp_cast" and n["name"].startswith("x_"):
                    found[op] = n["name"][len("x_") : -len("_amp_cast_float32")]
            break
    return found


if __name__ == "__main__":
    main()
