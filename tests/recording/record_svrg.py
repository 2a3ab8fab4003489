"""Record MXNet 1.9.1's SVRGModule arithmetic for tests/contrib/svrg_optimization.

Run with MXNet 1.9.1 (Python 3.8) from the repository root:
``/work/mxenv/bin/python tests/recording/record_svrg.py``. It writes
``tests/contrib/svrg_optimization/data/svrg_mxnet.json``. rebind never imports
MXNet; this script is kept so the file can be made again.

Each case is a linear regression (FullyConnected ``fc1`` with one output and
LinearRegressionOutput) on small integer data, weights initialised to one and
the bias to zero, iterated without shuffling. The case records the full
gradient after one ``update_full_grads`` (per context) and the weights after
each SVRG ``update`` of the following epoch. Only one refresh is recorded:
MXNet adds the previous full gradient into the next one, which rebind does not.
With several contexts MXNet's ``init_optimizer`` pulls zeros into the weights
on the devices; the script puts the weights back (``set_params``) before
training, so the recorded steps are the SVRG arithmetic itself.
"""

import json
import warnings
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule

OUT = Path("tests/contrib/svrg_optimization/data/svrg_mxnet.json")

CASES = {
    "one_context_padded": dict(n=10, batch=4, contexts=1, params={"learning_rate": 0.01}),
    "one_context_momentum": dict(
        n=12, batch=4, contexts=1, params={"learning_rate": 0.01, "momentum": 0.9, "wd": 0.01}
    ),
    "two_contexts": dict(n=16, batch=4, contexts=2, params={"learning_rate": 0.005}),
}


def network():
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("lin_reg_label")
    fc = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=1)
    return mx.sym.LinearRegressionOutput(data=fc, label=label, name="lro")


def record(n, batch, contexts, params, seed):
    rng = np.random.RandomState(seed)
    x = rng.randint(1, 5, [n, 2]).astype("float32")
    y = x.dot([1.0, 2.0]).astype("float32")
    it = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False, label_name="lin_reg_label")
    ctx = [mx.cpu(i) for i in range(contexts)]
    mod = SVRGModule(
        network(), data_names=["data"], label_names=["lin_reg_label"], context=ctx, update_freq=2
    )
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.One())
    mod.init_optimizer(optimizer="sgd", optimizer_params=params)
    arg, aux = mod.get_params()
    mod.set_params(arg, aux)
    case = {
        "x": x.tolist(),
        "y": y.tolist(),
        "batch_size": batch,
        "contexts": contexts,
        "optimizer_params": params,
        "idx2name": {str(k): v for k, v in mod._optimizer.idx2name.items()},
        "rescale_grad": mod._optimizer.rescale_grad,
        "optimizer_type": type(mod._optimizer).__name__,
        "default_type": type(mod._optimizer.default_opt).__name__,
    }
    mod.update_full_grads(it)
    case["full_grads"] = [{k: v.asnumpy().tolist() for k, v in d.items()} for d in mod._param_dict]
    it.reset()
    steps = []
    for b in it:
        mod.forward_backward(b)
        mod.update()
        arg, _ = mod.get_params()
        steps.append({k: v.asnumpy().tolist() for k, v in arg.items()})
    case["weights_after_each_update"] = steps
    return case


def main():
    warnings.simplefilter("ignore")
    result = {"mxnet": mx.__version__}
    for seed, (name, spec) in enumerate(CASES.items()):
        result[name] = record(seed=seed, **spec)
    OUT.write_text(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
