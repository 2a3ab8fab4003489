"""The inputs shared by tests/recording/record_image.py (MXNet) and the tests (rebind).

Plain NumPy and the standard library only: the recorder runs under MXNet's Python 3.8.
"""

import os

import numpy as np

EIGVEC = [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]]

CREATE_AUGMENTER_CASES = {
    "center": {"data_shape": (3, 8, 8)},
    "resize_norm": {
        "data_shape": (3, 10, 12),
        "resize": 14,
        "mean": True,
        "std": True,
        "inter_method": 1,
    },
    "mean_array": {
        "data_shape": (3, 8, 8),
        "mean": [100.0, 110.0, 120.0],
        "std": [50.0, 60.0, 70.0],
    },
    "rand_crop": {"data_shape": (3, 9, 7), "rand_crop": True, "rand_mirror": True},
    "everything": {
        "data_shape": (3, 8, 8),
        "resize": 12,
        "rand_crop": True,
        "rand_resize": True,
        "rand_mirror": True,
        "mean": True,
        "std": True,
        "brightness": 0.1,
        "contrast": 0.1,
        "saturation": 0.1,
        "hue": 0.1,
        "pca_noise": 0.1,
        "rand_gray": 0.2,
        "inter_method": 10,
    },
}

# the images of the list-file dataset, in list order, with their labels
DATASET = [
    ("color_png", 0.0),
    ("small_png", 1.0),
    ("gray_png", 2.0),
    ("wide_png", 3.0),
    ("color_png", 4.0),
]

_BASE = {"batch_size": 2, "data_shape": (3, 8, 8)}
ITER_CASES = {
    "pad": dict(_BASE, source="lst"),
    "discard": dict(_BASE, source="lst", last_batch_handle="discard"),
    "roll_over": dict(_BASE, source="lst", last_batch_handle="roll_over"),
    "resize_mean": dict(_BASE, source="lst", resize=10, mean=True, std=True, inter_method=1),
    "parts": dict(_BASE, source="lst", num_parts=2, part_index=1),
    "shuffle": dict(_BASE, source="lst", shuffle=True, batch_size=3),
    "label2": dict(_BASE, source="lst2", label_width=2, data_name="img", label_name="lab"),
    "imglist": dict(_BASE, source="imglist"),
    "rec": dict(_BASE, source="rec", batch_size=3),
    "rec_shuffle": dict(_BASE, source="rec", shuffle=True),
}


def images():
    """Small BGR (or single-channel) uint8 images: smooth gradients plus noise."""
    rng = np.random.RandomState(0)
    out = {}
    for name, (h, w, c) in {
        "color": (24, 32, 3),
        "small": (13, 9, 3),
        "gray": (16, 12, 1),
        "wide": (10, 30, 3),
    }.items():
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([x * 7 + y * 3, y * 9 + 20, (x + y) * 4 + 60], axis=-1)[..., :c]
        noise = rng.randint(0, 40, size=(h, w, c))
        out[name] = np.clip(base + noise, 0, 255).astype(np.uint8)
        if c == 1:
            out[name] = out[name][:, :, 0]
    return out


def write_dataset(root, encoded):
    """The DATASET's files under root, plus data.lst (one label) and data2.lst (two)."""
    lines, lines2 = [], []
    for index, (name, label) in enumerate(DATASET):
        fname = _file_name(index, name)
        with open(os.path.join(root, fname), "wb") as f:
            f.write(encoded[name])
        lines.append(f"{index}\t{label:f}\t{fname}\n")
        lines2.append(f"{index}\t{label:f}\t{label * 0.5 + 1:f}\t{fname}\n")
    with open(os.path.join(root, "data.lst"), "w") as f:
        f.writelines(lines)
    with open(os.path.join(root, "data2.lst"), "w") as f:
        f.writelines(lines2)
    return [[label, _file_name(i, n)] for i, (n, label) in enumerate(DATASET)]


def _file_name(index, name):
    return "img{}_{}".format(index, name.replace("_", "."))


def write_rec(root, encoded, recordio):
    """data.rec / data.idx holding the DATASET through ``recordio`` (MXNet's or rebind's)."""
    rec, idx = os.path.join(root, "data.rec"), os.path.join(root, "data.idx")
    writer = recordio.MXIndexedRecordIO(idx, rec, "w")
    for index, (name, label) in enumerate(DATASET):
        header = recordio.IRHeader(0, label, index, 0)
        writer.write_idx(index, recordio.pack(header, encoded[name]))
    writer.close()
    return rec
