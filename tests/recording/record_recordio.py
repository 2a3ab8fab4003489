"""Records RecordIO golden files from real MXNet 1.9.1 for tests/recordio/.

Run with the MXNet environment (it needs mxnet and cv2):

    /work/mxenv/bin/python tests/recording/record_recordio.py

It writes into tests/recordio/data/ (inputs in tests/recordio/cases.py):
images/ (small generated pictures), plain.rec (MXRecordIO), indexed.rec/.idx
(MXIndexedRecordIO with pack and pack_img), named.rec/.idx (str keys), and
im2rec/ (the .lst/.rec/.idx files of MXNet's own tools/im2rec.py, taken from the
MXNet git mirror at tag 1.9.1 and run on images/).
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import mxnet as mx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "recordio"))
import cases  # noqa: E402

MIRROR = "/work/.mirror/apache+mxnet/repo"


def write_images():
    shutil.rmtree(cases.IMAGES, ignore_errors=True)
    for seed, (relpath, height, width, channels) in enumerate(cases.IMAGE_FILES):
        path = cases.IMAGES / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if channels == 0:
            path.write_text("not an image\n")
            continue
        img = cases.image_pixels(height, width, channels, seed)
        params = [cv2.IMWRITE_JPEG_QUALITY, 92] if relpath.endswith(".jpg") else []
        assert cv2.imwrite(str(path), img, params)


def write_plain():
    record = mx.recordio.MXRecordIO(str(cases.DATA / "plain.rec"), "w")
    for buf in cases.PLAIN_RECORDS:
        record.write(buf)
    record.close()


def packed(kind, args):
    header = mx.recordio.IRHeader(*args["header"])
    if kind == "pack":
        return mx.recordio.pack(header, args["payload"])
    img = cv2.imread(str(cases.IMAGES / args["image"]), cv2.IMREAD_UNCHANGED)
    return mx.recordio.pack_img(header, img, quality=args["quality"], img_fmt=args["fmt"])


def write_indexed():
    record = mx.recordio.MXIndexedRecordIO(
        str(cases.DATA / "indexed.idx"), str(cases.DATA / "indexed.rec"), "w"
    )
    for key, kind, args in cases.INDEXED_RECORDS:
        record.write_idx(key, packed(kind, args))
    record.close()
    record = mx.recordio.MXIndexedRecordIO(
        str(cases.DATA / "named.idx"), str(cases.DATA / "named.rec"), "w", key_type=str
    )
    for key, buf in cases.NAMED_RECORDS:
        record.write_idx(key, buf)
    record.close()


def run_im2rec():
    shutil.rmtree(cases.IM2REC, ignore_errors=True)
    cases.IM2REC.mkdir(parents=True)
    for name, text in cases.HANDWRITTEN_LISTS.items():
        (cases.IM2REC / name).write_text(text)
    source = subprocess.run(
        ["git", "-C", MIRROR, "show", "1.9.1:tools/im2rec.py"],
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "im2rec.py"
        script.write_bytes(source)
        for prefix, options in cases.IM2REC_RUNS:
            command = [sys.executable, str(script), str(cases.IM2REC / prefix), str(cases.IMAGES)]
            subprocess.run(command + options, check=True, capture_output=True)


if __name__ == "__main__":
    cases.DATA.mkdir(parents=True, exist_ok=True)
    write_images()
    write_plain()
    write_indexed()
    run_im2rec()
    for path in sorted(cases.DATA.rglob("*")):
        if path.is_file():
            print(path.relative_to(cases.DATA), path.stat().st_size)
