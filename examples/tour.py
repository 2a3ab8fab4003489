"""A short tour of rebind's foundation: plugins, contexts, NDArrays, .params files.

Run it with ``python examples/tour.py``. Every line works the same with
``import mxnet as mx`` on MXNet 1.9, except the registry inspection, which is
rebind's own.
"""

import tempfile
from pathlib import Path

import numpy as np

import rebind as mx


def show_plugins():
    print("Backends registered through the plugin hooks:")
    backends = mx.registry.get_registry("backends")
    for name, backend in backends.items():
        print(f"  {backend.describe():32s} from plugin {backends.owner(name)}")
    print(f"Default context: {mx.current_context()}, GPUs visible: {mx.num_gpus()}\n")


def show_arithmetic():
    mx.random.seed(7)
    x = mx.nd.random.uniform(-1, 1, shape=(2, 3))
    w = mx.nd.array(np.arange(12).reshape(3, 4))
    y = mx.nd.dot(x, w) * 0.5 + 1
    print("x =", x)
    print("dot(x, w) * 0.5 + 1 > 2 :", y > 2)
    print("reshape with MXNet codes (0, -1):", y.reshape((0, -1)).shape, "\n")


def show_checkpoint_file():
    params = {"arg:fc1_weight": mx.nd.ones((4, 3)), "aux:bn_moving_var": mx.nd.zeros(3)}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "net-0001.params"
        mx.nd.save(path, params)
        raw = path.read_bytes()
        loaded = mx.nd.load(path)
    print(
        f"Saved {len(params)} arrays in MXNet's .params format: {len(raw)} bytes, "
        f"magic {raw[:8].hex()}"
    )
    for name, array in loaded.items():
        print(f"  {name:20s} {array.shape} {array.dtype.__name__} @{array.context}")
    try:
        mx.nd.load_frombuffer(raw[:-5])
    except mx.FormatError as error:
        print(f"A truncated file is refused cleanly:\n  {error}")


if __name__ == "__main__":
    show_plugins()
    show_arithmetic()
    show_checkpoint_file()
