"""The model-zoo files ``benchmarks/cnn.py`` runs: checkpoints, ONNX exports, weights for PyTorch.

A network ``NAME`` is read from ``ZOO/NAME-symbol.json`` and ``ZOO/NAME-0000.params``,
files MXNet 1.9.1's ``HybridBlock.export`` wrote (``tests/recording/record_model_zoo.py
--params ZOO``). When they are missing they are made here without MXNet: the
symbol JSON is the recorded one (``tests/golden/model_zoo/NAME-symbol.json``,
copied byte for byte) and the parameters are ``zoo_params.param_value(name,
shape)``, the values the recorder set before exporting, written with rebind's
``nd.save`` in MXNet's format. Runs in the benchmark's own process (rebind).
"""

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GOLDEN = REPO / "tests" / "golden" / "model_zoo"
sys.path.insert(0, str(REPO / "tests" / "recording"))

import zoo_params  # noqa: E402

NETWORKS = zoo_params.NETWORKS


def default_folder():
    """``REBIND_ZOO``, else ``zoo`` beside the repository."""
    return Path(os.environ.get("REBIND_ZOO") or REPO.parent / "zoo")


def side(name):
    """The input images' side of network ``name`` (224; Inception-v3 299)."""
    return NETWORKS[name][1]


def ensure_checkpoint(folder, name):
    """The checkpoint prefix of ``name`` in ``folder``, built first when missing; (prefix, note)."""
    prefix = Path(folder) / name
    symbol_file, params_file = Path(f"{prefix}-symbol.json"), Path(f"{prefix}-0000.params")
    if symbol_file.exists() and params_file.exists():
        return str(prefix), ""
    import rebind as mx

    golden = GOLDEN / f"{name}-symbol.json"
    if not golden.exists():
        raise FileNotFoundError(f"{name}: neither {symbol_file} nor the recorded {golden} exist")
    Path(folder).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(golden, symbol_file)
    symbol = mx.sym.load(str(symbol_file))
    arg_shapes, _, aux_shapes = symbol.infer_shape(data=(1, 3, side(name), side(name)))
    values = {}
    for kind, names, shapes in (
        ("arg", symbol.list_arguments(), arg_shapes),
        ("aux", symbol.list_auxiliary_states(), aux_shapes),
    ):
        for pname, shape in zip(names, shapes, strict=True):
            if pname != "data":
                values[f"{kind}:{pname}"] = mx.nd.array(zoo_params.param_value(pname, shape))
    mx.nd.save(str(params_file), values)
    return str(prefix), f"{name}: built {params_file.name} from zoo_params (no export found)"


def export_onnx(prefix, name, batch, folder):
    """rebind's ``mx.onnx.export_model`` of the checkpoint at one batch size; the file's path."""
    import numpy as np

    import rebind as mx

    path = Path(folder) / f"{name}-b{batch}.onnx"
    if not path.exists():
        symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, 0)
        params = dict(arg_params)
        params.update(aux_params)
        shape = (batch, 3, side(name), side(name))
        mx.onnx.export_model(symbol, params, [shape], np.float32, str(path))
    return str(path)


def torch_weights(prefix, name, folder):
    """The checkpoint's parameters as an .npz (names without arg:/aux:), for the PyTorch worker."""
    import numpy as np

    import rebind as mx

    path = Path(folder) / f"{name}-weights.npz"
    if not path.exists():
        loaded = mx.nd.load(f"{prefix}-0000.params")
        np.savez(str(path), **{k.split(":", 1)[-1]: v.asnumpy() for k, v in loaded.items()})
    return str(path)


def has_dropout(prefix):
    """Whether the graph has Dropout (training outputs are then random, not comparable)."""
    with open(f"{prefix}-symbol.json") as handle:
        return '"Dropout"' in handle.read()
