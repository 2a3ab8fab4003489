"""Record MXNet 1.9.1's batch order for seeded shuffling iterators (run with real MXNet).

    /work/mxenv/bin/python tests/recording/record_data_order.py

Writes tests/io/data/data_order.json: for NDArrayIter(shuffle=True) in every
``last_batch_handle`` mode, for BucketSentenceIter, and for MNISTIter(shuffle=True)
(on small idx files made by ``tests/io/order_inputs.py``), the values seen in
each batch over several epochs after seeding Python's ``random`` and NumPy's
global generator, and one draw from each generator afterwards (so the number
of draws the iterators consumed is recorded too).
"""

import json
import os
import random
import sys
import tempfile

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "io"))
import order_inputs  # noqa: E402  (shared with the test: the same inputs)

EPOCHS = 3


def _seed(seed):
    random.seed(seed)
    np.random.seed(seed)


def _after():
    """One draw of each global generator: shows how many draws the iterator used."""
    return {"np": int(np.random.randint(1 << 30)), "py": random.randint(0, 1 << 30)}


def record_ndarray_iter():
    cases = []
    for handle in ("pad", "discard", "roll_over"):
        for seed, count, batch in ((0, 10, 3), (42, 11, 4), (7, 8, 4)):
            _seed(seed)
            data, label = order_inputs.ndarray_inputs(count)
            it = mx.io.NDArrayIter(
                data, label, batch_size=batch, shuffle=True, last_batch_handle=handle
            )
            epochs = []
            for _ in range(EPOCHS):
                epochs.append(
                    [
                        {
                            "data": b.data[0].asnumpy()[:, 0].tolist(),
                            "label": b.label[0].asnumpy().tolist(),
                            "pad": b.pad,
                        }
                        for b in it
                    ]
                )
                it.reset()
            cases.append(
                {
                    "handle": handle,
                    "seed": seed,
                    "count": count,
                    "batch_size": batch,
                    "epochs": epochs,
                    "after": _after(),
                }
            )
    return cases


def record_bucket_sentence_iter():
    cases = []
    for seed, layout in ((3, "NT"), (19, "TN")):
        _seed(seed)
        sentences = order_inputs.sentences()
        it = mx.rnn.BucketSentenceIter(
            sentences, 4, buckets=[3, 5, 8], invalid_label=0, layout=layout
        )
        epochs = []
        for _ in range(EPOCHS):
            batches = []
            for b in it:
                data = b.data[0].asnumpy()
                label = b.label[0].asnumpy()
                if layout == "TN":
                    data, label = data.T, label.T
                batches.append(
                    {
                        "bucket_key": b.bucket_key,
                        "first": data[:, 0].tolist(),
                        "label_first": label[:, 0].tolist(),
                    }
                )
            epochs.append(batches)
            it.reset()
        cases.append({"seed": seed, "layout": layout, "epochs": epochs, "after": _after()})
    return cases


def record_mnist_iter():
    cases = []
    with tempfile.TemporaryDirectory() as folder:
        image, label = order_inputs.write_mnist(folder, order_inputs.MNIST_COUNT)
        for seed, parts, part in ((0, 1, 0), (10, 1, 0), (123, 3, 1)):
            it = mx.io.MNISTIter(
                image=image,
                label=label,
                batch_size=25,
                shuffle=True,
                seed=seed,
                flat=True,
                silent=True,
                num_parts=parts,
                part_index=part,
            )
            order = []
            for b in it:
                order.extend(order_inputs.mnist_ids(b.data[0].asnumpy()))
            cases.append({"seed": seed, "num_parts": parts, "part_index": part, "order": order})
    return cases


def _one_case_a_line(record):
    """JSON with one line per recorded case: small, and a diff shows which case moved."""
    lines = ["{"]
    for number, (key, value) in enumerate(record.items()):
        comma = "," if number < len(record) - 1 else ""
        if isinstance(value, list):
            cases = ",\n  ".join(json.dumps(case, separators=(",", ":")) for case in value)
            lines.append(f' "{key}": [\n  {cases}\n ]{comma}')
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{comma}")
    return "\n".join(lines + ["}"]) + "\n"


def main():
    record = {
        "mxnet": mx.__version__,
        "numpy": np.__version__,
        "ndarray_iter": record_ndarray_iter(),
        "bucket_sentence_iter": record_bucket_sentence_iter(),
        "mnist_iter": record_mnist_iter(),
    }
    path = os.path.join(HERE, "..", "io", "data", "data_order.json")
    with open(path, "w") as handle:
        handle.write(_one_case_a_line(record))
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
