"""download and the dataset helpers: local files first, clear bounded failure otherwise."""

import gzip
import io
import os
import struct
import time
import zipfile

import numpy as np
import pytest

from rebind import test_utils as tu
from rebind.test_utils import data as data_mod

UNREACHABLE = "http://127.0.0.1:9/none/file.bin"  # port 9 (discard): refused at once


def _idx_images(n, rows=28, cols=28, seed=0):
    pixels = np.random.RandomState(seed).randint(0, 256, size=(n, rows, cols)).astype(np.uint8)
    return struct.pack(">IIII", 2051, n, rows, cols) + pixels.tobytes(), pixels


def _idx_labels(n, seed=0):
    labels = np.random.RandomState(seed).randint(0, 10, size=n).astype(np.uint8)
    return struct.pack(">II", 2049, n) + labels.tobytes(), labels


class _FakeResponse(io.BytesIO):
    status = 200


def _serve(monkeypatch, payloads, calls):
    def fake_open(url, verify_ssl, timeout):
        calls.append((url, verify_ssl, timeout))
        body = payloads[url]
        if isinstance(body, Exception):
            raise body
        return _FakeResponse(body)

    monkeypatch.setattr(data_mod, "_open_url", fake_open)


def test_get_mnist_reads_local_gz_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expected = {}
    for prefix, n in (("train", 5), ("t10k", 3)):
        img_bytes, pixels = _idx_images(n, seed=n)
        lbl_bytes, labels = _idx_labels(n, seed=n)
        (tmp_path / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(img_bytes))
        (tmp_path / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(lbl_bytes))
        expected[prefix] = (pixels, labels)
    monkeypatch.setattr(data_mod, "_open_url", pytest.fail)  # no network allowed
    mnist = tu.get_mnist()
    assert mnist["train_data"].shape == (5, 1, 28, 28) and mnist["test_label"].shape == (3,)
    np.testing.assert_allclose(mnist["train_data"][:, 0], expected["train"][0] / 255.0,
                               rtol=1e-6)
    np.testing.assert_array_equal(mnist["test_label"], expected["t10k"][1])
    assert mnist["train_data"].dtype == np.float32


def _write_ubyte(folder):
    folder.mkdir(exist_ok=True)
    for prefix, n in (("train", 4), ("t10k", 2)):
        (folder / f"{prefix}-images-idx3-ubyte").write_bytes(_idx_images(n)[0])
        (folder / f"{prefix}-labels-idx1-ubyte").write_bytes(_idx_labels(n)[0])


def test_get_mnist_ubyte_and_iterator_use_local_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_ubyte(tmp_path / "data")
    monkeypatch.setattr(data_mod, "_open_url", pytest.fail)
    tu.get_mnist_ubyte()
    train, val = tu.get_mnist_iterator(batch_size=2, input_shape=(784,))
    batch = next(iter(val))
    assert batch.data[0].shape == (2, 784)
    assert len(list(train)) == 2
    _, val = tu.get_mnist_iterator(batch_size=2, input_shape=(1, 28, 28))
    assert next(iter(val)).data[0].shape == (2, 1, 28, 28)


def test_get_mnist_ubyte_fetches_and_extracts_zip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in data_mod._MNIST_UBYTE:
            zf.writestr(name, b"x")
    calls = []
    _serve(monkeypatch, {data_mod._MNIST_ZIP_URL: buf.getvalue()}, calls)
    tu.get_mnist_ubyte()
    assert sorted(os.listdir(tmp_path / "data")) == sorted([*data_mod._MNIST_UBYTE, "mnist.zip"])
    assert len(calls) == 1


def test_download_failure_names_url_and_path_quickly(tmp_path, monkeypatch):
    monkeypatch.setattr(data_mod, "DOWNLOAD_TIMEOUT_S", 2.0)
    start = time.time()
    with pytest.raises(tu.DownloadError) as info:
        tu.download(UNREACHABLE, dirname=str(tmp_path), retries=1)
    assert time.time() - start < 10
    text = str(info.value)
    assert UNREACHABLE in text and str(tmp_path / "file.bin") in text
    assert isinstance(info.value, OSError)
    assert os.listdir(tmp_path) == []  # nothing half-written left behind


def test_get_cifar10_failure_is_clear(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calls = []
    _serve(monkeypatch, {data_mod._CIFAR_ZIP_URL: OSError("timed out")}, calls)
    with pytest.raises(tu.DownloadError, match="cifar10.zip"):
        tu.get_cifar10()
    assert len(calls) == 5  # MXNet's default retries=5 means five attempts in all


def test_download_retries_then_succeeds_and_honours_overwrite(tmp_path, monkeypatch):
    calls = []
    attempts = iter([OSError("flaky"), b"payload", b"second"])

    def fake_open(url, verify_ssl, timeout):
        calls.append(verify_ssl)
        item = next(attempts)
        if isinstance(item, Exception):
            raise item
        return _FakeResponse(item)

    monkeypatch.setattr(data_mod, "_open_url", fake_open)
    path = tu.download("http://x/y/f.txt", dirname=str(tmp_path / "sub"), retries=2,
                       verify_ssl=False)
    assert path == str(tmp_path / "sub" / "f.txt")
    assert open(path, "rb").read() == b"payload" and calls == [False, False]
    assert tu.download("http://x/y/f.txt", dirname=str(tmp_path / "sub")) == path
    assert len(calls) == 2  # existing file kept
    tu.download("http://x/y/f.txt", dirname=str(tmp_path / "sub"), overwrite=True)
    assert open(path, "rb").read() == b"second"
    assert os.listdir(tmp_path / "sub") == ["f.txt"]


def test_download_is_atomic_on_a_broken_stream(tmp_path, monkeypatch):
    class _Broken(_FakeResponse):
        def read(self, *args):
            raise OSError("connection reset")

    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    monkeypatch.setattr(data_mod, "_open_url", lambda *a: _Broken(b""))
    with pytest.raises(tu.DownloadError):
        tu.download("http://x/f.txt", fname=str(target), overwrite=True, retries=0)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["f.txt"]


def test_get_zip_and_bz2_data(tmp_path, monkeypatch):
    import bz2

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("inner.txt", b"zipped")
    calls = []
    _serve(monkeypatch, {"http://h/a.zip": buf.getvalue(),
                         "http://h/b.bz2": bz2.compress(b"line1\nline2\n")}, calls)
    tu.get_zip_data(str(tmp_path), "http://h/a.zip", "a.zip")
    assert (tmp_path / "inner.txt").read_bytes() == b"zipped"
    tu.get_bz2_data(str(tmp_path), "b.txt", "http://h/b.bz2", "b.bz2")
    assert (tmp_path / "b.txt").read_bytes() == b"line1\nline2\n"
    assert not (tmp_path / "b.bz2").exists()
    tu.get_bz2_data(str(tmp_path), "b.txt", "http://h/b.bz2", "b.bz2")
    assert len(calls) == 2  # present data is not fetched again


@pytest.mark.parametrize(("retries", "attempts"), [(0, 1), (1, 1), (2, 2), (5, 5)])
def test_download_attempt_count_matches_mxnet(tmp_path, monkeypatch, retries, attempts):
    # counts recorded from MXNet 1.9.1's download with a failing requests.get
    calls = []
    _serve(monkeypatch, {"http://x/y.bin": OSError("down")}, calls)
    with pytest.raises(tu.DownloadError, match=f"after {attempts} attempt"):
        tu.download("http://x/y.bin", dirname=str(tmp_path), retries=retries)
    assert len(calls) == attempts
