"""The Module benchmark's measurements, written once against the ``mx`` API.

``benchmarks/module.py`` runs every measurement in a fresh worker process (so
that each has its own peak resident set): ``_rebind_module.py`` and
``_mxnet_module.py`` import their library as ``mx`` and call ``main`` here,
``_numpy_module.py`` runs the hand-written NumPy loop. A worker's arguments are
jobs, and it prints one JSON object on stdout:

    fit:MODEL:SAMPLES:EPOCHS[:CONTEXTS]
                               Module.fit over SAMPLES synthetic examples for
                               1 + EPOCHS epochs (the first is the warm-up), on
                               CONTEXTS cpu contexts (default 1)
    predict:SAMPLES:REPEATS    MLP Module.predict at batch 1024 (bound for inference)
    latency:CALLS              MLP forward(is_train=False) + get_outputs()[0] at batch 1

Peak memory is ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (KiB on Linux), the
high-water mark of the whole process: interpreter, library, data and training.
It is read right after the imports and again at the end, so run a ``fit`` job on
its own when its memory is wanted.

Python 3.8 compatible (MXNet 1.9.1's interpreter).
"""

import json
import resource
import time

import _common

# the optimizer every implementation uses (MXNet's SGD with momentum, rescale 1/batch);
# LeNet's tanh layers diverge at the MLP's rate
LEARNING_RATES = {"mlp": 0.05, "mlp_small": 0.05, "lenet": 0.01}
# MXNet's example/image-classification/common/fit.py logs a Speedometer every 50 batches
SPEEDOMETER_FREQUENT = 50
MOMENTUM = 0.9
WD = 0.0001
PREDICT_BATCH = 1024


def peak_rss_kib():
    """The process's resident-set high-water mark so far, in KiB (Linux's unit)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def norm_of(arrays):
    """The 2-norm of all ``arrays`` (NumPy arrays) together, as a float (float64 sums)."""
    import numpy as np

    return float(np.sqrt(sum(np.sum(np.square(a, dtype=np.float64)) for a in arrays)))


def print_json(results):
    """Print ``results`` as the one JSON line the benchmark reads."""
    print(json.dumps(results))


def initial_params(mx, model):
    """The seeded starting parameters of ``model`` as ``mx`` NDArrays (same for everyone)."""
    arrays = _common.make_arrays(model)
    return {name: mx.nd.array(arrays[name]) for name in _common.param_shapes(model)}


def fit_job(mx, model, samples, epochs, contexts=1):
    """Train with ``Module.fit`` as MXNet's own fit script does; throughput after epoch one.

    The shape of MXNet's example/image-classification/common/fit.py: the
    iterator wrapped in ``ResizeIter`` (its epoch size), ``eval_metric='acc'``,
    ``kvstore='local'``, SGD with momentum, a ``Speedometer`` batch-end
    callback (its log lines go nowhere: logging stays at WARNING). ``contexts``
    > 1 binds ``[mx.cpu(0), mx.cpu(1), ...]`` (data parallel over the batch).
    """
    batch = _common.MODELS[model][0]
    data, labels = _common.make_dataset(model, samples)
    train = mx.io.ResizeIter(mx.io.NDArrayIter(data, labels, batch_size=batch), samples // batch)
    context = [mx.cpu(i) for i in range(contexts)] if contexts > 1 else mx.cpu()
    module = mx.mod.Module(_common.build_symbol(mx, model), context=context)
    metric = mx.metric.Accuracy()
    stamps = []
    module.fit(
        train,
        eval_metric=metric,
        kvstore="local",
        optimizer="sgd",
        optimizer_params={"learning_rate": LEARNING_RATES[model], "momentum": MOMENTUM, "wd": WD},
        arg_params=initial_params(mx, model),
        batch_end_callback=mx.callback.Speedometer(batch, SPEEDOMETER_FREQUENT),
        epoch_end_callback=lambda *args: stamps.append(time.perf_counter()),
        num_epoch=1 + epochs,
    )
    seen = (samples // batch) * batch
    arg_params, _ = module.get_params()
    return {
        "samples_per_s": per_second(seen, stamps),
        "last_epoch_acc": float(metric.get()[1]),
        "param_norm": norm_of(value.asnumpy() for value in arg_params.values()),
    }


def per_second(samples, stamps):
    """Samples per second between consecutive time stamps."""
    return [samples / (stamps[i + 1] - stamps[i]) for i in range(len(stamps) - 1)]


def _inference_module(mx, batch):
    """The MLP bound for inference at ``batch``, with the seeded parameters."""
    module = mx.mod.Module(_common.build_symbol(mx, "mlp"), context=mx.cpu())
    module.bind(data_shapes=[("data", (batch, 784))], for_training=False)
    module.set_params(initial_params(mx, "mlp"), {})
    return module


def predict_job(mx, samples, repeats):
    """``Module.predict`` of the MLP over ``samples`` examples in batches of 1024."""
    data, _ = _common.make_dataset("mlp", samples)
    module = _inference_module(mx, PREDICT_BATCH)
    data_iter = mx.io.NDArrayIter(data, batch_size=PREDICT_BATCH)
    rates = []
    for _ in range(repeats + 1):  # the first is a warm-up
        start = time.perf_counter()
        result = module.predict(data_iter)
        result.wait_to_read()
        rates.append(samples / (time.perf_counter() - start))
    return {"samples_per_s": rates[1:], "checksum": float(result.asnumpy()[:, 0].sum())}


def latency_job(mx, calls):
    """Microseconds of forward(is_train=False) + get_outputs()[0] at batch 1 (waited for)."""
    data, _ = _common.make_dataset("mlp", 1)
    module = _inference_module(mx, 1)
    batch = mx.io.DataBatch([mx.nd.array(data)])
    forward, get_outputs = module.forward, module.get_outputs
    times = []
    for _ in range(calls + calls // 10):
        start = time.perf_counter()
        forward(batch, is_train=False)
        get_outputs()[0].wait_to_read()
        times.append(time.perf_counter() - start)
    return {"microseconds": [1e6 * t for t in times[calls // 10 :]]}


JOBS = {"fit": fit_job, "predict": predict_job, "latency": latency_job}


def run_jobs(mx, specs, version):
    """Run the jobs ``specs`` (see the module docstring); the JSON-ready results."""
    results = {"version": version, "rss_after_import_kib": peak_rss_kib(), "jobs": {}}
    for spec in specs:
        name, *args = spec.split(":")
        args = [args[0]] + [int(a) for a in args[1:]] if name == "fit" else [int(a) for a in args]
        results["jobs"][spec] = JOBS[name](mx, *args)
    results["peak_rss_kib"] = peak_rss_kib()
    return results


def main(mx, specs, version):
    """Run ``specs`` with the library ``mx`` and print the results as JSON."""
    print_json(run_jobs(mx, specs, version))
