"""The GPU memory report: the CuPy backend's figures and the line fit logs at its end.

No GPU is needed: the backend reads a stand-in CuPy, and the plugin is given
a module on ``gpu(0)`` whose backend reports fixed figures.
"""

import logging
from types import SimpleNamespace

import numpy as np
import pytest

import rebind as mx
from rebind.backends.cupy_backend import CupyBackend
from rebind.plugins import gpu_memory

from .fake_streams import FakeCupy

MIB, GIB = 2**20, 2**30


def test_the_cupy_backend_reports_its_pool_staging_and_device():
    cupy = FakeCupy()
    cupy.get_default_memory_pool = lambda: SimpleNamespace(
        used_bytes=lambda: 3 * MIB, total_bytes=lambda: 5 * MIB
    )
    cupy.cuda.runtime = SimpleNamespace(
        getDeviceCount=lambda: 1, memGetInfo=lambda: (70 * GIB, 80 * GIB)
    )
    backend = CupyBackend()
    backend._module = cupy
    assert backend.memory_report(0)["pinned_staging"] == 0  # nothing staged yet
    backend.copy_from_host(cupy.empty((4,), np.float32), np.ones(4, np.float32), 0)
    assert backend.memory_report(0) == {
        "pool_used": 3 * MIB,
        "pool_held": 5 * MIB,
        "pinned_staging": 4 * MIB,  # the smallest ring
        "device_free": 70 * GIB,
        "device_total": 80 * GIB,
    }
    with pytest.raises(mx.base.MXNetError, match="gpu\\(1\\) does not exist"):
        backend.memory_report(1)


def test_host_backends_report_nothing():
    assert mx.cpu().backend.memory_report(0) is None


def _module(contexts, records):
    logger = logging.getLogger("rebind.test_memory_report")
    logger.setLevel(logging.INFO)
    handler = logging.Handler()
    handler.emit = lambda record: records.append((record.levelno, record.getMessage()))
    logger.addHandler(handler)
    return SimpleNamespace(_context=contexts, logger=logger)


def test_fit_end_logs_one_line_per_gpu(monkeypatch):
    reports = {
        0: {"pool_used": 640 * MIB, "pool_held": 812 * MIB, "pinned_staging": 4 * MIB},
        1: {"pool_used": 0, "pool_held": 0, "pinned_staging": 0},
    }
    for report in reports.values():
        report.update(device_free=77 * GIB, device_total=80 * GIB)
    monkeypatch.setattr(CupyBackend, "memory_report", lambda _self, i: reports[i])
    records = []
    module = _module([mx.cpu(), mx.gpu(0), mx.gpu(1), mx.gpu(0)], records)
    gpu_memory.rebind_fit_end(module=module, num_epoch=1, eval_metric=None)
    assert records == [
        (
            logging.INFO,
            "gpu(0) after fit: CuPy's pool holds 812.0 MiB (640.0 MiB in arrays); "
            "pinned staging 4.0 MiB; device 77.0 of 80.0 GiB free",
        ),
        (
            logging.INFO,
            "gpu(1) after fit: CuPy's pool holds 0.0 MiB (0.0 MiB in arrays); "
            "device 77.0 of 80.0 GiB free",
        ),
    ]


def test_a_failing_report_is_a_warning_not_a_failed_fit(monkeypatch):
    def fails(_self, _index):
        raise RuntimeError("driver gone")

    monkeypatch.setattr(CupyBackend, "memory_report", fails)
    records = []
    gpu_memory.rebind_fit_end(module=_module(mx.gpu(0), records), num_epoch=1, eval_metric=None)
    assert records == [
        (logging.WARNING, "GPU memory report unavailable: RuntimeError('driver gone')")
    ]


def test_a_fit_on_the_cpu_logs_no_memory_line(caplog):
    data = np.random.RandomState(0).randn(16, 3).astype(np.float32)
    net = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2), name="softmax"
    )
    mod = mx.mod.Module(net, context=mx.cpu())
    with caplog.at_level(logging.INFO):
        mod.fit(mx.io.NDArrayIter(data, np.zeros(16), batch_size=8), num_epoch=1)
    assert not [r for r in caplog.records if "after fit" in r.getMessage()]
    assert gpu_memory.fit_memory_lines(mod) == []
