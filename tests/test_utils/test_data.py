"""The data helpers of mx.test_utils: local files used as they are, downloads that fail fast."""

import bz2
import gzip
import io
import json
import os
import socket
import struct
import time
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.test_utils import data as tud

from . import mnist_inputs

MNIST_GZ = {
    "train-images-idx3-ubyte.gz": "train_data",
    "train-labels-idx1-ubyte.gz": "train_label",
    "t10k-images-idx3-ubyte.gz": "test_data",
    "t10k-labels-idx1-ubyte.gz": "test_label",
}


def _idx_bytes(array, magic):
    header = struct.pack(">" + "I" * (1 + array.ndim), magic, *array.shape)
    return header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()


def _mnist_arrays(seed=0, train=6, test=4):
    rng = np.random.default_rng(seed)
    return {
        "train-images-idx3-ubyte": rng.integers(0, 256, (train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, (train,), dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, (test,), dtype=np.uint8),
    }


def _idx_files(arrays):
    return {
        name: _idx_bytes(array, 2051 if "images" in name else 2049)
        for name, array in arrays.items()
    }


class _Opener:
    """Stands in for urllib.request.urlopen: records the calls, then fails or serves bytes."""

    def __init__(self, payload=None, status=200, error=None):
        self.calls = []
        self.payload, self.status, self.error = payload, status, error

    def __call__(self, url, timeout=None):
        self.calls.append((url, timeout))
        if self.error is not None:
            raise self.error
        return _Response(self.payload, self.status)


class _Response(io.BytesIO):
    def __init__(self, payload, status):
        super().__init__(payload)
        self.status = status

    def getcode(self):
        return self.status


class _BrokenStream(_Response):
    """A response that breaks after its first bytes, like a dropped connection."""

    def read(self, size=-1):
        if self.tell() > 0:
            raise ConnectionResetError("connection reset by peer")
        return super().read(4)


@pytest.fixture
def offline(monkeypatch):
    """No network: every download attempt is recorded and fails as an offline machine does."""
    opener = _Opener(error=urllib.error.URLError("[Errno -3] Temporary failure in name resolution"))
    monkeypatch.setattr(tud.urllib.request, "urlopen", opener)
    return opener


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _leftovers(folder):
    return sorted(p.name for p in Path(folder).rglob("*.part"))


# --- download ----------------------------------------------------------------------------


def test_download_file_url_writes_the_bytes_and_returns_the_path(tmp_path):
    source = tmp_path / "src" / "blob.bin"
    source.parent.mkdir()
    source.write_bytes(b"\x00\x01payload" * 1000)
    got = tud.download(source.as_uri(), dirname=str(tmp_path / "out"))
    assert got == os.path.join(str(tmp_path / "out"), "blob.bin")
    assert Path(got).read_bytes() == source.read_bytes()
    assert _leftovers(tmp_path) == []


def test_download_fname_defaults_to_the_url_tail_in_the_current_folder(workdir, monkeypatch):
    opener = _Opener(payload=b"abc")
    monkeypatch.setattr(tud.urllib.request, "urlopen", opener)
    assert tud.download("http://example.invalid/a/b/file.txt") == "file.txt"
    assert (workdir / "file.txt").read_bytes() == b"abc"
    assert opener.calls == [("http://example.invalid/a/b/file.txt", tud.DOWNLOAD_TIMEOUT)]


def test_download_keeps_an_existing_file_unless_overwrite(workdir, monkeypatch, offline):
    (workdir / "d").mkdir()
    (workdir / "d" / "x.bin").write_bytes(b"old")
    assert tud.download("http://example.invalid/x.bin", dirname="d") == os.path.join("d", "x.bin")
    assert offline.calls == []
    monkeypatch.setattr(tud.urllib.request, "urlopen", _Opener(payload=b"new"))
    tud.download("http://example.invalid/x.bin", dirname="d", overwrite=True)
    assert (workdir / "d" / "x.bin").read_bytes() == b"new"


@pytest.mark.parametrize(("retries", "attempts"), [(0, 1), (1, 1), (3, 3), (5, 5)])
def test_download_failure_names_url_and_path_after_mxnet_attempt_count(
    workdir, offline, retries, attempts
):
    url = "http://example.invalid/data/big.zip"
    with pytest.raises(tud.DownloadError) as info:
        tud.download(url, dirname="data", retries=retries)
    message = str(info.value)
    assert url in message
    assert str(workdir / "data" / "big.zip") in message
    assert "offline" in message
    assert len(offline.calls) == attempts
    assert not (workdir / "data" / "big.zip").exists()
    assert _leftovers(workdir) == []


def test_download_error_is_caught_as_ioerror_and_mxnet_error(workdir, offline):
    with pytest.raises(IOError):
        tud.download("http://example.invalid/f")
    with pytest.raises(mx.base.MXNetError):
        tud.download("http://example.invalid/f")


def test_download_rejects_negative_retries(workdir, offline):
    with pytest.raises(ValueError, match="retries"):
        tud.download("http://example.invalid/f", retries=-1)
    assert offline.calls == []


def test_download_refuses_a_status_other_than_200(workdir, monkeypatch):
    monkeypatch.setattr(tud.urllib.request, "urlopen", _Opener(payload=b"", status=204))
    with pytest.raises(tud.DownloadError, match="204"):
        tud.download("http://example.invalid/f", retries=1)
    assert not (workdir / "f").exists()


def test_download_cut_mid_stream_leaves_no_partial_file(workdir, monkeypatch):
    (workdir / "f").write_bytes(b"previous complete file")
    monkeypatch.setattr(
        tud.urllib.request, "urlopen", lambda url, timeout=None: _BrokenStream(b"x" * 100, 200)
    )
    with pytest.raises(tud.DownloadError, match="ConnectionResetError"):
        tud.download("http://example.invalid/f", overwrite=True, retries=2)
    assert (workdir / "f").read_bytes() == b"previous complete file"
    assert _leftovers(workdir) == []


def test_download_from_a_silent_server_times_out_instead_of_hanging(workdir, monkeypatch):
    # a listening socket that never answers: the connection opens, the response never comes
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    monkeypatch.setattr(tud, "DOWNLOAD_TIMEOUT", 0.3)
    url = f"http://127.0.0.1:{server.getsockname()[1]}/never.bin"
    started = time.monotonic()
    try:
        with pytest.raises(tud.DownloadError, match="timed out") as info:
            tud.download(url, retries=2)
    finally:
        server.close()
    assert time.monotonic() - started < 5
    assert url in str(info.value)
    assert not (workdir / "never.bin").exists()


# --- MNIST -------------------------------------------------------------------------------


def _write_mnist_gz(folder, arrays):
    for name, raw in _idx_files(arrays).items():
        (folder / (name + ".gz")).write_bytes(gzip.compress(raw))


def test_get_mnist_reads_local_gz_files_as_mxnet_does(workdir, offline):
    arrays = _mnist_arrays()
    _write_mnist_gz(workdir, arrays)
    got = tud.get_mnist()
    assert offline.calls == []
    assert sorted(got) == sorted(MNIST_GZ.values())
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = arrays[f"{prefix}-images-idx3-ubyte"]
        data = got[f"{split}_data"]
        assert data.dtype == np.float32
        assert data.shape == (images.shape[0], 1, 28, 28)
        np.testing.assert_allclose(data[:, 0], images.astype(np.float64) / 255, rtol=1e-6)
        label = got[f"{split}_label"]
        assert label.dtype == np.int8
        np.testing.assert_array_equal(label, arrays[f"{prefix}-labels-idx1-ubyte"])


def test_get_mnist_without_files_names_the_first_missing_url(workdir, offline):
    with pytest.raises(tud.DownloadError) as info:
        tud.get_mnist()
    assert "http://data.mxnet.io/data/mnist/train-labels-idx1-ubyte.gz" in str(info.value)
    assert str(workdir / "train-labels-idx1-ubyte.gz") in str(info.value)


def test_get_mnist_refuses_a_file_whose_header_does_not_match(workdir, offline):
    arrays = _mnist_arrays()
    _write_mnist_gz(workdir, arrays)
    raw = _idx_bytes(arrays["t10k-images-idx3-ubyte"], 2051)[:-10]
    (workdir / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(raw))
    with pytest.raises(mx.errors.FormatError, match="t10k-images-idx3-ubyte.gz"):
        tud.get_mnist()


def _mnist_zip(path, arrays):
    with zipfile.ZipFile(path, "w") as archive:
        for name, raw in _idx_files(arrays).items():
            archive.writestr(name, raw)


def test_get_mnist_ubyte_unzips_a_local_mnist_zip_into_data(workdir, offline):
    arrays = _mnist_arrays()
    (workdir / "data").mkdir()
    _mnist_zip(workdir / "data" / "mnist.zip", arrays)
    tud.get_mnist_ubyte()
    assert offline.calls == []
    for name, raw in _idx_files(arrays).items():
        assert (workdir / "data" / name).read_bytes() == raw


def test_get_mnist_ubyte_uses_present_files_and_downloads_otherwise(workdir, offline):
    with pytest.raises(tud.DownloadError) as info:
        tud.get_mnist_ubyte()
    assert "http://data.mxnet.io/mxnet/data/mnist.zip" in str(info.value)
    assert str(workdir / "data" / "mnist.zip") in str(info.value)
    for name, raw in _idx_files(_mnist_arrays()).items():
        (workdir / "data" / name).write_bytes(raw)
    offline.calls.clear()
    tud.get_mnist_ubyte()
    assert offline.calls == []


def test_get_mnist_iterator_reads_data_folder(workdir, offline):
    arrays = _mnist_arrays(train=6, test=4)
    (workdir / "data").mkdir()
    for name, raw in _idx_files(arrays).items():
        (workdir / "data" / name).write_bytes(raw)
    train, val = tud.get_mnist_iterator(2, (1, 28, 28))
    # both iterators shuffle: MXNet leaves val at MNISTIter's default, shuffle=True
    val_batches = list(val)
    assert [b.data[0].shape for b in val_batches] == [(2, 1, 28, 28)] * 2
    val_labels = np.concatenate([b.label[0].asnumpy() for b in val_batches])
    assert sorted(val_labels) == sorted(arrays["t10k-labels-idx1-ubyte"].astype(np.float32))
    train_labels = np.concatenate([b.label[0].asnumpy() for b in train])
    assert sorted(train_labels) == sorted(arrays["train-labels-idx1-ubyte"].astype(np.float32))
    flat_train, flat_val = tud.get_mnist_iterator(2, (784,), num_parts=2, part_index=1)
    batches = list(flat_val)
    assert [b.data[0].shape for b in batches] == [(2, 784)]
    second_half = arrays["t10k-labels-idx1-ubyte"][2:].astype(np.float32)
    assert sorted(batches[0].label[0].asnumpy()) == sorted(second_half)
    assert offline.calls == []


# --- CIFAR-10, pickled MNIST, archives ------------------------------------------------------


def test_get_cifar10_unzips_local_archive_into_data_cifar(workdir, offline):
    (workdir / "data").mkdir()
    contents = {
        f"cifar/{name}": name.encode() * 3
        for name in ("train.rec", "test.rec", "train.lst", "test.lst")
    }
    with zipfile.ZipFile(workdir / "data" / "cifar10.zip", "w") as archive:
        for name, raw in contents.items():
            archive.writestr(name, raw)
    tud.get_cifar10()
    for name, raw in contents.items():
        assert (workdir / "data" / name).read_bytes() == raw
    assert offline.calls == []


def test_get_cifar10_reports_an_archive_without_the_expected_files(workdir, offline):
    (workdir / "data").mkdir()
    with zipfile.ZipFile(workdir / "data" / "cifar10.zip", "w") as archive:
        archive.writestr("cifar/train.rec", b"x")
    with pytest.raises(mx.errors.FormatError, match="test.rec"):
        tud.get_cifar10()


def test_get_cifar10_offline_names_url_and_path(workdir, offline):
    with pytest.raises(tud.DownloadError) as info:
        tud.get_cifar10()
    assert "http://data.mxnet.io/mxnet/data/cifar10.zip" in str(info.value)
    assert str(workdir / "data" / "cifar10.zip") in str(info.value)


def test_get_mnist_pkl_only_fetches_the_file(workdir, offline, monkeypatch):
    with pytest.raises(tud.DownloadError, match="deeplearning.net/data/mnist/mnist.pkl.gz"):
        tud.get_mnist_pkl()
    (workdir / "data" / "mnist.pkl.gz").write_bytes(b"not unpickled")
    offline.calls.clear()
    assert tud.get_mnist_pkl() is None
    assert offline.calls == []
    assert (workdir / "data" / "mnist.pkl.gz").read_bytes() == b"not unpickled"


def test_get_zip_data_downloads_then_extracts(tmp_path):
    source = tmp_path / "ml.zip"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("ml/ratings.dat", b"1::2::3\n")
    target = tmp_path / "out"
    tud.get_zip_data(str(target), source.as_uri(), "ml.zip")
    assert (target / "ml.zip").exists()
    assert (target / "ml" / "ratings.dat").read_bytes() == b"1::2::3\n"


def test_get_zip_data_extracts_a_local_archive_without_downloading(tmp_path, offline):
    with zipfile.ZipFile(tmp_path / "ml.zip", "w") as archive:
        archive.writestr("ml/ratings.dat", b"4::5\n")
    tud.get_zip_data(str(tmp_path), "http://example.invalid/ml.zip", "ml.zip")
    assert (tmp_path / "ml" / "ratings.dat").read_bytes() == b"4::5\n"
    assert offline.calls == []


def test_get_zip_data_offline_names_url_and_path(tmp_path, offline):
    with pytest.raises(tud.DownloadError) as info:
        tud.get_zip_data(str(tmp_path), "http://example.invalid/ml-10m.zip", "ml-10m.zip")
    assert "http://example.invalid/ml-10m.zip" in str(info.value)
    assert str(tmp_path / "ml-10m.zip") in str(info.value)


def test_get_bz2_data_unpacks_a_local_archive_and_removes_it(tmp_path, offline):
    text = b"1 1:0.5 3:0.25\n-1 2:1\n" * 50
    (tmp_path / "kdda.t.bz2").write_bytes(bz2.compress(text))
    tud.get_bz2_data(str(tmp_path), "kdda.t", "http://example.invalid/kdda.t.bz2", "kdda.t.bz2")
    assert (tmp_path / "kdda.t").read_bytes() == text
    assert not (tmp_path / "kdda.t.bz2").exists()
    assert offline.calls == []
    tud.get_bz2_data(str(tmp_path), "kdda.t", "http://example.invalid/kdda.t.bz2", "kdda.t.bz2")
    assert offline.calls == []


def test_get_bz2_data_downloads_when_absent(tmp_path):
    text = b"0 4:1\n"
    (tmp_path / "remote.bz2").write_bytes(bz2.compress(text))
    out = tmp_path / "out"
    tud.get_bz2_data(str(out), "d.t", (tmp_path / "remote.bz2").as_uri(), "d.t.bz2")
    assert (out / "d.t").read_bytes() == text
    assert sorted(p.name for p in out.iterdir()) == ["d.t"]


def test_get_bz2_data_reports_a_broken_archive(tmp_path, offline):
    (tmp_path / "x.bz2").write_bytes(b"not bz2 at all")
    with pytest.raises(mx.errors.FormatError, match="x.bz2"):
        tud.get_bz2_data(str(tmp_path), "x", "http://example.invalid/x.bz2", "x.bz2")
    assert not (tmp_path / "x").exists()


# --- models and tools ----------------------------------------------------------------------


def test_download_model_fetches_symbol_and_params(tmp_path):
    (tmp_path / "s.json").write_text('{"nodes": []}')
    (tmp_path / "p.params").write_bytes(b"\x12\x01")
    meta = {
        "tiny": {
            "symbol": (tmp_path / "s.json").as_uri(),
            "params": (tmp_path / "p.params").as_uri(),
        }
    }
    dst = tmp_path / "models"
    prefix, epoch = tud.download_model("tiny", dst_dir=str(dst), meta_info=meta)
    assert (prefix, epoch) == (os.path.join(str(dst), "tiny"), 0)
    assert (dst / "tiny-symbol.json").read_text() == '{"nodes": []}'
    assert (dst / "tiny-0000.params").read_bytes() == b"\x12\x01"
    assert tud.download_model("absent", dst_dir=str(dst), meta_info=meta) == (None, 0)


def test_download_model_default_table_uses_mxnet_urls(tmp_path, offline):
    base = "http://data.mxnet.io/models/"
    expected = {
        "imagenet1k-inception-bn": base + "imagenet/inception-bn/Inception-BN-0126.params",
        "imagenet1k-resnet-18": base + "imagenet/resnet/18-layers/resnet-18-0000.params",
        "imagenet1k-resnext-101-64x4d": base
        + "imagenet/resnext/101-layers/resnext-101-64x4d-0000.params",
        "imagenet11k-place365ch-resnet-50": base + "imagenet-11k-place365-ch/resnet-50-0000.params",
    }
    table = tud._default_models()
    resnets = [f"imagenet1k-resnet-{d}" for d in (18, 34, 50, 101, 152)]
    resnexts = ["imagenet1k-resnext-50", "imagenet1k-resnext-101", "imagenet1k-resnext-101-64x4d"]
    others = [
        "imagenet1k-inception-bn",
        "imagenet11k-resnet-152",
        "imagenet11k-place365ch-resnet-152",
        "imagenet11k-place365ch-resnet-50",
    ]
    assert sorted(table) == sorted(resnets + resnexts + others)
    for name, params in expected.items():
        assert table[name]["params"] == params
        assert table[name]["symbol"] == params.rsplit("-", 1)[0] + "-symbol.json"
    with pytest.raises(tud.DownloadError, match="resnet-18-symbol.json"):
        tud.download_model("imagenet1k-resnet-18", dst_dir=str(tmp_path))


def test_get_im2rec_path_looks_under_mxnet_home(tmp_path, monkeypatch):
    home = tmp_path / "mxnet"
    (home / "tools").mkdir(parents=True)
    (home / "tools" / "im2rec.py").write_text("")
    monkeypatch.setenv("MXNET_HOME", str(home))
    assert tud.get_im2rec_path() == os.path.join(str(home), "tools", "im2rec.py")
    monkeypatch.setenv("MY_HOME", str(tmp_path / "src" / "python" / "mxnet"))
    (tmp_path / "src" / "python" / "mxnet").mkdir(parents=True)
    (tmp_path / "src" / "tools").mkdir()
    (tmp_path / "src" / "tools" / "im2rec.py").write_text("")
    found = tud.get_im2rec_path("MY_HOME")
    assert os.path.samefile(found, tmp_path / "src" / "tools" / "im2rec.py")


def test_get_im2rec_path_missing_raises_ioerror_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    with pytest.raises(IOError, match="MXNET_HOME") as info:
        tud.get_im2rec_path()
    assert isinstance(info.value, tud.ToolNotFoundError)


# --- side by side with MXNet 1.9.1 (tests/recording/record_test_utils_data.py) -------------

RECORDED = json.loads((Path(__file__).parent / "data" / "mxnet_mnist.json").read_text())


def test_get_mnist_matches_mxnet_on_the_same_files(workdir, offline):
    mnist_inputs.write(str(workdir))
    got = tud.get_mnist()
    for key, facts in RECORDED["get_mnist"].items():
        assert str(got[key].dtype) == facts["dtype"]
        assert list(got[key].shape) == facts["shape"]
        assert float(got[key].sum(dtype="f8")) == pytest.approx(facts["sum"], rel=1e-12)
    assert offline.calls == []


@pytest.mark.parametrize("index", range(len(mnist_inputs.CASES)))
def test_get_mnist_iterator_batches_match_mxnet(workdir, offline, index):
    mnist_inputs.write(str(workdir))
    recorded = RECORDED["iterator"][index]
    train, val = tud.get_mnist_iterator(**recorded["case"])
    for it, expected in ((train, recorded["train"]), (val, recorded["val"])):
        seen = [
            {"shape": list(b.data[0].shape), "label": b.label[0].asnumpy().tolist()} for b in it
        ]
        assert seen == expected
