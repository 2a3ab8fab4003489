"""Worker: MXNet 1.9.1's executor on the benchmark models; prints JSON on stdout.

Run by ``benchmarks/executor.py`` under the MXNet interpreter (Python 3.8):
``python _mxnet_executor.py MODEL:STEPS:WARMUP [...]``. For each model it
prints the step times (forward(is_train=True) + backward() + waitall) and a
fingerprint of the first step (loss and gradient norms).
"""

import json
import sys

import _common

_common.configure_threads()

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402


def run(model, steps, warmup):
    arrays = _common.make_arrays(model)
    batch, shape = _common.MODELS[model]
    symbol = _common.build_symbol(mx, model)
    exe = symbol.simple_bind(
        mx.cpu(),
        grad_req=_common.grad_request(model),
        data=(batch,) + shape,
        softmax_label=(batch,),
    )
    for name, value in arrays.items():
        exe.arg_dict[name][:] = value

    def step():
        exe.forward(is_train=True)
        exe.backward()
        mx.nd.waitall()

    step()
    grads = {name: exe.grad_dict[name].asnumpy() for name in _common.param_shapes(model)}
    check = _common.fingerprint(exe.outputs[0].asnumpy(), arrays["softmax_label"], grads)
    times = _common.time_steps(step, steps, warmup)
    return {
        "times": times,
        "check": check,
        "version": "MXNet " + mx.__version__ + " (numpy " + np.__version__ + ")",
    }


def main(argv):
    results = {}
    for spec in argv:
        model, steps, warmup = spec.split(":")
        results[model] = run(model, int(steps), int(warmup))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
