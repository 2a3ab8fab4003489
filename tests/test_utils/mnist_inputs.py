"""Small deterministic MNIST idx files, shared by the tests and the recording script."""

import gzip
import os
import struct

import numpy as np

TRAIN, TEST = 10, 6
CASES = [
    {"batch_size": 2, "input_shape": [1, 28, 28], "num_parts": 1, "part_index": 0},
    {"batch_size": 3, "input_shape": [784], "num_parts": 1, "part_index": 0},
    {"batch_size": 2, "input_shape": [1, 28, 28], "num_parts": 2, "part_index": 1},
]


def arrays():
    """Images and labels by formula (no RNG), so any NumPy version makes the same bytes."""

    def images(count, offset):
        flat = (np.arange(count * 28 * 28, dtype=np.int64) * 37 + offset) % 256
        return flat.astype(np.uint8).reshape(count, 28, 28)

    def labels(count, offset):
        return ((np.arange(count) * 7 + offset) % 10).astype(np.uint8)

    return {
        "train-images-idx3-ubyte": images(TRAIN, 11),
        "train-labels-idx1-ubyte": labels(TRAIN, 3),
        "t10k-images-idx3-ubyte": images(TEST, 5),
        "t10k-labels-idx1-ubyte": labels(TEST, 1),
    }


def write(folder):
    """Write the four files twice: ``name.gz`` in ``folder``, plain ``name`` in ``folder/data``."""
    os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    for name, array in arrays().items():
        magic = 2051 if array.ndim == 3 else 2049
        raw = struct.pack(">" + "I" * (1 + array.ndim), magic, *array.shape) + array.tobytes()
        with open(os.path.join(folder, name + ".gz"), "wb") as handle:
            handle.write(gzip.compress(raw))
        with open(os.path.join(folder, "data", name), "wb") as handle:
            handle.write(raw)
