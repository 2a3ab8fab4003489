"""Worker of ``benchmarks/cnn.py --fit``: one training run of rebind or MXNet in its own process.

    python _cnn_fit_worker.py IMPL WORKLOAD CONTEXTS EPOCHS SAMPLES INPUTS

IMPL is ``rebind`` or ``mxnet`` (run with the MXNet 1.9.1 interpreter);
WORKLOAD ``mlp`` or ``lenet`` (``Module.fit`` of ``_module_runs.fit_job`` over
SAMPLES synthetic examples, as ``benchmarks/module.py`` trains) or ``lstm``
(``BucketingModule.fit`` of ``benchmarks/bucketing.py``'s LSTM LM over the
batches in INPUTS, an .npz ``_lstm_lm.save_inputs`` wrote); CONTEXTS cpu
contexts. The MLP and LeNet run a warm-up epoch and EPOCHS timed ones, then
print one JSON line: samples/s of each timed epoch, CPU seconds of the whole
run (every thread), the peak RSS and the last epoch's accuracy. The LSTM
serves epochs: after its warm-up epoch it prints ``{"ready": ...}``, then each
``run`` line trains one epoch and prints its tokens/s, CPU seconds, the peak
RSS and the last batch's loss (EPOCHS and SAMPLES unused). Thread settings are
the user's: none are set here. Python 3.8 compatible.
"""

import json
import logging
import os
import resource
import sys
import time
import warnings

os.environ.setdefault("REBIND_PROGRESS", "0")  # no progress bar in the worker's output

import _bucketing_runs  # noqa: E402
import _common  # noqa: E402
import _lstm_lm as lm  # noqa: E402
import _module_runs  # noqa: E402


def library(impl):
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)  # fit's per-epoch log lines
    if impl == "mxnet":
        import mxnet as mx

        return mx, "MXNet " + mx.__version__
    import rebind as mx

    return mx, "rebind " + mx.__version__


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def answer(result):
    result["peak_rss_kib"] = _common.peak_rss_kib()
    print(json.dumps(result), flush=True)


def serve_lstm(mx, version, inputs, contexts):
    """BucketingModule.fit of the LSTM LM, one epoch per ``run`` line (after a warm-up one).

    Answers ``ready`` once the warm-up epoch (which binds the buckets) is done,
    then, per ``run``, the epoch's tokens/s, CPU seconds and last batch's loss.
    """
    params, batches = lm.load_inputs(inputs)
    trainer = _bucketing_runs.BucketingTrainer(mx, params, batches, contexts)
    trainer.epoch(with_loss=False)
    answer({"ready": True, "version": version})
    tokens = lm.tokens(batches)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        cpu0, start = cpu_seconds(), time.perf_counter()
        trainer.epoch(with_loss=False)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
        # the loss is read back after the clock stopped
        loss = lm.cross_entropy(trainer.module.get_outputs()[0].asnumpy(), batches[-1][2])
        answer({"rates": [tokens / seconds], "cpu": cpu, "work": tokens, "check": loss})


def module_job(mx, model, samples, epochs, contexts):
    """Module.fit of the MLP or LeNet; samples/s of each timed epoch."""
    result = _module_runs.fit_job(mx, model, samples, epochs, contexts)
    batch = _common.MODELS[model][0]
    work = (samples // batch) * batch * (epochs + 1)
    return {"rates": result["samples_per_s"], "check": result["last_epoch_acc"], "work": work}


def main(argv):
    impl, workload, contexts, epochs, samples, inputs = argv
    contexts, epochs, samples = int(contexts), int(epochs), int(samples)
    mx, version = library(impl)
    if workload == "lstm":
        serve_lstm(mx, version, inputs, contexts)
        return
    cpu0 = cpu_seconds()
    result = module_job(mx, workload, samples, epochs, contexts)
    result.update(version=version, cpu=cpu_seconds() - cpu0)
    answer(result)


if __name__ == "__main__":
    main(sys.argv[1:])
