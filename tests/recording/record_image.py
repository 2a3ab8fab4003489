"""Record what MXNet 1.9.1's mx.image gives on small generated images.

    /work/mxenv/bin/python tests/recording/record_image.py

Writes tests/image/data/mxnet_image.npz (arrays) and tests/image/data/mxnet_image.json
(crop rectangles, scale_down sizes, augmenter dumps). The encoded images are made here
once (OpenCV's encoder) and stored as bytes under ``bytes.<name>``, so the tests decode
exactly the bytes MXNet decoded. Random functions are recorded after ``random.seed`` /
``np.random.seed``: rebind draws the same numbers in the same order, so it must land on
the same crops and jitter factors.
"""

import json
import os
import random
import sys
import tempfile

import cv2
import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "image"))
import image_inputs  # noqa: E402  (shared with the tests: the same pixels)

OUT = os.path.join(HERE, "..", "image", "data")


def _encode(pixels_bgr, ext):
    params = [cv2.IMWRITE_JPEG_QUALITY, 90] if ext == ".jpg" else []
    ok, buf = cv2.imencode(ext, pixels_bgr, params)
    assert ok
    return buf.tobytes()


def _record_decode(arrays, encoded):
    for name, buf in encoded.items():
        arrays[f"bytes.{name}"] = np.frombuffer(buf, np.uint8)
        for flag in (0, 1):
            for to_rgb in (0, 1):
                img = mx.image.imdecode(buf, flag=flag, to_rgb=to_rgb)
                arrays[f"decode.{name}.{flag}.{to_rgb}"] = img.asnumpy()


def _record_resize(arrays, src):
    for interp in range(5):
        for w, h in ((11, 7), (40, 25), (20, 30)):
            out = mx.image.imresize(src, w, h, interp=interp)
            arrays[f"imresize.{interp}.{w}x{h}"] = out.asnumpy()
        out = mx.image.imresize(src.astype("float32"), 13, 9, interp=interp)
        arrays[f"imresize_f32.{interp}"] = out.asnumpy()
    for size, interp in ((10, 2), (10, 9), (40, 9), (12, 1)):
        arrays[f"resize_short.{size}.{interp}"] = mx.image.resize_short(src, size, interp).asnumpy()


def _record_crops(arrays, meta, src):
    arrays["fixed_crop.plain"] = mx.image.fixed_crop(src, 3, 2, 8, 10).asnumpy()
    arrays["fixed_crop.sized"] = mx.image.fixed_crop(src, 3, 2, 8, 10, size=(5, 6)).asnumpy()
    for w, h in ((8, 8), (40, 10)):
        out, rect = mx.image.center_crop(src, (w, h))
        arrays[f"center_crop.{w}x{h}"] = out.asnumpy()
        meta[f"center_crop.{w}x{h}"] = list(rect)
    random.seed(3)
    rects = [list(mx.image.random_crop(src, (7, 9))[1]) for _ in range(5)]
    meta["random_crop.seed3"] = rects
    random.seed(4)
    sized = [list(mx.image.random_size_crop(src, (6, 6), 0.3, (0.75, 1.33))[1]) for _ in range(5)]
    meta["random_size_crop.seed4"] = sized
    pairs = [((640, 480), (720, 120)), ((30, 20), (10, 40)), ((8, 8), (4, 4))]
    meta["scale_down"] = [[list(a), list(b), list(mx.image.scale_down(a, b))] for a, b in pairs]
    for border in range(5):
        out = mx.image.copyMakeBorder(src, 1, 2, 3, 4, type=border, values=(9, 20, 30))
        arrays[f"border.{border}"] = out.asnumpy()
    arrays["border.value"] = mx.image.copyMakeBorder(src, 2, 0, 1, 0, value=7).asnumpy()
    norm = mx.image.color_normalize(
        src.astype("float32"), mx.nd.array([120.0, 110.0, 100.0]), mx.nd.array([50.0, 60.0, 70.0])
    )
    arrays["color_normalize"] = norm.asnumpy()


def _record_rotate(arrays, src):
    chw = mx.nd.transpose(src.astype("float32"), axes=(2, 0, 1))
    arrays["rotate.30"] = mx.image.imrotate(chw, 30).asnumpy()
    arrays["rotate.in"] = mx.image.imrotate(chw, -50, zoom_in=True).asnumpy()
    arrays["rotate.out"] = mx.image.imrotate(chw, 70, zoom_out=True).asnumpy()
    batch = mx.nd.stack(chw, chw * 0.5)
    arrays["rotate.batch"] = mx.image.imrotate(batch, mx.nd.array([10, -45])).asnumpy()
    np.random.seed(2)
    arrays["rotate.random"] = mx.image.random_rotate(batch, (-90, 90), zoom_in=True).asnumpy()


def _record_augmenters(arrays, meta, src):
    src32 = src[0:12, 0:12].astype("float32")  # a corner keeps the golden file small
    augs = {
        "brightness": mx.image.BrightnessJitterAug(0.3),
        "contrast": mx.image.ContrastJitterAug(0.3),
        "saturation": mx.image.SaturationJitterAug(0.3),
        "hue": mx.image.HueJitterAug(0.3),
        "gray": mx.image.RandomGrayAug(0.7),
        "flip": mx.image.HorizontalFlipAug(0.5),
        "colorjitter": mx.image.ColorJitterAug(0.2, 0.2, 0.2),
        "lighting": mx.image.LightingAug(
            0.1, np.array([55.46, 4.794, 1.148]), np.array(image_inputs.EIGVEC)
        ),
    }
    for name, aug in augs.items():
        random.seed(11)
        np.random.seed(11)
        outs = [aug(src32.copy()).asnumpy() for _ in range(3)]
        arrays[f"aug.{name}"] = np.stack(outs)
    for name, kwargs in image_inputs.CREATE_AUGMENTER_CASES.items():
        kwargs = dict(kwargs)
        for key in ("mean", "std"):
            if isinstance(kwargs.get(key), list):
                kwargs[key] = np.array(kwargs[key])
        augs = mx.image.CreateAugmenter(**kwargs)
        meta[f"create.{name}"] = [_dump(a) for a in augs]
        random.seed(5)
        np.random.seed(5)
        img = src
        for aug in augs:
            img = aug(img)
        arrays[f"create.{name}"] = img.asnumpy()


def _dump(aug):
    out = aug.dumps()
    return out if isinstance(out, str) else json.dumps(out)


def _epochs(it, n=2):
    out = []
    for _ in range(n):
        batches = []
        for batch in it:
            batches.append([batch.data[0].asnumpy(), batch.label[0].asnumpy(), batch.pad])
        out.append(batches)
        it.reset()
    return out


def _iter_sources(root, encoded, arrays):
    imglist = image_inputs.write_dataset(root, encoded)
    rec = image_inputs.write_rec(root, encoded, mx.recordio)
    for ext in ("rec", "idx"):
        with open(os.path.join(root, "data." + ext), "rb") as f:
            arrays["file.data." + ext] = np.frombuffer(f.read(), np.uint8)
    return {
        "lst": {"path_imglist": os.path.join(root, "data.lst"), "path_root": root},
        "lst2": {"path_imglist": os.path.join(root, "data2.lst"), "path_root": root},
        "imglist": {"imglist": imglist, "path_root": root},
        "rec": {"path_imgrec": rec, "path_imgidx": rec[:-4] + ".idx"},
    }


def _record_iter(arrays, meta, encoded):
    with tempfile.TemporaryDirectory() as root:
        sources = _iter_sources(root, encoded, arrays)
        for name, kwargs in image_inputs.ITER_CASES.items():
            kwargs = dict(kwargs)
            kwargs.update(sources[kwargs.pop("source")])
            random.seed(0)
            it = mx.image.ImageIter(**kwargs)
            meta["iter." + name] = {
                "provide_data": [[d[0], list(d[1])] for d in it.provide_data],
                "provide_label": [[d[0], list(d[1])] for d in it.provide_label],
                "pads": [],
            }
            for e, epoch in enumerate(_epochs(it)):
                meta["iter." + name]["pads"].append([b[2] for b in epoch])
                for b, (data, label, _) in enumerate(epoch):
                    arrays[f"iter.{name}.{e}.{b}.data"] = data
                    arrays[f"iter.{name}.{e}.{b}.label"] = label


def main():
    os.makedirs(OUT, exist_ok=True)
    images = image_inputs.images()
    encoded = {}
    for name, pixels in images.items():
        encoded[name + "_png"] = _encode(pixels, ".png")
        encoded[name + "_jpg"] = _encode(pixels, ".jpg")
    arrays, meta = {}, {"mxnet": mx.__version__, "opencv": cv2.__version__}
    _record_decode(arrays, encoded)
    src = mx.image.imdecode(encoded["color_png"])
    _record_resize(arrays, src)
    _record_crops(arrays, meta, src)
    _record_augmenters(arrays, meta, src)
    _record_rotate(arrays, src)
    _record_iter(arrays, meta, encoded)
    np.savez_compressed(os.path.join(OUT, "mxnet_image.npz"), **arrays)
    with open(os.path.join(OUT, "mxnet_image.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print(f"{len(arrays)} arrays, {len(meta)} entries")


if __name__ == "__main__":
    main()
