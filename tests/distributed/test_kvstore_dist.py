"""The distributed stores: their API between MPI workers, and what needs no MPI at all."""

import sys

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.plugins import kvstores_dist, mpi_comm
from rebind.plugins.kvstores_local import LocalKVStore

from ._launch import launch, needs_mpi, output


@needs_mpi
@pytest.mark.parametrize("workers", [2, 3])
def test_store_api_between_workers(workers, tmp_path):
    result, _ = launch(workers, "kvstore_worker.py", tmp_path)
    assert result.returncode == 0, output(result)
    for rank in range(workers):
        assert f"rank {rank}: kvstore checks passed" in result.stdout, output(result)
    assert (tmp_path / "kv.states").exists()


@pytest.mark.parametrize("name", ["dist_async", "dist_device_async"])
def test_async_stores_are_refused_with_the_alternatives(name):
    with pytest.raises(NotImplementedError, match="use kvstore='dist_sync'"):
        mx.kv.create(name)


def test_dist_stores_are_registered_by_the_plugin():
    owner = mx.registry.get_registry("kvstores").owner("dist_sync")
    assert owner == "rebind.plugins.kvstores_dist"


def test_without_mpi4py_the_error_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"pip install 'rebind\[mpi\]'") as caught:
        mx.kv.create("dist_sync")
    assert isinstance(caught.value, mpi_comm.MPIUnavailableError)


@pytest.mark.parametrize("text, seconds", [("", 60.0), ("2.5", 2.5), ("0", None), ("-1", None)])
def test_timeout_comes_from_the_environment(monkeypatch, text, seconds):
    monkeypatch.setenv("REBIND_MPI_TIMEOUT", text)
    assert mpi_comm.read_timeout() == seconds


def test_a_bad_timeout_is_an_error(monkeypatch):
    monkeypatch.setenv("REBIND_MPI_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="REBIND_MPI_TIMEOUT='soon' is not a number"):
        mpi_comm.read_timeout()


def test_shape_mismatch_message_names_key_ranks_and_shapes():
    first = [["fc1_weight", [[16, 10]], ["float32"]]]
    theirs = [["fc1_weight", [[17, 10]], ["float32"]]]
    error = kvstores_dist._layout_error("dist_sync", first, theirs, 2)
    assert isinstance(error, ShapeError)
    assert "key 'fc1_weight': shape (16, 10) on rank 0 but (17, 10) on rank 2" in str(error)


def test_different_keys_are_named():
    error = kvstores_dist._layout_error("dist_sync", [["a", [[1]], ["float32"]]], [], 1)
    assert "rank 0 initializes ['a'], rank 1 initializes []" in str(error)


# -- what Module does with a store of several workers (a fake one, no MPI) ----------------


class FakeWorkerStore(LocalKVStore):
    """A local store that claims to be worker ``rank`` of ``workers``; counts barriers.

    Its ``init`` stores 7.0 everywhere, standing for rank 0's parameters.
    """

    def __init__(self, rank, workers):
        super().__init__("dist_sync")
        self._rank, self._workers, self.barriers = rank, workers, 0

    @property
    def rank(self):
        return self._rank

    @property
    def num_workers(self):
        return self._workers

    def init(self, key, value):
        super().init(key, value)
        for stored in self._store.values():
            stored[:] = 7.0

    def barrier(self):
        self.barriers += 1


def _module(store, batch=4):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    module = mx.mod.Module(mx.sym.SoftmaxOutput(net, name="softmax"), context=mx.cpu())
    module.bind(data_shapes=[("data", (batch, 5))], label_shapes=[("softmax_label", (batch,))])
    module.init_params()
    module.init_optimizer(kvstore=store, optimizer="sgd")
    return module


def test_init_optimizer_scales_rescale_grad_by_the_workers():
    module = _module(FakeWorkerStore(0, 4), batch=4)
    assert module._optimizer.rescale_grad == pytest.approx(1 / 16)
    assert module._update_on_kvstore


@pytest.mark.parametrize("update_on_kvstore", ["1", "0"])
def test_every_worker_starts_from_the_stores_parameters(monkeypatch, update_on_kvstore):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", update_on_kvstore)
    module = _module(FakeWorkerStore(1, 2))
    assert module._update_on_kvstore == (update_on_kvstore == "1")
    on_device = module._exec_group.param_arrays[0][0].asnumpy()
    assert np.all(on_device == 7.0)
    assert np.all(module.get_params()[0]["fc_weight"].asnumpy() == 7.0)


@pytest.mark.parametrize("rank, writes", [(0, True), (1, False)])
def test_only_rank_0_writes_checkpoints(tmp_path, rank, writes):
    store = FakeWorkerStore(rank, 2)
    module = _module(store)
    module.save_checkpoint(str(tmp_path / "m"), 1, save_optimizer_states=True)
    written = {path.name for path in tmp_path.iterdir()}
    checkpoint = {"m-0001.params", "m-symbol.json"}
    assert (checkpoint <= written) if writes else not (checkpoint & written)
    assert store.barriers == 1


def test_nccl_without_cupy_names_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(RuntimeError, match=r"kvstore 'nccl' needs CuPy with NCCL"):
        mx.kv.create("nccl")


@pytest.mark.parametrize(
    "unique_id",
    [bytes(range(256))[:128], tuple(range(-64, 64))],
    ids=["bytes (CuPy 14)", "tuple of ints (older CuPy)"],
)
def test_nccl_unique_id_reaches_every_rank_as_rank_0_got_it(unique_id):
    from rebind.plugins.kvstores_nccl import pack_unique_id, unpack_unique_id

    message = pack_unique_id(unique_id)
    assert isinstance(message, bytes)
    received = unpack_unique_id(message)
    assert type(received) is type(unique_id) and received == unique_id


def test_nccl_unique_id_of_an_unknown_kind_is_refused():
    from rebind.plugins.kvstores_nccl import unpack_unique_id

    with pytest.raises(mpi_comm.DistributedError, match="unknown kind"):
        unpack_unique_id(b"x1234")


@needs_mpi
def test_row_sparse_values_between_workers():
    result, _ = launch(2, "sparse_kvstore_worker.py")
    assert result.returncode == 0, output(result)
    for rank in range(2):
        assert f"rank {rank}: sparse kvstore checks passed" in result.stdout, output(result)
