"""Worker of ``benchmarks/bucketing.py``: one implementation of the LSTM LM in its own process.

    python _bucketing_worker.py IMPL serve INPUTS          (speed protocol, see _bucketing_runs)
    python _bucketing_worker.py IMPL memory INPUTS WHICH   (peak RSS; WHICH: all | largest)

IMPL is ``rebind``, ``mxnet`` (run with the MXNet 1.9.1 interpreter), ``torch``
or ``numpy``. INPUTS is the .npz of parameters and batches the benchmark wrote.
Python 3.8 compatible.
"""

import sys

import _common

THREADS = _common.configure_threads()  # before NumPy (and its BLAS) is loaded

import _bucketing_runs  # noqa: E402
import _lstm_lm as lm  # noqa: E402


def module_runner(mx, params, batches):
    def make():
        return _bucketing_runs.BucketingTrainer(mx, params, batches).epoch

    return make


def step_runner(model_class, params, batches, prob=None):
    def make():
        model = model_class(params)

        def epoch(with_loss=True):
            out = None
            for _, data, label in batches:
                out = model.step(data, label)
            if not with_loss:
                return None
            probs = prob(model, out) if prob else out
            return lm.cross_entropy(probs, batches[-1][2])

        return epoch

    return make


def runner(impl, params, batches):
    """(make_runner, version) for ``impl``."""
    import numpy as np

    if impl in ("rebind", "mxnet"):
        # fit's notices (already bound, epoch lines) are not the benchmark's output
        import logging
        import os
        import warnings

        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        os.environ["REBIND_PROGRESS"] = "0"
        if impl == "rebind":
            import rebind as mx
        else:
            import mxnet as mx
        name = "rebind" if impl == "rebind" else "MXNet " + mx.__version__
        return module_runner(mx, params, batches), name
    if impl == "torch":
        import _torch_lstm
        import torch

        torch.set_num_threads(THREADS)
        return (
            step_runner(_torch_lstm.TorchLSTM, params, batches, lambda m, out: m.prob(out)),
            "PyTorch " + torch.__version__,
        )
    import _numpy_lstm

    return step_runner(_numpy_lstm.NumpyLSTM, params, batches), "NumPy " + np.__version__


def main(argv):
    impl, mode, inputs = argv[:3]
    params, batches = lm.load_inputs(inputs)
    if mode == "memory":
        if argv[3] == "largest":
            batches = lm.largest_only(batches)
        make, _ = runner(impl, params, batches)
        _bucketing_runs.measure_memory(make)
    else:
        make, version = runner(impl, params, batches)
        _bucketing_runs.serve(make, version)


if __name__ == "__main__":
    main(sys.argv[1:])
