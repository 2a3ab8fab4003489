"""Dataset helpers: ``download`` and MXNet's MNIST / CIFAR-10 fetchers.

Each helper first looks for the files MXNet would have left on disk (same names, same
``data/`` layout) and only downloads what is missing. Downloads use a short timeout and
fail with a ``DownloadError`` naming the URL and the path the file was expected at.
"""

import bz2
import gzip
import logging
import os
import shutil
import ssl
import struct
import tempfile
import urllib.request
import zipfile

import numpy as np

from .. import io as mx_io
from ..errors import RebindError

#: Seconds a download waits for the server before it counts as failed.
DOWNLOAD_TIMEOUT_S = 10.0

_MNIST_URL = "http://data.mxnet.io/data/mnist/"
_MNIST_ZIP_URL = "http://data.mxnet.io/mxnet/data/mnist.zip"
_MNIST_PKL_URL = "http://deeplearning.net/data/mnist/mnist.pkl.gz"
_CIFAR_ZIP_URL = "http://data.mxnet.io/mxnet/data/cifar10.zip"
_MNIST_UBYTE = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_CIFAR_FILES = ("train.rec", "test.rec", "train.lst", "test.lst")


class DownloadError(RebindError, OSError):
    """A file could not be downloaded (and was not already on disk)."""


def _open_url(url, verify_ssl, timeout):
    """Open ``url`` for reading (the one place that touches the network)."""
    context = None if verify_ssl else ssl._create_unverified_context()
    return urllib.request.urlopen(url, timeout=timeout, context=context)


def _fetch_to(url, fname, verify_ssl):
    """Stream ``url`` into a temp file beside ``fname``, then rename it into place."""
    folder = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(fname) + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, _open_url(url, verify_ssl, DOWNLOAD_TIMEOUT_S) as resp:
            status = getattr(resp, "status", 200)
            if status != 200:
                raise OSError(f"HTTP status {status}")
            shutil.copyfileobj(resp, out, 1 << 16)
        os.replace(tmp, fname)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def download(url, fname=None, dirname=None, overwrite=False, retries=5, verify_ssl=True):
    """Download ``url`` to ``fname`` (default: the URL's last part, under ``dirname``).

    An existing file is kept unless ``overwrite``. As MXNet, ``retries`` is the number of
    attempts in all (at least one); the file appears only complete (temp file, then rename).
    Returns the file's path.
    """
    assert retries >= 0, "Number of retries should be at least 0"
    fname = url.split("/")[-1] if fname is None else fname
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        logging.info("%s exists, skipping download", fname)
        return fname
    # as MXNet's loop: `retries` attempts in all (one when retries is 0)
    attempts = max(retries, 1)
    for attempt in range(attempts):
        try:
            _fetch_to(url, fname, verify_ssl)
            break
        except OSError as err:
            left = attempts - attempt - 1
            if left <= 0:
                raise DownloadError(
                    f"download: could not fetch {url} into {os.path.abspath(fname)} after "
                    f"{attempt + 1} attempt(s) ({err}); put the file at that path to use "
                    "it without a download") from err
            print(f"download failed, retrying, {left} attempt{'s' if left > 1 else ''} left")
    logging.info("downloaded %s into %s successfully", url, fname)
    return fname


def _read_idx_gz(label_path, image_path):
    with gzip.open(label_path) as flbl:
        struct.unpack(">II", flbl.read(8))
        label = np.frombuffer(flbl.read(), dtype=np.int8)
    with gzip.open(image_path, "rb") as fimg:
        _, _, rows, cols = struct.unpack(">IIII", fimg.read(16))
        image = np.frombuffer(fimg.read(), dtype=np.uint8).reshape(len(label), rows, cols)
    return label, image.reshape(image.shape[0], 1, rows, cols).astype(np.float32) / 255


def get_mnist():
    """MNIST as NumPy arrays: train/test data (N, 1, 28, 28) in [0, 1] and int8 labels.

    Reads the four gzipped idx files from the current directory, downloading any missing.
    """
    def load(prefix):
        return _read_idx_gz(download(_MNIST_URL + prefix + "-labels-idx1-ubyte.gz"),
                            download(_MNIST_URL + prefix + "-images-idx3-ubyte.gz"))

    train_lbl, train_img = load("train")
    test_lbl, test_img = load("t10k")
    return {"train_data": train_img, "train_label": train_lbl,
            "test_data": test_img, "test_label": test_lbl}


def get_mnist_pkl():
    """Make sure data/mnist.pkl.gz exists, downloading it if needed."""
    os.makedirs("data", exist_ok=True)
    if not os.path.exists("data/mnist.pkl.gz"):
        download(_MNIST_PKL_URL, dirname="data")


def _ensure_unzipped(folder, names, url):
    os.makedirs("data", exist_ok=True)
    if not all(os.path.exists(os.path.join(folder, n)) for n in names):
        with zipfile.ZipFile(download(url, dirname="data")) as zf:
            zf.extractall("data")


def get_mnist_ubyte():
    """Make sure the four raw MNIST idx files exist under data/, fetching mnist.zip if not."""
    _ensure_unzipped("data", _MNIST_UBYTE, _MNIST_ZIP_URL)


def get_cifar10():
    """Make sure data/cifar/{train,test}.{rec,lst} exist, fetching cifar10.zip if not."""
    _ensure_unzipped(os.path.join("data", "cifar"), _CIFAR_FILES, _CIFAR_ZIP_URL)


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """(train, val) ``mx.io.MNISTIter`` over data/*-ubyte; flat unless ``input_shape`` is 3-d."""
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    # MXNet hands input_shape to MNISTIter, which ignores it: only `flat` shapes the data
    common = dict(batch_size=batch_size, flat=flat, num_parts=num_parts, part_index=part_index)
    train = mx_io.MNISTIter(image="data/train-images-idx3-ubyte",
                            label="data/train-labels-idx1-ubyte", shuffle=True, **common)
    val = mx_io.MNISTIter(image="data/t10k-images-idx3-ubyte",
                          label="data/t10k-labels-idx1-ubyte", **common)
    return train, val


def get_zip_data(data_dir, url, data_origin_name):
    """Download ``url`` (a zip) into ``data_dir`` and extract it unless already there."""
    data_origin_name = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_origin_name):
        zip_path = download(url, dirname=data_dir, overwrite=False)
        with zipfile.ZipFile(zip_path) as zip_file:
            zip_file.extractall(path=data_dir)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Download ``url`` (a .bz2) and decompress it to data_dir/data_name unless present."""
    data_name = os.path.join(data_dir, data_name)
    data_origin_name = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_name):
        # MXNet joins data_dir twice here; rebind uses the path download() returns
        origin = download(url, fname=os.path.basename(data_origin_name), dirname=data_dir)
        with bz2.BZ2File(origin, "rb") as bz_file, open(data_name, "wb") as fout:
            shutil.copyfileobj(bz_file, fout)
        os.remove(origin)
