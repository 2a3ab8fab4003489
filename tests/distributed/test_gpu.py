"""The stores on GPUs: ``nccl`` (one process per GPU) and ``dist_device_sync`` (host copies).

Run where CuPy sees a GPU (``pytest -m gpu``); skipped with the reason elsewhere.
NCCL refuses two processes on one GPU, so its job has one worker per GPU
present, at most 2 (one GPU still runs NCCL: the store calls it even alone);
``dist_device_sync`` runs two workers, sharing a GPU if there is only one.
"""

import importlib.util

import numpy as np
import pytest

import rebind as mx

from ._launch import launch, needs_mpi, output

pytestmark = [pytest.mark.gpu, needs_mpi]


def _gpu_skip_reason():
    reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        return f"backend 'cupy' unavailable: {reason}"
    if mx.num_gpus() < 1:
        return "no GPU"
    return None


def _nccl_skip_reason():
    reason = _gpu_skip_reason()
    if reason is None and importlib.util.find_spec("cupy") is not None:
        from cupy.cuda import nccl

        if not getattr(nccl, "available", False):
            reason = "CuPy cannot load NCCL (pip install nvidia-nccl-cu12)"
    return reason


@pytest.mark.parametrize("store", ["nccl", "dist_device_sync"])
def test_fit_on_gpus_matches_one_process(tmp_path, store):
    reason = _nccl_skip_reason() if store == "nccl" else _gpu_skip_reason()
    if reason:
        pytest.skip(reason)
    # NCCL needs a GPU per worker; host copies let two workers share one
    workers = min(mx.num_gpus(), 2) if store == "nccl" else 2
    result, _ = launch(workers, "fit_worker.py", tmp_path, 2, store, "gpu", timeout=120)
    assert result.returncode == 0, output(result)
    with np.load(tmp_path / "rank0.npz") as first, np.load(tmp_path / "reference.npz") as ref:
        for name in ref.files:
            np.testing.assert_allclose(first[name], ref[name], rtol=1e-5, atol=1e-6)
        for rank in range(1, workers):
            with np.load(tmp_path / f"rank{rank}.npz") as theirs:
                for name in ref.files:
                    assert np.array_equal(theirs[name], first[name])
    assert f"rescale_grad {1.0 / (8 * workers)!r}" in result.stdout
