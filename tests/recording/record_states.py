"""Record optimizer ``.states`` exchanged between MXNet 1.9.1 and rebind, both ways.

Run in two stages, rebind first (its checkpoints are MXNet's input)::

    /work/venv/bin/python tests/recording/record_states.py rebind
    /work/mxenv/bin/python tests/recording/record_states.py mxnet

into tests/golden/states/<case>/ for each case of tests/optimizer/states_cases.py:

- rebind stage: ``rebind-symbol.json``, ``rebind-0001.params``,
  ``rebind-0001.states`` (rebind trained STEPS batches and checkpointed);
- MXNet stage: ``mxnet-*`` (the same, trained by MXNet), ``mxnet_resumed.params``
  (MXNet loaded its checkpoint with the states and trained STEPS more) and
  ``rebind_resumed_by_mxnet.params`` (MXNet did the same from rebind's files);

and, MXNet stage only, tests/golden/states/updater/*.states: ``Updater.get_states()``
of MXNet's updater for states that exercise the pickle's framing (a record over
64 KiB) and batching (1000 and 1001 states).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "golden", "states")
sys.path.insert(0, os.path.join(HERE, "..", "optimizer"))
from states_cases import CASES, resume, train_and_save  # noqa: E402


def record_rebind():
    import rebind as mx

    for case in CASES:
        folder = os.path.join(OUT, case)
        os.makedirs(folder, exist_ok=True)
        train_and_save(mx, case, os.path.join(folder, "rebind"))


def record_mxnet():
    import mxnet as mx

    for case in CASES:
        folder = os.path.join(OUT, case)
        train_and_save(mx, case, os.path.join(folder, "mxnet"))
        mx.nd.save(
            os.path.join(folder, "mxnet_resumed.params"), resume(mx, case, f"{folder}/mxnet")
        )
        rebind_prefix = os.path.join(folder, "rebind")
        resumed = resume(mx, case, rebind_prefix)
        mx.nd.save(os.path.join(folder, "rebind_resumed_by_mxnet.params"), resumed)
    record_updater_states(mx)


def record_updater_states(mx):
    """MXNet updater states chosen for the pickle's framing and batching rules."""
    folder = os.path.join(OUT, "updater")
    os.makedirs(folder, exist_ok=True)
    rs = np.random.RandomState(2)
    momentum = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    # 16400 float32 values make a 65,648-byte record: over the 64 KiB frame size
    for index, size in enumerate((5, 16400, 7)):
        momentum(index, mx.nd.array(rs.randn(size)), mx.nd.array(rs.randn(size)))
    _write(folder, "large_record", momentum)
    for count in (1000, 1001):
        plain = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
        for index in range(count):
            plain(index, mx.nd.ones((1,)), mx.nd.ones((1,)))
        _write(folder, f"none_x{count}", plain)


def _write(folder, name, updater):
    with open(os.path.join(folder, f"{name}.states"), "wb") as out:
        out.write(updater.get_states())


if __name__ == "__main__":
    if sys.argv[1:] == ["rebind"]:
        record_rebind()
    elif sys.argv[1:] == ["mxnet"]:
        record_mxnet()
    else:
        sys.exit("usage: record_states.py rebind|mxnet")
