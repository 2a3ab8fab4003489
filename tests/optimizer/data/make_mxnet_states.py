"""Regenerate the MXNet-written updater states used by test_optimizer.py.

Run with MXNet 1.9.1 (Python 3.8): ``python make_mxnet_states.py``. It writes
``mxnet_1.9.1_updater.states`` (``Updater.get_states()``, a pickle),
``mxnet_1.9.1_updater_expected.params`` (the same state arrays, by
``index/position`` name, through ``mx.nd.save``) and
``mxnet_1.9.1_dump_optimizer.states`` (``get_states(dump_optimizer=True)``,
which rebind must refuse). rebind never imports MXNet; this script is only
kept so the files can be made again.
"""

import mxnet as mx
import numpy as np


def main():
    rs = np.random.RandomState(0)
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam", learning_rate=0.01))
    for index in (0, "fc_bias"):
        weight = mx.nd.array(rs.randn(2, 3))
        updater(index, mx.nd.array(rs.randn(2, 3)), weight)
    sgd = mx.optimizer.get_updater(mx.optimizer.create("dcasgd", learning_rate=0.1))
    sgd(3, mx.nd.array(rs.randn(4)), mx.nd.array(rs.randn(4)))
    updater.states[3] = sgd.states[3]  # (None, previous weight)
    with open("mxnet_1.9.1_updater.states", "wb") as out:
        out.write(updater.get_states())
    expected = {}
    for index, state in updater.states.items():
        for position, array in enumerate(state):
            if array is not None:
                expected[f"{index}/{position}"] = array
    mx.nd.save("mxnet_1.9.1_updater_expected.params", expected)
    with open("mxnet_1.9.1_dump_optimizer.states", "wb") as out:
        out.write(updater.get_states(dump_optimizer=True))


if __name__ == "__main__":
    main()
