"""Training the benchmark's LSTM LM with a BucketingModule, for rebind and MXNet alike.

``mx`` is whichever library runs (``import rebind as mx`` or ``import mxnet as
mx``): the code is the user's script, unchanged between them. Also the worker
protocol (``serve``) and the memory measurement (``measure_memory``) the
framework workers share. Python 3.8 compatible.
"""

import json
import resource
import sys
import time

import _lstm_lm as lm


class BucketingTrainer:
    """A bound, initialized BucketingModule and the epoch's batches as DataBatches."""

    def __init__(self, mx, params, batches, contexts=1):
        self.mx = mx
        largest = max(lm.BUCKETS)
        self.module = mx.mod.BucketingModule(
            lambda seq_len: lm.lm_symbol(mx, seq_len),
            default_bucket_key=largest,
            context=[mx.cpu(i) for i in range(contexts)] if contexts > 1 else mx.cpu(),
        )
        self.module.bind(
            data_shapes=[("data", (lm.BATCH, largest))],
            label_shapes=[("softmax_label", (lm.BATCH, largest))],
        )
        self.module.init_params(arg_params={k: mx.nd.array(v) for k, v in params.items()})
        self._optimizer_params = {
            "learning_rate": lm.LEARNING_RATE,
            "momentum": 0.0,
            "wd": lm.WEIGHT_DECAY,
        }
        self.module.init_optimizer(optimizer="sgd", optimizer_params=self._optimizer_params)
        self.batches = [self._data_batch(*b) for b in batches]
        self.labels = [label for _, _, label in batches]

    def _data_batch(self, bucket, data, label):
        mx = self.mx
        return mx.io.DataBatch(
            [mx.nd.array(data)],
            [mx.nd.array(label)],
            bucket_key=bucket,
            provide_data=[mx.io.DataDesc("data", data.shape)],
            provide_label=[mx.io.DataDesc("softmax_label", label.shape)],
        )

    def epoch(self, with_loss=True):
        """One epoch of ``BucketingModule.fit`` over the batches, as MXNet's example trains.

        The module is bound and initialized already (fit leaves it so); no metric
        is computed (``_NoMetric``), so an epoch is fit's own step on every
        batch: forward, backward and the update. Returns the last batch's loss.
        """
        self.module.fit(
            _Batches(self.mx, self.batches),
            eval_metric=_no_metric(self.mx),
            optimizer="sgd",
            optimizer_params=self._optimizer_params,
            num_epoch=1,
        )
        self.mx.nd.waitall()
        if not with_loss:  # (reading the output back copies it: not for memory runs)
            return None
        return lm.cross_entropy(self.module.get_outputs()[0].asnumpy(), self.labels[-1])


def _Batches(mx, batches):  # noqa: N802 (a class made for the running library)
    """A DataIter over prepared bucketed DataBatches (what BucketSentenceIter yields)."""

    class Batches(mx.io.DataIter):
        def __init__(self):
            super().__init__(lm.BATCH)
            largest = max(lm.BUCKETS)
            self.default_bucket_key = largest
            self.provide_data = [mx.io.DataDesc("data", (lm.BATCH, largest))]
            self.provide_label = [mx.io.DataDesc("softmax_label", (lm.BATCH, largest))]
            self._next = 0

        def reset(self):
            self._next = 0

        def next(self):
            if self._next >= len(batches):
                raise StopIteration
            self._next += 1
            return batches[self._next - 1]

    return Batches()


def _no_metric(mx):
    """A metric that computes nothing: fit's required metric, costing no time."""

    class NoMetric(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__("none")

        def update(self, labels, preds):
            pass

    return NoMetric()


def serve(make_runner, version):
    """The speed protocol: print ``ready``; each ``run`` line runs one epoch, ``quit`` ends.

    ``make_runner()`` builds the model (binding every bucket is part of the
    first, untimed, epoch). Each run prints ``{"seconds": s, "loss": l}``.
    """
    run = make_runner()
    loss = run()  # warm-up: binds the buckets
    print(json.dumps({"ready": True, "version": version, "loss": loss}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start = time.perf_counter()
        loss = run()
        seconds = time.perf_counter() - start
        print(json.dumps({"seconds": seconds, "loss": loss}), flush=True)


def rss_kib():
    """This process's resident memory now (KiB), from /proc."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def measure_memory(make_runner, epochs=2):
    """Build, train ``epochs`` epochs, print JSON: RSS before building and the peak (KiB).

    ``make_runner()()`` must accept ``with_loss=False`` (no read-back of the output).
    """
    baseline = rss_kib()
    run = make_runner()
    for _ in range(epochs):
        run(with_loss=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"baseline_kib": baseline, "peak_kib": peak}), flush=True)
