"""im2rec: make image lists (.lst) and RecordIO files (.rec/.idx) as MXNet's tools/im2rec.py.

    python -m rebind.tools.im2rec PREFIX ROOT --list [--recursive] ...   # PREFIX.lst from ROOT
    python -m rebind.tools.im2rec PREFIX ROOT [--resize N] ...          # PREFIX*.lst -> .rec/.idx

The options, their defaults, the list format (``index\\tlabel...\\tpath``), the
shuffle (``random.seed(100)``), the splits and the record bytes are MXNet 1.9.1's.
Differences: ``--num-thread`` uses threads (OpenCV releases the GIL) instead of
processes; an image that cannot be read or encoded is reported and skipped in
every mode (MXNet's single-threaded mode crashes on it); list files are taken
in sorted order; ``--shuffle`` is accepted as the (default) opposite of
``--no-shuffle``.
"""

import argparse
import os
import random
import sys
import time
import traceback
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from .. import recordio

_SHUFFLE_SEED = 100


def list_image(root, recursive, exts):
    """Yields ``(index, path relative to root, label)``; with recursive, a label per folder."""
    index = 0
    if not recursive:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                yield (index, os.path.relpath(fpath, root), 0)
                index += 1
        return
    labels = {}
    for path, dirs, files in os.walk(root, followlinks=True):
        dirs.sort()
        for fname in sorted(files):
            fpath = os.path.join(path, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                labels.setdefault(path, len(labels))
                yield (index, os.path.relpath(fpath, root), labels[path])
                index += 1
    for path, label in sorted(labels.items(), key=lambda pair: pair[1]):
        print(os.path.relpath(path, root), label)


def write_list(path_out, image_list):
    """Writes ``index\\tlabel\\t...\\tpath`` lines (labels as ``%f``)."""
    with open(path_out, "w") as fout:
        for item in image_list:
            labels = "".join(f"{label:f}\t" for label in item[2:])
            fout.write(f"{item[0]:d}\t{labels}{item[1]}\n")


def make_list(args):
    """Writes PREFIX.lst (or the _train/_val/_test and _<chunk> lists) from the images in ROOT."""
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(_SHUFFLE_SEED)
        random.shuffle(image_list)
    chunk_size = (len(image_list) + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size : (i + 1) * chunk_size]
        prefix = args.prefix + (f"_{i:d}" if args.chunks > 1 else "")
        sep = int(chunk_size * args.train_ratio)
        sep_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(prefix + ".lst", chunk)
            continue
        if args.test_ratio:
            write_list(prefix + "_test.lst", chunk[:sep_test])
        if args.train_ratio + args.test_ratio < 1.0:
            write_list(prefix + "_val.lst", chunk[sep_test + sep :])
        write_list(prefix + "_train.lst", chunk[sep_test : sep_test + sep])


def read_list(path_in):
    """Yields ``[index, path, label, ...]`` per valid .lst line; bad lines are reported."""
    with open(path_in) as fin:
        for number, line in enumerate(fin, start=1):
            fields = [field.strip() for field in line.strip().split("\t")]
            where = f"{path_in}, line {number}"  # MXNet's messages, plus the place
            if len(fields) < 3:
                print(
                    "lst should have at least has three parts, "
                    f"but only has {len(fields)} parts for {fields} ({where})"
                )
                continue
            try:
                yield [int(fields[0]), fields[-1]] + [float(f) for f in fields[1:-1]]
            except ValueError as error:
                print(f"Parsing lst met error for {fields} ({where}), detail: {error}")


def _header(args, item):
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    return recordio.IRHeader(0, label, item[0], 0)


def _crop_and_resize(cv2, args, img):
    height, width = img.shape[:2]
    if args.center_crop:
        if height > width:
            margin = (height - width) // 2
            img = img[margin : margin + width, :]
        else:
            margin = (width - height) // 2
            img = img[:, margin : margin + height]
        height, width = img.shape[:2]
    if args.resize:
        if height > width:
            size = (args.resize, height * args.resize // width)
        else:
            size = (width * args.resize // height, args.resize)
        img = cv2.resize(img, size)
    return img


def encode_item(args, item):
    """The packed record of one list item, or None (with a message) when it fails."""
    import cv2

    fullpath = os.path.join(args.root, item[1])
    header = _header(args, item)
    try:
        if args.pass_through:
            with open(fullpath, "rb") as fin:
                return recordio.pack(header, fin.read())
        img = cv2.imread(fullpath, args.color)
        if img is None:
            print(f"imread read blank (None) image for file: {fullpath}")
            return None
        img = _crop_and_resize(cv2, args, img)
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except Exception as error:  # a bad image is reported and skipped, as im2rec does
        traceback.print_exc()
        print(f"pack_img error on file: {fullpath}", error)
        return None


def _encoded_in_order(args, items):
    """(item, record) in list order, encoded by ``num_thread`` threads, a bounded window ahead."""
    if args.num_thread <= 1:
        for item in items:
            yield item, encode_item(args, item)
        return
    window = deque()
    with ThreadPoolExecutor(args.num_thread) as pool:
        for item in items:
            window.append((item, pool.submit(encode_item, args, item)))
            if len(window) >= 64 * args.num_thread:
                item, future = window.popleft()
                yield item, future.result()
        while window:
            item, future = window.popleft()
            yield item, future.result()


def write_record(args, lst_path, working_dir):
    """Encodes the images of one .lst into <name>.rec and <name>.idx in working_dir."""
    stem = os.path.splitext(os.path.basename(lst_path))[0]
    record = recordio.MXIndexedRecordIO(
        os.path.join(working_dir, stem + ".idx"), os.path.join(working_dir, stem + ".rec"), "w"
    )
    start = time.time()
    try:
        for count, (item, packed) in enumerate(_encoded_in_order(args, read_list(lst_path))):
            if packed is not None:
                record.write_idx(item[0], packed)
            if count % 1000 == 0:
                now = time.time()
                print("time:", now - start, " count:", count)
                start = now
    finally:
        record.close()


def parse_args(argv=None):
    """im2rec's command line (MXNet's options and defaults)."""
    parser = argparse.ArgumentParser(
        prog="python -m rebind.tools.im2rec",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an image list",
    )
    parser.add_argument("prefix", help="prefix of input/output lst and rec files.")
    parser.add_argument("root", help="path to folder containing images.")
    _add_list_options(parser.add_argument_group("Options for creating image lists"))
    _add_record_options(parser.add_argument_group("Options for creating database"))
    args = parser.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def _add_list_options(group):
    group.add_argument("--list", action="store_true", help="create PREFIX.lst from ROOT")
    group.add_argument(
        "--exts", nargs="+", default=[".jpeg", ".jpg", ".png"], help="image extensions"
    )
    group.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    group.add_argument("--train-ratio", type=float, default=1.0, help="ratio of training images")
    group.add_argument("--test-ratio", type=float, default=0, help="ratio of test images")
    group.add_argument(
        "--recursive", action="store_true", help="walk subfolders, one label per folder"
    )
    group.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="keep order")
    group.add_argument("--shuffle", dest="shuffle", action="store_true", help="shuffle (default)")
    group.set_defaults(shuffle=True)


def _add_record_options(group):
    group.add_argument("--pass-through", action="store_true", help="pack the files unchanged")
    group.add_argument("--resize", type=int, default=0, help="resize the shorter edge to this")
    group.add_argument("--center-crop", action="store_true", help="crop the center square")
    group.add_argument(
        "--quality", type=int, default=95, help="JPEG quality 1-100 or PNG compression 1-9"
    )
    group.add_argument("--num-thread", type=int, default=1, help="number of encoding threads")
    group.add_argument(
        "--color", type=int, default=1, choices=[-1, 0, 1], help="cv2.imread flag: 1, 0 or -1"
    )
    group.add_argument(
        "--encoding", type=str, default=".jpg", choices=[".jpg", ".png"], help="image encoding"
    )
    group.add_argument(
        "--pack-label", action="store_true", help="pack every label of a multi-label list"
    )


def main(argv=None):
    """Runs im2rec; returns the exit status."""
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(
        os.path.join(working_dir, fname)
        for fname in os.listdir(working_dir)
        if os.path.isfile(os.path.join(working_dir, fname))
    )
    lists = [path for path in lists if path.startswith(args.prefix) and path.endswith(".lst")]
    for lst_path in lists:
        print("Creating .rec file from", lst_path, "in", working_dir)
        write_record(args, lst_path, working_dir)
    if not lists:
        print(f"Did not find and list file with prefix {args.prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
