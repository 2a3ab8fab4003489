"""Worker of ``benchmarks/gpu.py``: rebind's ``Module.fit`` on the GPU (or the CPU); prints JSON.

    python benchmarks/_gpu_rebind.py MODEL DEVICE SIZE BATCHES EPOCHS

(see ``_gpu_models``). The user's script: ``mx.mod.Module(symbol,
context=mx.gpu(0))`` and ``Module.fit`` over an ``mx.io.NDArrayIter`` built
from host NumPy arrays, ``eval_metric`` accuracy (every batch's outputs go to
the metric, which counts on the device and keeps its sum there until read:
no synchronisation per batch, see ``rebind.metric_sums``),
``kvstore='local'``, SGD with the model's learning rate, momentum and weight
decay (``_gpu_models.optimizer_params``), the seeded starting parameters via
``arg_params=``. Throughput is samples/s of each epoch after the first (the
warm-up: binding, kernel compilation), from ``epoch_end_callback`` time stamps.
After training it reports CuPy's memory pool and ``mx.context.gpu_memory_info``.
"""

import logging
import os
import sys
import time

import _common

_common.configure_threads()
os.environ["REBIND_PROGRESS"] = "0"

import _gpu_models as models  # noqa: E402
import numpy as np  # noqa: E402

import rebind as mx  # noqa: E402


def fit(model, device, size, batches, epochs, on_epoch_end=None):
    """Train 1 + ``epochs`` epochs with Module.fit; the JSON-ready result.

    ``on_epoch_end(epoch)``, if given, runs after each epoch's time stamp (the profiler's).
    """
    batch = models.BATCH[model]
    context = mx.gpu(0) if device == "gpu" else mx.cpu()
    data, labels = models.dataset(model, batches, size)
    params = models.initial_params(model, size)
    train = mx.io.NDArrayIter(data, labels, batch_size=batch)
    module = mx.mod.Module(
        models.build_symbol(mx, model, size),
        data_names=("data",),
        label_names=("softmax_label",),
        context=context,
    )
    metric = mx.metric.Accuracy()
    stamps = []

    def epoch_end(epoch, *args):
        stamps.append(time.perf_counter())
        if on_epoch_end is not None:
            on_epoch_end(epoch)

    started = time.perf_counter()
    module.fit(
        train,
        eval_metric=metric,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=models.optimizer_params(model),
        arg_params={name: mx.nd.array(value) for name, value in params.items()},
        epoch_end_callback=epoch_end,
        num_epoch=1 + epochs,
    )
    arg_params, _ = module.get_params()
    result = models.summary(
        batches * batch, stamps, metric.sum_metric, metric.num_inst, arg_params.values()
    )
    # the metric counts positions: samples for the classifiers, tokens for the LSTM
    result["warmup_s"] = stamps[0] - started
    result["transfer"] = "NDArrayIter over host NumPy arrays (Module copies each batch)"
    if device == "gpu":
        result.update(models.cupy_pool())
        try:
            free, total = mx.context.gpu_memory_info(0)
            result["device_used_mib"] = (total - free) / 2**20
        except Exception as exc:  # reported, not fatal: the rates are what matters
            result["device_used_mib"] = f"unavailable ({exc})"
    return result


def main(argv):
    model, device, size, batches, epochs = models.parse_job(argv)
    if device == "gpu":
        models.array_module("gpu")  # a clear message when CuPy is missing
    logging.disable(logging.WARNING)  # fit's per-epoch log lines
    result = fit(model, device, size, batches, epochs)
    result["version"] = f"rebind {mx.__version__} (numpy {np.__version__})"
    models.print_result(result)


if __name__ == "__main__":
    main(sys.argv[1:])
