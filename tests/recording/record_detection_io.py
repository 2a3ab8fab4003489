"""Record MXNet 1.9.1's detection data pipeline on small generated data (run with real MXNet).

    /work/mxenv/bin/python tests/recording/record_detection_io.py

Writes tests/golden/detection_io/: PNG images ``img<i>.png`` with their detection
list ``det.lst`` (header width 3 with an extra header value, object width 6 with
an extra value per object, 1 to 4 objects, some without area), MXNet's own
tools/im2rec.py ``--pack-label`` output of that list (``det.rec``/``det.idx``),
``cases.json`` (the keyword arguments of every configuration) and ``outputs.npz``
(per case ``<case>.data`` / ``.label`` / ``.pad`` over two epochs, and the
augmenter-level results). Random cases seed Python's ``random`` (which MXNet's
Python detection augmenters draw from) right before iterating.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "golden", "detection_io")
MIRROR = "/work/.mirror/apache+mxnet/repo"
COUNT = 7


def make_images():
    """Images of assorted sizes and their detection labels, as an im2rec list."""
    import cv2

    rs = np.random.RandomState(3)
    lines = []
    for i in range(COUNT):
        rows, cols = 18 + 3 * i, 30 - 2 * i
        img = rs.randint(0, 256, size=(rows, cols, 3)).astype(np.uint8)
        cv2.imwrite(os.path.join(OUT, f"img{i}.png"), img)
        label = [3, 6, 7.5]
        for k in range(i % 4 + 1):
            x0, y0 = 0.1 * k + 0.05 * (i % 3), 0.15 + 0.05 * k
            label += [k % 3, x0, y0, x0 + 0.3 + 0.02 * i, y0 + 0.4, 0.5 * k]
        if i in (2, 5):  # an object without area, dropped by every reader
            label += [1, 0.6, 0.6, 0.6, 0.9, 9.0]
        fields = "\t".join(f"{v:.6g}" for v in label)
        lines.append(f"{i}\t{fields}\timg{i}.png\n")
    with open(os.path.join(OUT, "det.lst"), "w") as handle:
        handle.writelines(lines)


def run_im2rec():
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "im2rec.py")
        source = subprocess.run(
            ["git", "-C", MIRROR, "show", "1.9.1:tools/im2rec.py"], capture_output=True, check=True
        ).stdout
        open(script, "wb").write(source)
        subprocess.run(
            [sys.executable, script, os.path.join(OUT, "det"), OUT, "--pack-label",
             "--encoding", ".png", "--num-thread", "1"],
            check=True,
        )  # fmt: skip


DETITER = {
    "rec_pad": {"path_imgrec": "det.rec"},
    "rec_idx_discard": {
        "path_imgrec": "det.rec",
        "path_imgidx": "det.idx",
        "last_batch_handle": "discard",
    },
    "rec_roll_over": {"path_imgrec": "det.rec", "last_batch_handle": "roll_over"},
    "list": {"path_imglist": "det.lst", "path_root": "."},
    "list_resize_mean": {
        "path_imglist": "det.lst",
        "path_root": ".",
        "resize": 24,
        "mean": True,
        "std": True,
    },
    "random_crop_pad_mirror": {
        "path_imgrec": "det.rec",
        "rand_crop": 1,
        "rand_pad": 0.5,
        "rand_mirror": True,
        "area_range": (0.3, 2.5),
        "_seed": 5,
    },
    "random_multi_crop": {
        "path_imgrec": "det.rec",
        "rand_crop": 0.8,
        "min_object_covered": [0.1, 0.5, 0.9],
        "aspect_ratio_range": (0.5, 2.0),
        "max_attempts": 20,
        "_seed": 11,
    },
    "random_pad_only": {
        "path_imgrec": "det.rec",
        "rand_pad": 1,
        "pad_val": (10, 20, 30),
        "_seed": 2,
    },
}
DETREC = {
    "plain": {},
    "pad_width": {"label_pad_width": 40, "label_pad_value": -2.5},
    "fit": {"resize_mode": "fit", "data_shape": (3, 20, 20)},
    "shrink_resize": {"resize_mode": "shrink", "resize": 14, "inter_method": 2},
    "normalize": {
        "mean_r": 120,
        "mean_g": 110,
        "mean_b": 100,
        "std_r": 50,
        "std_g": 60,
        "std_b": 70,
        "scale": 0.5,
    },
    "no_round": {"round_batch": False, "batch_size": 4},
    "imglist": {"path_imglist": "det.lst"},
    "part1": {"num_parts": 2, "part_index": 1, "batch_size": 2},
    "nearest": {"inter_method": 0, "data_shape": (3, 24, 20)},
}
DETREC_BASE = {"path_imgrec": "det.rec", "data_shape": (3, 16, 16), "batch_size": 3,
               "preprocess_threads": 1}  # fmt: skip


def record_detiter(outputs):
    for case, spec in DETITER.items():
        kwargs = {
            k: (os.path.join(OUT, v) if k.startswith("path_") else v)
            for k, v in spec.items()
            if k != "_seed"
        }
        it = mx.image.ImageDetIter(3, (3, 16, 16), **kwargs)
        outputs[f"detiter.{case}.label_shape"] = np.array(it.label_shape)
        if "_seed" in spec:
            random.seed(spec["_seed"])
        data, label, pad = [], [], []
        for _ in range(2):
            for batch in it:
                data.append(batch.data[0].asnumpy())
                label.append(batch.label[0].asnumpy())
                pad.append(batch.pad)
            it.reset()
        outputs[f"detiter.{case}.data"] = np.stack(data)
        outputs[f"detiter.{case}.label"] = np.stack(label)
        outputs[f"detiter.{case}.pad"] = np.array(pad)


def record_detrec(outputs):
    for case, spec in DETREC.items():
        kwargs = dict(DETREC_BASE, **spec)
        kwargs = {
            k: (os.path.join(OUT, v) if k.startswith("path_") else v) for k, v in kwargs.items()
        }
        it = mx.io.ImageDetRecordIter(**kwargs)
        outputs[f"detrec.{case}.label_shape"] = np.array(it.provide_label[0][1])
        data, label, pad = [], [], []
        for _ in range(2):
            for batch in it:
                data.append(batch.data[0].asnumpy())
                label.append(batch.label[0].asnumpy())
                pad.append(batch.pad)
            it.reset()
        outputs[f"detrec.{case}.data"] = np.stack(data)
        outputs[f"detrec.{case}.label"] = np.stack(label)
        outputs[f"detrec.{case}.pad"] = np.array(pad)


def record_augmenters(outputs, dumps):
    rs = np.random.RandomState(8)
    src = mx.nd.array(rs.randint(0, 256, size=(40, 50, 3)), dtype="uint8")
    label = np.array(
        [[0, 0.1, 0.2, 0.5, 0.6, 1], [2, 0.4, 0.3, 0.9, 0.95, 2], [1, 0.7, 0.1, 0.8, 0.2, 3]],
        np.float32,
    )
    augs = {
        "crop": mx.image.DetRandomCropAug(min_object_covered=0.3, area_range=(0.2, 0.9)),
        "crop_fixed": mx.image.DetRandomCropAug(aspect_ratio_range=1.0, area_range=0.5),
        "pad": mx.image.DetRandomPadAug(area_range=(1.5, 3.0), pad_val=(1, 2, 3)),
        "flip": mx.image.DetHorizontalFlipAug(0.5),
        "select": mx.image.DetRandomSelectAug(
            [mx.image.DetHorizontalFlipAug(1.0), mx.image.DetRandomCropAug()], 0.3
        ),
    }
    for name, aug in augs.items():
        random.seed(21)
        for trial in range(6):
            out, new = aug(src.copy(), label.copy())
            outputs[f"aug.{name}.{trial}.image"] = out.asnumpy()
            outputs[f"aug.{name}.{trial}.label"] = new
        dumps[name] = aug.dumps()
    configs = {
        "default": {},
        "all": {
            "resize": 30,
            "rand_crop": 0.5,
            "rand_pad": 0.5,
            "rand_gray": 0.1,
            "rand_mirror": True,
            "mean": True,
            "std": True,
            "brightness": 0.1,
            "contrast": 0.1,
            "saturation": 0.1,
            "pca_noise": 0.05,
            "hue": 0.1,
            "inter_method": 1,
            "min_object_covered": [0.3, 0.5],
            "area_range": (0.3, 2.0),
            "max_attempts": 10,
            "pad_val": (1, 2, 3),
        },
    }
    for name, kwargs in configs.items():
        augs = mx.image.CreateDetAugmenter((3, 20, 24), **kwargs)
        dumps[f"create.{name}"] = [a.dumps() for a in augs]


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    make_images()
    run_im2rec()
    outputs, dumps = {}, {}
    record_detiter(outputs)
    record_detrec(outputs)
    record_augmenters(outputs, dumps)
    np.savez_compressed(os.path.join(OUT, "outputs.npz"), **outputs)
    spec = {"detiter": DETITER, "detrec": DETREC, "detrec_base": DETREC_BASE, "dumps": dumps}
    with open(os.path.join(OUT, "cases.json"), "w") as handle:
        json.dump(spec, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
