"""Worker of ``benchmarks/cnn.py``: one contender running one model-zoo network in its process.

    python _cnn_worker.py SPEC_JSON

SPEC_JSON (one argument) holds ``contender`` (rebind, rebind-numpy, mxnet, ort,
torch), ``model``, ``mode`` (infer or train), ``batch``, ``side`` (the image
side), ``prefix`` (the checkpoint: PREFIX-symbol.json and PREFIX-0000.params),
``onnx`` (the ONNX file, for ort), ``weights`` (an .npz of the parameters, for
torch) and ``output`` (where the warm-up's output is saved, .npy).

The protocol (one JSON line per answer on stdout): after loading and the
warm-up (two steps at batch 1, else one) it prints ``{"ready": ...}``; each
``run SECONDS`` line runs steps until SECONDS have passed (at least one) and
prints the images done, the wall seconds, the CPU seconds of the whole process
(``getrusage``: every thread) and the peak RSS so far (``_common.peak_rss_kib``);
``quit`` (or the end of stdin) ends it.

The thread settings are left as the user has them (no thread variables are
set here): each library runs with its own defaults. Python 3.8 compatible.
"""

import json
import resource
import sys
import time

import _common
import numpy as np

# the first step pays one-off costs (sessions, primitives, optimizer states); at batch 1 a
# second one is cheap insurance
WARMUP_STEPS = {1: 2}
LEARNING_RATE = 0.001  # small: the random-weight networks stay finite over many steps
MOMENTUM = 0.9
LABEL_SEED = 20261130


def images(spec):
    """The seeded input batch every contender sees (uniform in [-1, 1])."""
    rng = np.random.RandomState(LABEL_SEED)
    shape = (spec["batch"], 3, spec["side"], spec["side"])
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def labels(spec):
    """Seeded class labels (of 1000) for the training step."""
    rng = np.random.RandomState(LABEL_SEED + 1)
    return rng.randint(0, 1000, spec["batch"]).astype(np.float32)


# -- rebind and MXNet: the same user code, ``mx`` is whichever library runs -----------------


def module_step(mx, spec):
    """(step, describe) for a Module loaded from the checkpoint; step returns the output."""
    symbol, arg_params, aux_params = mx.model.load_checkpoint(spec["prefix"], 0)
    shape = (spec["batch"], 3, spec["side"], spec["side"])
    data = mx.nd.array(images(spec))
    if spec["mode"] == "infer":
        module = mx.mod.Module(symbol, data_names=["data"], label_names=None, context=mx.cpu())
        module.bind(data_shapes=[("data", shape)], for_training=False)
        module.set_params(arg_params, aux_params)
        batch = mx.io.DataBatch([data])

        def step():
            module.forward(batch, is_train=False)
            return module.get_outputs()[0].asnumpy()

        return step, lambda: _engine(module)
    net = mx.sym.SoftmaxOutput(symbol, name="softmax")
    module = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"])
    module.bind(data_shapes=[("data", shape)], label_shapes=[("softmax_label", (spec["batch"],))])
    module.set_params(arg_params, aux_params)
    module.init_optimizer(
        optimizer="sgd", optimizer_params={"learning_rate": LEARNING_RATE, "momentum": MOMENTUM}
    )
    batch = mx.io.DataBatch([data], [mx.nd.array(labels(spec))])

    def train_step():
        module.forward_backward(batch)
        out = module.get_outputs()[0].asnumpy()
        module.update()
        mx.nd.waitall()  # MXNet runs asynchronously: the step is done when its writes are
        return out

    return train_step, lambda: ""


def _engine(module):
    """Which engine ran rebind's inference (read from its executor; '' for MXNet)."""
    group = getattr(module, "_exec_group", None)
    execs = getattr(group, "execs", None) or []
    if not execs or not hasattr(execs[0], "_engine"):
        return ""
    return "onnxruntime" if execs[0]._engine is not None else "numpy"


def library(contender):
    """(mx, version) of rebind or MXNet; the rebind contenders' engine is set by the caller."""
    import logging
    import warnings

    warnings.simplefilter("ignore")  # notices are not the benchmark's output
    logging.disable(logging.WARNING)
    if contender == "mxnet":
        import mxnet as mx

        return mx, "MXNet " + mx.__version__
    import rebind as mx

    return mx, "rebind " + mx.__version__


def ort_step(spec):
    """(step, describe) running the exported ONNX file in a default CPU session."""
    import onnxruntime as ort

    session = ort.InferenceSession(spec["onnx"], providers=["CPUExecutionProvider"])
    feeds = {session.get_inputs()[0].name: images(spec)}

    def step():
        return session.run(None, feeds)[0]

    return step, "ONNX Runtime " + ort.__version__


def build(spec):
    """(step, version, describe) for the spec's contender."""
    contender = spec["contender"]
    if contender == "ort":
        step, version = ort_step(spec)
        return step, version, lambda: ""
    if contender == "torch":
        import _cnn_torch

        step, version = _cnn_torch.make_step(spec, images(spec), labels(spec))
        return step, version, lambda: ""
    mx, version = library(contender)
    step, describe = module_step(mx, spec)
    return step, version, describe


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(spec):
    """Load, warm up, save the first output, then answer ``run`` lines (see the docstring)."""
    started = time.perf_counter()
    step, version, describe = build(spec)
    loaded = time.perf_counter()
    first = np.asarray(step(), dtype=np.float32)
    for _ in range(WARMUP_STEPS.get(spec["batch"], 1) - 1):
        step()
    np.save(spec["output"], first)
    answer(
        {
            "ready": True,
            "version": version,
            "engine": describe(),
            "load_s": loaded - started,
            "warmup_s": time.perf_counter() - loaded,
            "finite": bool(np.isfinite(first).all()),
        }
    )
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "run":
            break
        seconds = float(words[1])
        count, cpu0, wall0 = 0, cpu_seconds(), time.perf_counter()
        while True:
            step()
            count += 1
            wall = time.perf_counter() - wall0
            if wall >= seconds:
                break
        answer(
            {
                "images": count * spec["batch"],
                "seconds": wall,
                "cpu": cpu_seconds() - cpu0,
                "peak_rss_kib": _common.peak_rss_kib(),
            }
        )


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]))
