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

torch.set_num_threads(THREADS)


def forward(model, p, data):
    if model == "mlp":
        x = F.relu(F.linear(data, p["fc1_weight"], p["fc1_bias"]))
        x = F.relu(F.linear(x, p["fc2_weight"], p["fc2_bias"]))
        return F.linear(x, p["fc3_weight"], p["fc3_bias"])
    x = torch.tanh(F.conv2d(data, p["conv1_weight"], p["conv1_bias"]))
    x = F.max_pool2d(x, 2, 2)
    x = torch.tanh(F.conv2d(x, p["conv2_weight"], p["conv2_bias"]))
    x = F.max_pool2d(x, 2, 2).flatten(1)
    x = torch.tanh(F.linear(x, p["fc1_weight"], p["fc1_bias"]))
    return F.linear(x, p["fc2_weight"], p["fc2_bias"])


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
        logits = forward(model, params, data)
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
