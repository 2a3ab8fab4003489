"""Record MXNet 1.9.1's ImageRecordIter batches on small .rec files (run with real MXNet).

    /work/mxenv/bin/python tests/recording/record_image_record_iter.py

Writes under tests/io/data/image_record/: the record files (``png.rec``/``.idx``:
eleven PNG images of assorted sizes with scalar labels; ``multi.rec``: five PNG
images with 3-value labels; ``jpeg.rec``: five JPEG images; ``rgba.rec``: four
4-channel PNG images; ``png.lst``: an image list with two labels per image),
``cases.json`` (the keyword arguments of every configuration, paths relative to
that folder) and ``batches.npz`` (for each configuration, two epochs of
batches: ``<case>.data``, ``<case>.label``, ``<case>.pad``, ``<case>.epoch``).
No configuration uses random augmentation, so the batches are exact references.
"""

import json
import os
import shutil
import tempfile

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "io", "data", "image_record")
EPOCHS = 2
SIZES = [
    (16, 16),
    (20, 26),
    (24, 18),
    (12, 30),
    (30, 14),
    (17, 23),
    (16, 40),
    (40, 22),
    (9, 11),
    (25, 25),
    (21, 19),
]


def _image(rs, rows, cols, channels=3):
    """A smooth gradient plus noise, so JPEG keeps it close and every pixel differs."""
    yy, xx = np.mgrid[0:rows, 0:cols]
    base = (yy * 200 // max(rows - 1, 1) + xx * 50 // max(cols - 1, 1)).astype(np.int32)
    planes = [(base + 30 * c + rs.randint(0, 25, size=(rows, cols))) % 256 for c in range(channels)]
    return np.stack(planes, axis=2).astype(np.uint8)


def _write(name, images, labels, fmt):
    writer = mx.recordio.MXIndexedRecordIO(
        os.path.join(OUT, name + ".idx"), os.path.join(OUT, name + ".rec"), "w"
    )
    for i, img in enumerate(images):
        label = labels[i]
        flag = 0 if np.isscalar(label) else len(label)
        header = mx.recordio.IRHeader(flag, label, i, 0)
        writer.write_idx(i, mx.recordio.pack_img(header, img, quality=90, img_fmt=fmt))
    writer.close()


def make_files():
    os.makedirs(OUT, exist_ok=True)
    rs = np.random.RandomState(17)
    png = [_image(rs, r, c) for r, c in SIZES]
    _write("png", png, [float(i % 5) for i in range(len(png))], ".png")
    multi = [_image(rs, r, c) for r, c in SIZES[:5]]
    _write("multi", multi, [[float(i), i + 0.5, -float(i)] for i in range(5)], ".png")
    jpeg = [_image(rs, 32 + 4 * i, 40 - 3 * i) for i in range(5)]
    _write("jpeg", jpeg, [float(i) for i in range(5)], ".jpg")
    rgba = [_image(rs, 18 + i, 20 - i, channels=4) for i in range(4)]
    _write("rgba", rgba, [float(i) for i in range(4)], ".png")
    with open(os.path.join(OUT, "png.lst"), "w") as handle:
        for i in range(len(png)):
            handle.write(f"{i}\t{i * 10.0}\t{i + 0.25}\timg{i}.png\n")


BASE = {"path_imgrec": "png.rec", "data_shape": (3, 16, 16), "batch_size": 4}
CASES = {
    "plain": {},
    "plain_threads1": {"preprocess_threads": 1},
    "no_round": {"round_batch": False},
    "with_idx": {"path_imgidx": "png.idx"},
    "big_batch": {"batch_size": 12},
    "resize": {"resize": 20},
    "resize_nn": {"resize": 20, "inter_method": 0},
    "resize_cubic": {"resize": 24, "inter_method": 2},
    "resize_area": {"resize": 12, "inter_method": 3, "data_shape": (3, 10, 10)},
    "resize_auto": {"resize": 18, "inter_method": 9},
    "norm": {
        "mean_r": 123.68,
        "mean_g": 116.28,
        "mean_b": 103.53,
        "std_r": 58.4,
        "std_g": 57.12,
        "std_b": 57.38,
    },
    "scale": {"mean_r": 10.0, "mean_g": 20.0, "mean_b": 30.0, "scale": 1.0 / 255},
    "crop": {"data_shape": (3, 12, 18)},
    "mirror": {"mirror": True},
    "pad_fill": {"pad": 2, "fill_value": 7, "data_shape": (3, 18, 18)},
    "crop_size": {"min_crop_size": 9, "max_crop_size": 9, "data_shape": (3, 12, 12)},
    "gray": {"data_shape": (1, 16, 16)},
    "uint8": {"dtype": "uint8"},
    "int8_mean": {"dtype": "int8", "mean_r": 100.4, "mean_g": 50.0, "mean_b": 200.0},
    "uint8_iter": {"_iter": "ImageRecordUInt8Iter"},
    "label_width": {"path_imgrec": "multi.rec", "label_width": 3, "batch_size": 2},
    "imglist": {"path_imglist": "png.lst", "label_width": 2},
    "part0of3": {"num_parts": 3, "part_index": 0, "batch_size": 2},
    "part1of3": {"num_parts": 3, "part_index": 1, "batch_size": 2},
    "part2of3": {"num_parts": 3, "part_index": 2, "batch_size": 2},
    "idx_part0of3": {"num_parts": 3, "part_index": 0, "batch_size": 2, "path_imgidx": "png.idx"},
    "idx_part2of3": {"num_parts": 3, "part_index": 2, "batch_size": 2, "path_imgidx": "png.idx"},
    "jpeg": {"path_imgrec": "jpeg.rec", "data_shape": (3, 24, 24), "batch_size": 2},
    "jpeg_resize": {
        "path_imgrec": "jpeg.rec",
        "data_shape": (3, 20, 20),
        "resize": 22,
        "batch_size": 2,
    },
    "rgba": {
        "path_imgrec": "rgba.rec",
        "data_shape": (4, 14, 14),
        "batch_size": 3,
        "mean_a": 5.0,
        "std_a": 2.0,
    },
    "names": {"data_name": "img", "label_name": "lab"},
    "mean_img": {"mean_img": "@mean.nd"},
}


def _kwargs(case, folder, tmp):
    kwargs = dict(BASE, **CASES[case])
    kwargs.pop("_iter", None)
    for key in ("path_imgrec", "path_imgidx", "path_imglist"):
        if key in kwargs:
            kwargs[key] = os.path.join(folder, kwargs[key])
    if "mean_img" in kwargs:
        kwargs["mean_img"] = os.path.join(tmp, kwargs["mean_img"][1:])
    return kwargs


def record_case(case, arrays, tmp):
    kwargs = _kwargs(case, OUT, tmp)
    make = getattr(mx.io, CASES[case].get("_iter", "ImageRecordIter"))
    it = make(preprocess_threads=kwargs.pop("preprocess_threads", 2), **kwargs)
    rows = {"data": [], "label": [], "pad": [], "epoch": []}
    for epoch in range(EPOCHS):
        for batch in it:
            rows["data"].append(batch.data[0].asnumpy())
            rows["label"].append(batch.label[0].asnumpy())
            rows["pad"].append(batch.pad)
            rows["epoch"].append(epoch)
        it.reset()
    for key, values in rows.items():
        arrays[f"{case}.{key}"] = np.stack(values)
    arrays[f"{case}.provide"] = np.array(
        json.dumps(
            [
                [list(d.shape) for d in it.provide_data],
                [list(d.shape) for d in it.provide_label],
                [d.name for d in it.provide_data + it.provide_label],
            ]
        )
    )
    if "mean_img" in kwargs:
        arrays[f"{case}.mean"] = mx.nd.load(kwargs["mean_img"])["mean_img"].asnumpy()


def main():
    make_files()
    arrays = {}
    tmp = tempfile.mkdtemp()
    try:
        for case in CASES:
            record_case(case, arrays, tmp)
    finally:
        shutil.rmtree(tmp)
    np.savez_compressed(os.path.join(OUT, "batches.npz"), **arrays)
    with open(os.path.join(OUT, "cases.json"), "w") as handle:
        json.dump({"base": BASE, "cases": CASES, "epochs": EPOCHS}, handle, indent=1)
    print(f"recorded {len(CASES)} configurations into {OUT}")


if __name__ == "__main__":
    main()
