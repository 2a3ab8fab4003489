"""Regenerate the MXNet-written Module optimizer states used by test_checkpoints.py.

Run with MXNet 1.9.1 (Python 3.8) from this folder: ``python make_mxnet_module_states.py``.
It loads the golden ``mlp`` checkpoint (epoch 3), trains one batch with SGD and
momentum, and writes ``mlp_momentum.states`` (``Module.save_optimizer_states``:
MXNet's pickle) and the parameters at that point (``mlp_momentum_before.params``),
then trains one more batch and writes the parameters after it
(``mlp_momentum_after.params``). rebind never imports MXNet; this script is
only kept so the files can be made again.
"""

import mxnet as mx
import numpy as np

PREFIX = "../../golden/checkpoints/mlp/mlp"


def main():
    data = np.load(PREFIX + "-data.npz")
    x, y = data["train.data"][:8], data["train.softmax_label"][:8]
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod = mx.mod.Module.load(PREFIX, 3)
    mod.bind([("data", (8, 12))], [("softmax_label", (8,))])
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.forward_backward(batch)
    mod.update()
    mod.save_optimizer_states("mlp_momentum.states")
    arg_params, _ = mod.get_params()
    mx.nd.save("mlp_momentum_before.params", {"arg:" + k: v for k, v in arg_params.items()})
    mod.forward_backward(batch)
    mod.update()
    arg_params, _ = mod.get_params()
    mx.nd.save("mlp_momentum_after.params", {"arg:" + k: v for k, v in arg_params.items()})


if __name__ == "__main__":
    main()
