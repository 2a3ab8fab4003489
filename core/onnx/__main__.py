"""``python -m rebind.onnx export PREFIX EPOCH --shape data:1,3,224,224``: a checkpoint to ONNX.

Reads ``PREFIX-symbol.json`` and ``PREFIX-EPOCH.params`` (as ``mx.model.save_checkpoint``
wrote them) and writes an ONNX file (``PREFIX.onnx`` unless ``--output`` says otherwise).
"""

import argparse
import sys

import numpy as np

from .errors import OnnxExportError
from .export import DEFAULT_OPSET, export_model, graph_input_names


def _shape(text):
    """``NAME:D1,D2,...`` -> (name, shape)."""
    name, sep, dims = text.partition(":")
    try:
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
    except ValueError:
        shape = ()
    if not sep or not name or not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME:D1,D2,... (for example data:1,3,224,224)"
        )
    return name, shape


def _dtype(text):
    try:
        return np.dtype(text)
    except TypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a NumPy dtype name") from None


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m rebind.onnx", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="export a checkpoint to an ONNX file")
    export.add_argument("prefix", help="checkpoint prefix (PREFIX-symbol.json, PREFIX-NNNN.params)")
    export.add_argument("epoch", type=int, help="the epoch of the .params file")
    export.add_argument(
        "--shape",
        action="append",
        type=_shape,
        required=True,
        help="an input's shape, NAME:D1,D2,...; once per input",
    )
    export.add_argument("--dtype", type=_dtype, default=np.dtype("float32"), help="input dtype")
    export.add_argument("--dynamic", action="store_true", help="make the batch axis symbolic")
    export.add_argument("--opset", type=int, default=DEFAULT_OPSET, help="ONNX opset version")
    export.add_argument("--output", help="the ONNX file to write (default PREFIX.onnx)")
    return parser


def export_checkpoint(args, parser):
    from ..model import load_checkpoint

    symbol, arg_params, aux_params = load_checkpoint(args.prefix, args.epoch)
    params = {**arg_params, **aux_params}
    given = dict(args.shape)
    names = graph_input_names(symbol, params)
    if sorted(given) != sorted(names):
        parser.error(f"--shape names {sorted(given)} do not match the model's inputs {names}")
    return export_model(
        symbol,
        params,
        in_shapes=[given[name] for name in names],
        in_types=args.dtype,
        onnx_file_path=args.output or f"{args.prefix}.onnx",
        dynamic=args.dynamic,
        opset_version=args.opset,
    )


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        path = export_checkpoint(args, parser)
    except (OSError, ImportError, OnnxExportError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
