"""Record the optimizer states MXNet 1.9.1's CPU kvstores save (tests/kvstore/test_kvstore.py).

Run with MXNet: ``/work/mxenv/bin/python tests/recording/record_kvstore_states.py``.
Each store gets an SGD (momentum 0.9, lr 0.1) updater, key 0 initialised from
cpu(1), one push of ones from cpu(0) and cpu(1); the saved ``.states`` file is
written to tests/golden/states/kvstore/NAME.states.
"""

from pathlib import Path

import mxnet as mx

OUT = Path(__file__).parent.parent / "golden" / "states" / "kvstore"
NAMES = ("local", "device")


def record(name):
    """Train one step on a ``name`` store and save its states under OUT."""
    store = mx.kv.create(name)
    store.set_optimizer(mx.optimizer.create("sgd", momentum=0.9, learning_rate=0.1))
    store.init(0, mx.nd.ones((2,), ctx=mx.cpu(1)))
    store.push(0, [mx.nd.ones((2,), ctx=mx.cpu(i)) for i in range(2)])
    store.save_optimizer_states(str(OUT / f"{name}.states"))


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for store_name in NAMES:
        record(store_name)
