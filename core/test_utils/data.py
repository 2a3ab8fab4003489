"""MXNet 1.9.1's data helpers from ``mx.test_utils``: download, MNIST, CIFAR-10, archives.

Names, signatures, default paths, URLs and folder layouts are MXNet's, so a
script that calls ``mx.test_utils.get_mnist_iterator(100, (1, 28, 28))`` finds
and writes the same files. Files already present are used as they are; a
missing one is fetched with ``download``, which gives up after a short timeout
per attempt and raises ``DownloadError`` naming the URL and the path where the
file can be put by hand (useful on machines without internet).

Datasets land relative to the current directory, as in MXNet: ``get_mnist``
reads ``./train-images-idx3-ubyte.gz`` and its three siblings;
``get_mnist_ubyte`` and ``get_mnist_iterator`` use ``data/*-ubyte`` (from
``data/mnist.zip``); ``get_cifar10`` uses ``data/cifar/{train,test}.{rec,lst}``
(from ``data/cifar10.zip``); ``get_mnist_pkl`` fetches ``data/mnist.pkl.gz``.
"""

import bz2
import contextlib
import gzip
import http.client
import logging
import math
import os
import shutil
import struct
import sys
import tempfile
import urllib.request
import zipfile

import numpy as np

from ..errors import FormatError, RebindError
from ..io import MNISTIter

__all__ = [
    "DOWNLOAD_TIMEOUT",
    "DownloadError",
    "ToolNotFoundError",
    "download",
    "download_model",
    "get_bz2_data",
    "get_cifar10",
    "get_im2rec_path",
    "get_mnist",
    "get_mnist_iterator",
    "get_mnist_pkl",
    "get_mnist_ubyte",
    "get_zip_data",
]

_log = logging.getLogger(__name__)

# Seconds one attempt may wait for the connection or for the next bytes; a
# dead network then fails within retries * DOWNLOAD_TIMEOUT instead of hanging.
DOWNLOAD_TIMEOUT = 10.0

_MNIST_URL = "http://data.mxnet.io/data/mnist/"
_MNIST_ZIP_URL = "http://data.mxnet.io/mxnet/data/mnist.zip"
_MNIST_PKL_URL = "http://deeplearning.net/data/mnist/mnist.pkl.gz"
_CIFAR10_ZIP_URL = "http://data.mxnet.io/mxnet/data/cifar10.zip"
_MNIST_UBYTE = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
_CIFAR_FILES = ("train.rec", "test.rec", "train.lst", "test.lst")
_IMAGE_MAGIC, _LABEL_MAGIC = 2051, 2049
_CHUNK = 1 << 16


class DownloadError(RebindError, OSError):
    """A file could not be downloaded; the message names the URL and the local path.

    It is an ``OSError`` because MXNet's ``download`` fails with the network
    errors of ``requests``, which are ``IOError``s, so ``except IOError`` in
    old scripts keeps catching it.
    """


class ToolNotFoundError(RebindError, FileNotFoundError):
    """An MXNet tool script (such as ``tools/im2rec.py``) is not where it was looked for."""


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Download ``url`` to ``fname`` (in ``dirname``) and return the file's path.

    As in MXNet: ``fname`` defaults to the last part of the URL, ``dirname``
    to the folder of ``fname`` (created if missing), and an existing file is
    kept unless ``overwrite``. The download is tried ``max(retries, 1)`` times
    (MXNet's count), each attempt with a ``DOWNLOAD_TIMEOUT`` second timeout;
    the file appears only when complete (a temporary file in the same folder,
    then renamed). Fails with ``DownloadError`` naming the URL and the path.
    """
    if retries < 0:
        raise ValueError(f"download: retries must be at least 0, got {retries}")
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        _log.info("%s exists, skipping download", fname)
        return fname
    attempts = max(retries, 1)
    for attempt in range(1, attempts + 1):
        try:
            _fetch_once(url, fname)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            if attempt == attempts:
                raise DownloadError(_failure_message(url, fname, attempts, exc)) from exc
            _log.warning(
                "download of %s failed (%s), retrying, %d attempt(s) left",
                url,
                exc,
                attempts - attempt,
            )
        else:
            break
    _log.info("downloaded %s into %s successfully", url, fname)
    return fname


def _failure_message(url, fname, attempts, exc):
    return (
        f"could not download {url} to {os.path.abspath(fname)} "
        f"({attempts} attempt(s), last error {type(exc).__name__}: {exc}); "
        "if this machine is offline, fetch the file elsewhere and put it at that path"
    )


def _fetch_once(url, fname):
    """One attempt: stream the response into a temporary file, then rename it to ``fname``."""
    target = os.path.abspath(fname)
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
        status = response.getcode()
        # file:// and ftp:// responses have no status; HTTP must answer 200, as in MXNet
        if status is not None and status != 200:
            raise OSError(f"server answered HTTP status {status}, expected 200")
        _stream_atomic(response, target)


def _stream_atomic(source, target):
    """Copy the readable ``source`` to ``target`` through a temporary file in its folder."""
    directory, base = os.path.split(target)
    fd, temp = tempfile.mkstemp(prefix=f".{base}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(source, out, _CHUNK)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise


def get_mnist():
    """MNIST as NumPy arrays, from (or downloaded to) the idx ``.gz`` files in the current folder.

    Returns a dict with ``train_data`` / ``test_data`` of shape ``(N, 1, 28, 28)``,
    float32 pixels divided by 255, and ``train_label`` / ``test_label`` as int8,
    exactly as MXNet returns them.
    """
    train_label, train_data = _read_mnist_pair(
        "train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz"
    )
    test_label, test_data = _read_mnist_pair(
        "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"
    )
    return {
        "train_data": train_data,
        "train_label": train_label,
        "test_data": test_data,
        "test_label": test_label,
    }


def _read_mnist_pair(label_name, image_name):
    labels = _read_idx_gz(download(_MNIST_URL + label_name), _LABEL_MAGIC, 1).view(np.int8)
    images = _read_idx_gz(download(_MNIST_URL + image_name), _IMAGE_MAGIC, 3)
    if images.shape[0] != labels.shape[0]:
        raise FormatError(
            f"MNIST files {image_name} and {label_name} disagree: {images.shape[0]} images "
            f"but {labels.shape[0]} labels; delete both so they are downloaded again"
        )
    images = images.reshape(images.shape[0], 1, *images.shape[1:]).astype(np.float32) / 255
    return labels, images


def _read_idx_gz(path, magic, ndim):
    """The uint8 array of a gzip-compressed idx file, its header checked against its size."""
    try:
        with gzip.open(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError) as exc:
        raise FormatError(f"{path}: not a readable gzip file ({exc}); delete it") from exc
    header = 4 * (1 + ndim)
    if len(raw) < header:
        raise FormatError(f"{path}: {len(raw)} bytes, shorter than an idx header; delete it")
    found, *dims = struct.unpack(">" + "I" * (1 + ndim), raw[:header])
    if found != magic or len(raw) - header != math.prod(dims):
        raise FormatError(
            f"{path}: expected an idx file with magic {magic} and {ndim} dimension(s), found "
            f"magic {found}, dimensions {tuple(dims)} and {len(raw) - header} data bytes; "
            "delete it so it is downloaded again"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def get_mnist_pkl():
    """Make sure ``data/mnist.pkl.gz`` exists, downloading it if missing (MXNet does not load it).

    Like MXNet's, this only fetches the file. Opening it means unpickling,
    which can run arbitrary code; rebind offers no loader for it.
    """
    os.makedirs("data", exist_ok=True)
    if not os.path.exists(os.path.join("data", "mnist.pkl.gz")):
        download(_MNIST_PKL_URL, dirname="data")


def get_mnist_ubyte():
    """Make sure the four MNIST idx files are in ``data/``, else fetch and unzip ``mnist.zip``."""
    _ensure_unzipped(_MNIST_ZIP_URL, [os.path.join("data", name) for name in _MNIST_UBYTE])


def get_cifar10():
    """Make sure ``data/cifar/{train,test}.{rec,lst}`` exist, else fetch and unzip cifar10.zip."""
    wanted = [os.path.join("data", "cifar", name) for name in _CIFAR_FILES]
    _ensure_unzipped(_CIFAR10_ZIP_URL, wanted)


def _ensure_unzipped(url, wanted):
    """Unzip the archive at ``url`` (fetched into data/ if absent) unless ``wanted`` all exist."""
    os.makedirs("data", exist_ok=True)
    if all(os.path.exists(path) for path in wanted):
        return
    archive = download(url, dirname="data")
    _extract_zip(archive, "data")
    missing = [path for path in wanted if not os.path.exists(path)]
    if missing:
        raise FormatError(
            f"{archive}: extracted into data/ but {missing} are still missing; the archive "
            f"is not the one {url} serves: delete it so it is downloaded again"
        )


def _extract_zip(archive, folder):
    try:
        with zipfile.ZipFile(archive) as handle:
            # extractall drops absolute paths and '..' parts, so members stay inside folder
            handle.extractall(folder)
    except zipfile.BadZipFile as exc:
        raise FormatError(f"{archive}: not a zip archive ({exc}); delete it") from exc


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """``(train, val)`` MNISTIters over ``data/``, fetching the files first if missing.

    ``input_shape`` of length 3 gives ``(batch, 1, 28, 28)`` batches, any other
    length flat ``(batch, 784)`` ones; the training iterator is shuffled.
    """
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    # MXNet passes input_shape on to MNISTIter, which ignores it; only flat shapes the data
    train = MNISTIter(
        image=os.path.join("data", "train-images-idx3-ubyte"),
        label=os.path.join("data", "train-labels-idx1-ubyte"),
        batch_size=batch_size,
        shuffle=True,
        flat=flat,
        num_parts=num_parts,
        part_index=part_index,
    )
    val = MNISTIter(
        image=os.path.join("data", "t10k-images-idx3-ubyte"),
        label=os.path.join("data", "t10k-labels-idx1-ubyte"),
        batch_size=batch_size,
        flat=flat,
        num_parts=num_parts,
        part_index=part_index,
    )
    return train, val


def get_zip_data(data_dir, url, data_origin_name):
    """Download ``url`` to ``data_dir/data_origin_name`` and unzip it into ``data_dir``.

    An archive already there is not downloaded again; it is unzipped when any
    of its members is missing from ``data_dir`` (MXNet skips it entirely).
    """
    archive = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(archive):
        download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
    elif _zip_members_present(archive, data_dir):
        return
    _extract_zip(archive, data_dir)


def _zip_members_present(archive, folder):
    try:
        with zipfile.ZipFile(archive) as handle:
            names = handle.namelist()
    except zipfile.BadZipFile as exc:
        raise FormatError(f"{archive}: not a zip archive ({exc}); delete it") from exc
    return all(os.path.exists(os.path.join(folder, name)) for name in names)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Make sure ``data_dir/data_name`` exists, else fetch ``data_origin_name`` and unpack it.

    The ``.bz2`` file (downloaded from ``url`` unless already in ``data_dir``)
    is decompressed to ``data_name`` and then removed, as in MXNet.
    """
    target = os.path.join(data_dir, data_name)
    if os.path.exists(target):
        return
    archive = download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
    try:
        with bz2.open(archive, "rb") as source:
            _stream_atomic(source, os.path.abspath(target))
    except (OSError, EOFError) as exc:
        raise FormatError(f"{archive}: not a readable bz2 file ({exc}); delete it") from exc
    os.remove(archive)


def download_model(model_name, dst_dir="./", meta_info=None):
    """Download a model's ``-symbol.json`` and ``-0000.params`` into ``dst_dir``.

    ``meta_info`` maps model names to ``{'symbol': url, 'params': url}`` and
    defaults to MXNet's table of ImageNet models on data.mxnet.io. Returns
    ``(path prefix, 0)``, or ``(None, 0)`` for a name the table lacks.
    """
    meta_info = dict(_default_models() if meta_info is None else meta_info)
    if model_name not in meta_info:
        return None, 0
    meta = dict(meta_info[model_name])
    missing = [key for key in ("symbol", "params") if key not in meta]
    if missing:
        raise ValueError(
            f"download_model: meta_info[{model_name!r}] lacks {missing}; "
            "give {'symbol': url, 'params': url}"
        )
    os.makedirs(dst_dir, exist_ok=True)
    prefix = os.path.join(dst_dir, model_name)
    download(meta["symbol"], prefix + "-symbol.json")
    download(meta["params"], prefix + "-0000.params")
    return prefix, 0


def _default_models():
    """MXNet 1.9.1's model table: name -> (folder under models/, file prefix)."""
    base = "http://data.mxnet.io/models/"
    table = {
        "imagenet1k-inception-bn": ("imagenet/inception-bn/", "Inception-BN", "0126"),
        "imagenet11k-resnet-152": ("imagenet-11k/resnet-152/", "resnet-152", "0000"),
        "imagenet11k-place365ch-resnet-152": ("imagenet-11k-place365-ch/", "resnet-152", "0000"),
        "imagenet11k-place365ch-resnet-50": ("imagenet-11k-place365-ch/", "resnet-50", "0000"),
    }
    for depth in (18, 34, 50, 101, 152):
        table[f"imagenet1k-resnet-{depth}"] = (
            f"imagenet/resnet/{depth}-layers/",
            f"resnet-{depth}",
            "0000",
        )
    for depth, suffix in ((50, ""), (101, ""), (101, "-64x4d")):
        table[f"imagenet1k-resnext-{depth}{suffix}"] = (
            f"imagenet/resnext/{depth}-layers/",
            f"resnext-{depth}{suffix}",
            "0000",
        )
    return {
        name: {
            "symbol": f"{base}{folder}{stem}-symbol.json",
            "params": f"{base}{folder}{stem}-{epoch}.params",
        }
        for name, (folder, stem, epoch) in table.items()
    }


def _package_folder():
    """The folder of the top-level ``rebind`` package (MXNet looks beside ``mxnet/``)."""
    return os.path.dirname(os.path.abspath(sys.modules[__name__.partition(".")[0]].__file__))


def get_im2rec_path(home_env="MXNET_HOME"):
    """The path of MXNet's ``tools/im2rec.py`` under ``$MXNET_HOME`` (or beside rebind).

    rebind does not ship im2rec.py; point ``home_env`` at an MXNet install or
    source checkout. Looks in ``<home>/tools`` and ``<home>/../../tools`` as
    MXNet does, else raises ``ToolNotFoundError`` (an ``IOError``, as in MXNet).
    """
    home = os.environ.get(home_env) or _package_folder()
    candidates = [
        os.path.join(home, "tools", "im2rec.py"),
        os.path.join(home, "..", "..", "tools", "im2rec.py"),
    ]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise ToolNotFoundError(
        f"could not find tools/im2rec.py (looked at {candidates}); rebind does not ship it: "
        f"set the environment variable {home_env} to an MXNet install or source checkout"
    )
