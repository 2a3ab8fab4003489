"""The GPU benchmark's workloads: models, seeded data, parameters, optimizer, worker protocol.

Shared by ``benchmarks/gpu.py`` (the driver) and its three workers
(``_gpu_rebind.py``, ``_gpu_torch.py``, ``_gpu_floor.py``), so that every
implementation trains the same model on the same host NumPy arrays from the
same starting parameters with the same optimizer:

    mlp       MLP 784-512-512-10 relu, batch 128 (``_common``'s)
    mlp4096   MLP 4096-4096-4096-4096-1000 relu, batch 1024 (compute-bound)
    lenet     LeNet, batch 64 (``_common``'s)
    lstm      the LSTM LM of ``_lstm_lm`` (vocabulary 10 000, embedding 200, two
              LSTMCell layers of 200, batch 32) unrolled over one fixed length of
              35 steps, no bucketing

A worker is run as ``python _gpu_X.py MODEL DEVICE SIZE BATCHES EPOCHS``:
DEVICE is ``gpu`` or ``cpu``, SIZE ``full`` or ``tiny`` (the MLP-4096 shrunk to
widths 256 for quick runs on a CPU), BATCHES the batches of an epoch and
EPOCHS the timed epochs after one warm-up epoch. It prints one JSON line
(``print_result``). Run as a script, ``python _gpu_models.py DEVICE`` prints
the device's name and the library versions as JSON.
"""

import importlib.util
import json
import sys

import _common
import _lstm_lm as lm
import _module_runs

MODEL_NAMES = ("mlp", "mlp4096", "lenet", "lstm")
BATCH = {"mlp": 128, "mlp4096": 1024, "lenet": 64, "lstm": lm.BATCH}
DESCRIPTIONS = {
    "mlp": _common.DESCRIPTIONS["mlp"],
    "mlp4096": "MLP 4096-4096-4096-4096-1000 relu, batch 1024",
    "lenet": _common.DESCRIPTIONS["lenet"],
    "lstm": "LSTM LM, vocabulary 10000, embedding 200, 2 x LSTM 200, 35 steps, batch 32",
}
LSTM_STEPS = 35
# (input, hidden, classes) of the MLP-4096; "tiny" keeps CPU development runs short
MLP4096_DIMS = {"full": (4096, 4096, 1000), "tiny": (256, 256, 100)}
MLP4096_LAYERS = 4  # fc1..fc4: three hidden layers and the output layer
MLP4096_LR = 0.02

# model -> (batches per epoch, timed epochs): the default run, --quick on a GPU, and
# --quick on a CPU (SIZE "tiny")
SCHEDULES = {
    "full": {"mlp": (128, 4), "mlp4096": (16, 6), "lenet": (128, 4), "lstm": (24, 3)},
    "quick": {"mlp": (64, 3), "mlp4096": (16, 3), "lenet": (64, 3), "lstm": (16, 2)},
    "tiny": {"mlp": (8, 2), "mlp4096": (4, 2), "lenet": (4, 2), "lstm": (2, 2)},
}


def optimizer_params(model):
    """SGD's learning rate, momentum and weight decay (Module rescales gradients by 1/batch)."""
    if model == "lstm":
        return {"learning_rate": lm.LEARNING_RATE, "momentum": 0.0, "wd": lm.WEIGHT_DECAY}
    rate = MLP4096_LR if model == "mlp4096" else _module_runs.LEARNING_RATES[model]
    return {"learning_rate": rate, "momentum": _module_runs.MOMENTUM, "wd": _module_runs.WD}


def mlp_widths(model, size="full"):
    """Layer widths of an MLP from input to output, e.g. (784, 512, 512, 10)."""
    if model == "mlp":
        return (784, *_common.MLP_HIDDEN["mlp"], 10)
    inputs, hidden, classes = MLP4096_DIMS[size]
    return (inputs,) + (hidden,) * (MLP4096_LAYERS - 1) + (classes,)


# -- symbols (the user's script, with the mx.sym API) -------------------------------------


def build_symbol(mx, model, size="full"):
    """The training symbol of ``model`` with ``mx``'s symbol API."""
    if model in ("mlp", "lenet"):
        return _common.build_symbol(mx, model)
    if model == "lstm":
        return lm.lm_symbol(mx, LSTM_STEPS)[0]
    net = mx.sym.Variable("data")
    widths = mlp_widths(model, size)
    for index, width in enumerate(widths[1:], start=1):
        net = mx.sym.FullyConnected(net, num_hidden=width, name=f"fc{index}")
        if index < len(widths) - 1:
            net = mx.sym.Activation(net, act_type="relu", name=f"relu{index}")
    return mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")


# -- parameters and data (float32 host NumPy arrays, seeded) -------------------------------


def initial_params(model, size="full"):
    """Parameter name -> float32 NumPy array, the same for every implementation."""
    import numpy as np

    if model == "lstm":
        return lm.make_params()
    if model != "mlp4096":
        arrays = _common.make_arrays(model)
        return {name: arrays[name] for name in _common.param_shapes(model)}
    rng = np.random.default_rng(_common.SEED + 4096)
    widths, params = mlp_widths(model, size), {}
    for index in range(1, len(widths)):
        fan_in, fan_out = widths[index - 1], widths[index]
        weight = rng.standard_normal((fan_out, fan_in), dtype=np.float32)
        weight *= np.float32(np.sqrt(2.0 / fan_in))  # He scaling for relu
        params[f"fc{index}_weight"] = weight
        params[f"fc{index}_bias"] = np.zeros(fan_out, dtype=np.float32)
    return params


def dataset(model, batches, size="full"):
    """``(data, labels)``: ``batches`` batches of the model's seeded synthetic data.

    MLP and LeNet: ``_common.make_dataset``. MLP-4096: each example its class's
    fixed pattern plus standard normal noise, a fifth of the labels random.
    LSTM: ``_lstm_lm``'s sentences of 26 to 35 Zipf-distributed words padded
    to 35, the label the data shifted left (data and labels ``(samples, 35)``).
    """
    import numpy as np

    samples = batches * BATCH[model]
    if model in ("mlp", "lenet"):
        return _common.make_dataset(model, samples)
    if model == "lstm":
        epoch = lm.make_batches(per_bucket=batches, buckets=(LSTM_STEPS,))
        return (
            np.concatenate([data for _, data, _ in epoch]),
            np.concatenate([label for _, _, label in epoch]),
        )
    inputs, _, classes = MLP4096_DIMS[size]
    rng = np.random.default_rng(_common.SEED + 4097)
    patterns = 0.2 * rng.standard_normal((classes, inputs), dtype=np.float32)
    labels = rng.integers(0, classes, samples)
    data = rng.standard_normal((samples, inputs), dtype=np.float32)
    data += patterns[labels]
    noisy = rng.random(samples) < _common.LABEL_NOISE
    labels[noisy] = rng.integers(0, classes, int(noisy.sum()))
    return data, labels.astype(np.float32)


# -- the worker protocol -------------------------------------------------------------------


def parse_job(argv):
    """``(model, device, size, batches, epochs)`` from a worker's command line."""
    if len(argv) != 5 or argv[0] not in MODEL_NAMES or argv[1] not in ("gpu", "cpu"):
        raise SystemExit(
            f"usage: {sys.argv[0]} MODEL DEVICE SIZE BATCHES EPOCHS "
            f"(MODEL in {MODEL_NAMES}, DEVICE gpu|cpu, SIZE full|tiny); got {argv}"
        )
    return argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])


def array_module(device):
    """CuPy for ``gpu`` (SystemExit with a clear message without it), NumPy for ``cpu``."""
    if device == "cpu":
        import numpy

        return numpy
    try:
        import cupy
    except ImportError as exc:
        raise SystemExit(f"--device gpu needs CuPy, which does not import: {exc}") from None
    return cupy


def to_host(array):
    """A NumPy copy of a NumPy, CuPy or torch array (or a rebind NDArray)."""
    import numpy as np

    if hasattr(array, "asnumpy"):
        return array.asnumpy()
    if hasattr(array, "detach"):
        return array.detach().cpu().numpy()
    if hasattr(array, "get") and type(array).__module__.startswith("cupy"):
        return array.get()
    return np.asarray(array)


def summary(samples, stamps, correct, seen, params):
    """The common part of a worker's result: rates after the warm-up, accuracy, norm."""
    return {
        "samples_per_s": _module_runs.per_second(samples, stamps),
        "last_epoch_acc": correct / seen,
        "param_norm": _module_runs.norm_of(to_host(value) for value in params),
    }


def cupy_pool():
    """CuPy's default memory pool now: ``{'pool_used_mib', 'pool_total_mib'}``."""
    import cupy

    pool = cupy.get_default_memory_pool()
    return {
        "pool_used_mib": pool.used_bytes() / 2**20,
        "pool_total_mib": pool.total_bytes() / 2**20,
    }


def print_result(result):
    """Print the worker's one JSON line (the driver reads the last line of stdout)."""
    print(json.dumps(result), flush=True)


def probe(device):
    """Device name and library versions, as a dict (imports CuPy for the GPU only)."""
    import numpy

    import rebind

    info = {"python": sys.version.split()[0], "numpy": numpy.__version__}
    info["rebind"] = rebind.__version__
    if importlib.util.find_spec("torch") is not None:
        from importlib.metadata import version

        try:
            info["torch"] = version("torch")
        except Exception:  # a torch without package metadata still imports
            info["torch"] = "installed"
    if device == "cpu":
        info["device_name"] = "cpu"
        return info
    cupy = array_module("gpu")
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    info["device_name"] = name.decode() if isinstance(name, bytes) else str(name)
    info["cupy"] = cupy.__version__
    info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
    return info


if __name__ == "__main__":
    print_result(probe(sys.argv[1] if len(sys.argv) > 1 else "gpu"))
