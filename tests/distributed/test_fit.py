"""Module.fit with dist_sync on 2 and 3 MPI workers: identical weights, equal to one process.

The workers (``workers/fit_worker.py``) start from different random
initializations and train on their own parts of the data; the store must copy
rank 0's parameters at init, sum the gradients over workers every batch and
update identically, which makes every worker's weights equal to those of one
process training on the concatenation of the workers' batches.
"""

import re

import numpy as np
import pytest

import rebind as mx

from ._launch import launch, needs_mpi, output

EPOCHS = 2


@pytest.fixture(scope="module", params=[2, 3], ids=["2-workers", "3-workers"])
def trained(request, tmp_path_factory):
    """``(workers, folder, result)`` of one fit_worker job."""
    folder = tmp_path_factory.mktemp(f"fit{request.param}")
    result, _ = launch(request.param, "fit_worker.py", folder, EPOCHS)
    assert result.returncode == 0, output(result)
    return request.param, folder, result


def _load(path):
    with np.load(path) as saved:
        return dict(saved)


@needs_mpi
def test_every_worker_holds_the_same_weights(trained):
    workers, folder, result = trained
    first = _load(folder / "rank0.npz")
    for rank in range(1, workers):
        theirs = _load(folder / f"rank{rank}.npz")
        for name, value in first.items():
            assert np.array_equal(theirs[name], value), f"rank {rank} differs on {name}"


@needs_mpi
def test_weights_equal_one_process_on_the_concatenated_batches(trained):
    _, folder, _ = trained
    workers_weights = _load(folder / "rank0.npz")
    reference = _load(folder / "reference.npz")
    assert sorted(workers_weights) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    for name, value in reference.items():
        np.testing.assert_allclose(workers_weights[name], value, rtol=1e-5, atol=1e-6)


@needs_mpi
def test_rescale_grad_counts_every_workers_batch(trained):
    workers, _, result = trained
    found = re.findall(r"rescale_grad ([0-9.e-]+)", result.stdout)
    assert [float(value) for value in found] == [1.0 / (8 * workers)] * workers, output(result)


@needs_mpi
def test_rank_0_alone_writes_checkpoints_that_load_anywhere(trained):
    workers, folder, result = trained
    # one "Saved checkpoint" line per epoch: rank 0's; the others wrote nothing
    assert result.stderr.count("Saved checkpoint to") == EPOCHS, output(result)
    assert result.stdout.count("checkpoint of rank 0 equals my weights: True") == workers
    assert result.stdout.count("optimizer states loaded from rank 0") == workers
    _, arg_params, _ = mx.model.load_checkpoint(str(folder / "model"), EPOCHS)
    for name, value in _load(folder / "rank0.npz").items():
        assert np.array_equal(arg_params[name].asnumpy(), value)
    module = mx.mod.Module.load(str(folder / "model"), EPOCHS, load_optimizer_states=True)
    module.bind(data_shapes=[("data", (8, 10))], label_shapes=[("softmax_label", (8,))])
    module.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    assert module.optimizer_initialized
