"""Train a small CNN from a RecordIO file with ImageRecordIter and Module.fit.

Packs scikit-learn's 8x8 digits, enlarged to 16x16 grayscale PNGs, into
``train.rec`` / ``val.rec`` (with ``.idx`` files) using ``mx.recordio``, the way
``tools/im2rec.py`` packs image folders. Training reads them through
``mx.io.ImageRecordIter`` with MXNet's on-the-fly augmentation (padding plus a
random 16x16 crop, small rotations), pixels scaled to [0, 1]; validation
reads the same way without augmentation. rebind prints one progress line per
epoch. The script is plain MXNet 1.9: with ``import mxnet as mx`` in place of
``import rebind as mx`` it runs unchanged (MXNet logs its epoch lines at INFO).

    python examples/train_imagerecord.py [--num-epochs 8] [--batch-size 64] [--threads 2]

Needs scikit-learn and OpenCV: the ``examples`` extra (``python -m pip install -e
".[examples]"`` from a checkout) installs both.
"""

import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import rebind as mx

NUM_VALIDATION = 360


def write_records(folder):
    """``train.rec`` and ``val.rec`` (+ ``.idx``) of the digits as 16x16 uint8 PNGs."""
    digits = load_digits()
    images = np.kron(digits.images, np.ones((2, 2))) * (255.0 / 16.0)
    images = images.round().astype(np.uint8)
    order = np.random.RandomState(0).permutation(len(images))
    parts = {"val": order[:NUM_VALIDATION], "train": order[NUM_VALIDATION:]}
    paths = {}
    for name, rows in parts.items():
        rec, idx = os.path.join(folder, f"{name}.rec"), os.path.join(folder, f"{name}.idx")
        writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
        for key, row in enumerate(rows):
            header = mx.recordio.IRHeader(0, float(digits.target[row]), key, 0)
            # for PNG, quality is the compression level (0-9); the default 95 is JPEG's
            record = mx.recordio.pack_img(header, images[row], quality=9, img_fmt=".png")
            writer.write_idx(key, record)
        writer.close()
        paths[name] = (rec, idx)
    return paths


def record_iters(paths, batch_size, threads):
    """The training iterator (augmented, shuffled) and the validation one (plain)."""
    common = {
        "data_shape": (1, 16, 16),
        "batch_size": batch_size,
        "scale": 1.0 / 255,
        "preprocess_threads": threads,
        "verbose": False,
    }
    train = mx.io.ImageRecordIter(
        path_imgrec=paths["train"][0],
        path_imgidx=paths["train"][1],
        shuffle=True,
        pad=2,
        fill_value=0,
        rand_crop=True,
        max_rotate_angle=10,
        seed=1,
        **common,
    )
    val = mx.io.ImageRecordIter(path_imgrec=paths["val"][0], **common)
    return train, val


def build_cnn():
    """(1, 16, 16) -> conv 3x3x16 -> pool 2x2 -> conv 3x3x32 -> pool 2x2 -> 64 -> 10."""
    net = mx.sym.Variable("data")
    for number, filters in enumerate((16, 32), start=1):
        net = mx.sym.Convolution(
            net, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{number}"
        )
        net = mx.sym.Activation(net, act_type="relu", name=f"relu{number}")
        net = mx.sym.Pooling(
            net, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{number}"
        )
    net = mx.sym.Flatten(net, name="flatten")
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu3")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        paths = write_records(folder)
        train, val = record_iters(paths, args.batch_size, args.threads)
        print(f"train: {train.provide_data[0]}, labels {train.provide_label[0]}")
        module = mx.mod.Module(build_cnn(), context=mx.cpu())
        module.fit(
            train,
            eval_data=val,
            eval_metric="acc",
            optimizer="adam",
            optimizer_params={"learning_rate": 0.003},
            initializer=mx.init.Xavier(),
            num_epoch=args.num_epochs,
        )
        accuracy = dict(module.score(val, "acc"))["accuracy"]
        print(f"Validation accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
