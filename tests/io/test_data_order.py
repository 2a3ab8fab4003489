"""Seeded scripts see MXNet 1.9.1's batch order (recorded in data/data_order.json).

MXNet's Python iterators shuffle with NumPy's global generator (NDArrayIter,
BucketSentenceIter's rows) and Python's ``random`` (BucketSentenceIter's batch
order); MNISTIter shuffles in C++ with ``std::mt19937(seed)``. The recording
holds the batches of several epochs and one draw of each global generator
afterwards, so the number of draws is checked too.
"""

import json
import random
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from tests.io import order_inputs

RECORD = json.loads((Path(__file__).parent / "data" / "data_order.json").read_text())


def _seed(seed):
    random.seed(seed)
    np.random.seed(seed)


def _after():
    return {"np": int(np.random.randint(1 << 30)), "py": random.randint(0, 1 << 30)}


def _case_id(case):
    return "-".join(f"{k}={case[k]}" for k in ("handle", "seed", "layout") if k in case)


@pytest.mark.parametrize("case", RECORD["ndarray_iter"], ids=_case_id)
def test_ndarray_iter_shuffles_as_mxnet(ctx, case):
    _seed(case["seed"])
    data, label = order_inputs.ndarray_inputs(case["count"])
    it = mx.io.NDArrayIter(
        mx.nd.array(data, ctx=ctx),
        mx.nd.array(label, ctx=ctx),
        batch_size=case["batch_size"],
        shuffle=True,
        last_batch_handle=case["handle"],
    )
    for expected in case["epochs"]:
        found = [
            {
                "data": b.data[0].asnumpy()[:, 0].tolist(),
                "label": b.label[0].asnumpy().tolist(),
                "pad": b.pad,
            }
            for b in it
        ]
        assert found == expected
        it.reset()
    assert _after() == case["after"]


@pytest.mark.parametrize("case", RECORD["bucket_sentence_iter"], ids=_case_id)
def test_bucket_sentence_iter_shuffles_as_mxnet(ctx, case):
    _seed(case["seed"])
    with ctx:
        it = mx.rnn.BucketSentenceIter(
            order_inputs.sentences(), 4, buckets=[3, 5, 8], invalid_label=0, layout=case["layout"]
        )
    for expected in case["epochs"]:
        found = []
        for b in it:
            data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
            if case["layout"] == "TN":
                data, label = data.T, label.T
            found.append(
                {
                    "bucket_key": b.bucket_key,
                    "first": data[:, 0].tolist(),
                    "label_first": label[:, 0].tolist(),
                }
            )
        assert found == expected
        it.reset()
    assert _after() == case["after"]


@pytest.mark.parametrize("case", RECORD["mnist_iter"], ids=lambda c: f"seed={c['seed']}")
def test_mnist_iter_shuffles_as_mxnet(tmp_path, case):
    image, label = order_inputs.write_mnist(str(tmp_path), order_inputs.MNIST_COUNT)
    it = mx.io.MNISTIter(
        image=image,
        label=label,
        batch_size=25,
        shuffle=True,
        seed=case["seed"],
        flat=True,
        silent=True,
        num_parts=case["num_parts"],
        part_index=case["part_index"],
    )
    order = []
    for b in it:
        ids = order_inputs.mnist_ids(b.data[0].asnumpy())
        np.testing.assert_array_equal(b.label[0].asnumpy(), np.array(ids) % 10)
        order.extend(ids)
    assert order == case["order"]
    it.reset()
    assert order_inputs.mnist_ids(it.next().data[0].asnumpy()) == case["order"][:25]


def test_the_global_generators_are_the_only_source_of_order(ctx):
    """Two runs from one seed agree; mx.random.seed does not move NDArrayIter (as in MXNet)."""
    orders = []
    for mx_seed in (1, 2):
        mx.random.seed(mx_seed)
        np.random.seed(5)
        it = mx.io.NDArrayIter(np.arange(12, dtype=np.float32), batch_size=4, shuffle=True)
        orders.append([b.data[0].asnumpy().tolist() for b in it])
    assert orders[0] == orders[1]
    assert orders[0] != [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
