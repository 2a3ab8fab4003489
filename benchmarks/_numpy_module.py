"""Worker: the training loop ``Module.fit`` runs, written by hand in NumPy; prints JSON.

Run by ``benchmarks/module.py`` in a fresh process: ``python _numpy_module.py
fit:MODEL:SAMPLES:EPOCHS [...]`` or ``latency:CALLS`` (the MLP's forward at
batch 1, written as a NumPy programmer would: a matrix-vector product per
layer, bias and relu in place, the softmax of one row; the floor the Module's
batch-1 latency is measured against). Per batch: the forward and
backward step of ``_numpy_reference`` (the executor benchmark's yardstick), the
SGD-with-momentum update of every parameter as MXNet's kernel computes it
(``mom = momentum * mom - lr * wd * w - lr * rescale_grad * g; w += mom``, in
place through one scratch buffer), and the accuracy count. Batches are views of
the data set, as a NumPy programmer would slice them.
"""

import sys
import time

import _common

_common.configure_threads()

import _module_runs  # noqa: E402
import _numpy_reference  # noqa: E402
import numpy as np  # noqa: E402


def sgd_momentum(weight, grad, mom, scratch, lr, wd, momentum, rescale):
    """MXNet's SGD momentum update, in place, in its order of float32 operations."""
    f32 = np.float32
    mom *= f32(momentum)
    np.multiply(weight, f32(lr) * f32(wd), out=scratch)
    mom -= scratch
    np.multiply(grad, f32(lr) * f32(rescale), out=scratch)
    mom -= scratch
    weight += mom


def fit_job(model, samples, epochs):
    """Train for 1 + ``epochs`` epochs; per-epoch throughput after the first."""
    batch = _common.MODELS[model][0]
    data, labels = _common.make_dataset(model, samples)
    arrays = _common.make_arrays(model)
    params = {name: arrays[name] for name in _common.param_shapes(model)}
    moms = {name: np.zeros_like(value) for name, value in params.items()}
    scratch = {name: np.empty_like(value) for name, value in params.items()}
    step = _numpy_reference.STEPS[model]
    stamps, correct = [], 0
    for _ in range(1 + epochs):
        correct = 0
        for start in range(0, samples - batch + 1, batch):
            inputs = dict(params, data=data[start : start + batch])
            inputs["softmax_label"] = label = labels[start : start + batch]
            prob, grads = step(inputs)
            for name, grad in grads.items():
                sgd_momentum(
                    params[name],
                    grad,
                    moms[name],
                    scratch[name],
                    _module_runs.LEARNING_RATES[model],
                    _module_runs.WD,
                    _module_runs.MOMENTUM,
                    1.0 / batch,
                )
            correct += int(np.count_nonzero(prob.argmax(axis=1) == label))
        stamps.append(time.perf_counter())
    seen = (samples // batch) * batch
    return {
        "samples_per_s": _module_runs.per_second(seen, stamps),
        "last_epoch_acc": correct / seen,
        "param_norm": _module_runs.norm_of(params.values()),
    }


def latency_job(calls):
    """Microseconds of the hand-written MLP forward at batch 1 (same data and weights)."""
    data, _ = _common.make_dataset("mlp", 1)
    a = _common.make_arrays("mlp")
    w1, w2, w3 = a["fc1_weight"], a["fc2_weight"], a["fc3_weight"]
    b1, b2, b3 = a["fc1_bias"], a["fc2_bias"], a["fc3_bias"]
    x = data[0]

    def forward():
        h = np.dot(w1, x)
        h += b1
        np.maximum(h, 0, out=h)
        h2 = np.dot(w2, h)
        h2 += b2
        np.maximum(h2, 0, out=h2)
        out = np.dot(w3, h2)
        out += b3
        out -= out.max()
        np.exp(out, out=out)
        out /= out.sum()
        return out

    times = []
    for _ in range(calls + calls // 10):
        start = time.perf_counter()
        forward()
        times.append(time.perf_counter() - start)
    return {"microseconds": [1e6 * t for t in times[calls // 10 :]]}


def main(specs):
    results = {
        "version": "NumPy " + np.__version__ + ", hand-written loop",
        "rss_after_import_kib": _module_runs.peak_rss_kib(),
        "jobs": {},
    }
    for spec in specs:
        name, *args = spec.split(":")
        if name == "fit":
            model, samples, epochs = args
            results["jobs"][spec] = fit_job(model, int(samples), int(epochs))
        elif name == "latency":
            results["jobs"][spec] = latency_job(int(args[0]))
        else:
            raise SystemExit(f"_numpy_module.py runs fit and latency jobs, got {spec!r}")
    results["peak_rss_kib"] = _module_runs.peak_rss_kib()
    _module_runs.print_json(results)


if __name__ == "__main__":
    main(sys.argv[1:])
