"""Worker: the benchmark models in PyTorch (eager, CPU); prints JSON on stdout.

Run by ``benchmarks/executor.py`` under an interpreter with torch:
``python _torch_step.py MODEL:STEPS:WARMUP [...]``. The loss is the summed
cross-entropy, whose gradient is SoftmaxOutput's (softmax - onehot, no
normalization); a step is forward + backward of the parameters' gradients.
"""

import json
import sys

import _common

THREADS = _common.configure_threads()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from _gpu_torch import classifier  # noqa: E402  (the same models, on any device)

torch.set_num_threads(THREADS)


def run(model, steps, warmup):
    arrays = _common.make_arrays(model)
    data = torch.from_numpy(arrays["data"])
    label = torch.from_numpy(arrays["softmax_label"]).long()
    params = {
        name: torch.from_numpy(arrays[name]).requires_grad_()
        for name in _common.param_shapes(model)
    }

    def step():
        for value in params.values():
            value.grad = None
        logits = classifier(model, params, data)
        F.cross_entropy(logits, label, reduction="sum").backward()
        return logits

    logits = step()
    prob = torch.softmax(logits.detach(), dim=1).numpy()
    grads = {name: value.grad.numpy() for name, value in params.items()}
    check = _common.fingerprint(prob, arrays["softmax_label"], grads)
    times = _common.time_steps(step, steps, warmup)
    return {"times": times, "check": check, "version": "PyTorch " + torch.__version__}


def main(argv):
    results = {}
    for spec in argv:
        model, steps, warmup = spec.split(":")
        results[model] = run(model, int(steps), int(warmup))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
