"""The inputs of the data-order recording (tests/recording/record_data_order.py).

Shared by the recording script (run under real MXNet) and the tests, so both
iterate over exactly the same examples; it imports only NumPy.
"""

import os
import struct

import numpy as np

MNIST_COUNT = 3000


def ndarray_inputs(count):
    """``count`` examples whose first feature and label are the example's number."""
    data = np.stack([np.arange(count), np.arange(count) * 10], axis=1).astype(np.float32)
    return data, np.arange(count).astype(np.float32) + 100


def sentences():
    """Sentences of lengths 1..8; word 0 of sentence k is k + 1 (0 is the padding)."""
    rng = np.random.RandomState(5)
    lengths = rng.randint(1, 9, size=90)
    return [
        [k + 1] + [int(w) for w in rng.randint(1, 50, size=n - 1)] for k, n in enumerate(lengths)
    ]


def write_mnist(folder, count):
    """Idx image and label files of ``count`` 28x28 images; pixels 0 and 1 encode the number."""
    images = np.zeros((count, 28, 28), np.uint8)
    images[:, 0, 0] = np.arange(count) % 256
    images[:, 0, 1] = np.arange(count) // 256
    labels = (np.arange(count) % 10).astype(np.uint8)
    image_path = os.path.join(folder, "images-idx3-ubyte")
    label_path = os.path.join(folder, "labels-idx1-ubyte")
    with open(image_path, "wb") as handle:
        handle.write(struct.pack(">4i", 2051, count, 28, 28) + images.tobytes())
    with open(label_path, "wb") as handle:
        handle.write(struct.pack(">2i", 2049, count) + labels.tobytes())
    return image_path, label_path


def mnist_ids(flat_pixels):
    """The example numbers of a flat MNIST batch (pixels were scaled by 1/256)."""
    scaled = np.asarray(flat_pixels, np.float64) * 256
    return [int(round(a + 256 * b)) for a, b in scaled[:, :2]]
