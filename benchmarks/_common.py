"""Shared pieces of the benchmarks: threads, models, inputs, timing, machine load.

This module is imported by the benchmark itself and by the worker scripts that
run under other interpreters (MXNet 1.9.1 needs Python 3.8), so it must stay
Python 3.8 compatible and depend on NumPy only (imported lazily, after the
thread variables are set).
"""

import importlib.util
import os
import sys
import time

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# The benchmarked models: name -> (batch, data shape without batch)
MODELS = {
    "mlp": (128, (784,)),
    "mlp_small": (100, (784,)),
    "lenet": (64, (1, 28, 28)),
}
# the MLPs' two hidden layers
MLP_HIDDEN = {"mlp": (512, 512), "mlp_small": (128, 64)}
DESCRIPTIONS = {
    "mlp": "MLP 784-512-512-10 relu, batch 128",
    "mlp_small": "MLP 784-128-64-10 relu, batch 100",
    "lenet": "LeNet conv5x5x20-tanh-pool-conv5x5x50-tanh-pool-fc500-tanh-fc10, batch 64",
}
SEED = 20240601
LABEL_NOISE = 0.2


def configure_threads(threads=None):
    """Set every BLAS/OpenMP thread variable to one value (before NumPy is imported).

    ``threads`` defaults to ``REBIND_BENCH_THREADS``, else the CPUs this process may use.
    Returns the number used.
    """
    if threads is None:
        threads = os.environ.get("REBIND_BENCH_THREADS")
    if threads is None:
        threads = (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        )
    threads = int(threads)
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    os.environ["REBIND_BENCH_THREADS"] = str(threads)
    return threads


# -- models (the same code builds them for rebind and for MXNet) -------------------------


def build_symbol(mx, model):
    """The symbol of ``model`` (an MLP or "lenet") with the ``mx.sym`` API of ``mx``."""
    sym = mx.sym
    data, label = sym.Variable("data"), sym.Variable("softmax_label")
    if model in MLP_HIDDEN:
        first, second = MLP_HIDDEN[model]
        net = sym.FullyConnected(data, num_hidden=first, name="fc1")
        net = sym.Activation(net, act_type="relu", name="relu1")
        net = sym.FullyConnected(net, num_hidden=second, name="fc2")
        net = sym.Activation(net, act_type="relu", name="relu2")
        net = sym.FullyConnected(net, num_hidden=10, name="fc3")
    elif model == "lenet":
        net = sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
        net = sym.Activation(net, act_type="tanh", name="tanh1")
        net = sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
        net = sym.Convolution(net, kernel=(5, 5), num_filter=50, name="conv2")
        net = sym.Activation(net, act_type="tanh", name="tanh2")
        net = sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
        net = sym.Flatten(net, name="flatten")
        net = sym.FullyConnected(net, num_hidden=500, name="fc1")
        net = sym.Activation(net, act_type="tanh", name="tanh3")
        net = sym.FullyConnected(net, num_hidden=10, name="fc2")
    else:
        raise ValueError(f"unknown model {model!r}")
    return sym.SoftmaxOutput(net, label, name="softmax")


def param_shapes(model):
    """Parameter name -> shape, in the order MXNet lists the arguments."""
    if model in MLP_HIDDEN:
        first, second = MLP_HIDDEN[model]
        return {
            "fc1_weight": (first, 784),
            "fc1_bias": (first,),
            "fc2_weight": (second, first),
            "fc2_bias": (second,),
            "fc3_weight": (10, second),
            "fc3_bias": (10,),
        }
    return {
        "conv1_weight": (20, 1, 5, 5),
        "conv1_bias": (20,),
        "conv2_weight": (50, 20, 5, 5),
        "conv2_bias": (50,),
        "fc1_weight": (500, 800),
        "fc1_bias": (500,),
        "fc2_weight": (10, 500),
        "fc2_bias": (10,),
    }


def make_arrays(model, seed=SEED):
    """Deterministic float32 inputs: data, softmax_label and every parameter (by name).

    ``default_rng`` streams are the same in every NumPy version, so the MXNet
    and PyTorch workers see exactly these values.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    batch, shape = MODELS[model]
    arrays = {"data": rng.standard_normal((batch,) + shape).astype(np.float32)}
    for name, pshape in param_shapes(model).items():
        if name.endswith("_bias"):
            values = 0.1 * rng.standard_normal(pshape)
        else:
            fan_in = int(np.prod(pshape[1:]))
            values = rng.standard_normal(pshape) * np.sqrt(1.0 / fan_in)
        arrays[name] = values.astype(np.float32)
    arrays["softmax_label"] = rng.integers(0, 10, batch).astype(np.float32)
    return arrays


def make_dataset(model, samples, seed=SEED):
    """A learnable synthetic data set: ``(data, labels)`` as float32 NumPy arrays.

    Each example is its class's fixed random pattern plus standard normal noise,
    and ``LABEL_NOISE`` of the labels are replaced by random classes, so the
    training accuracy rises epoch by epoch but stays below 1, and two
    implementations of the same training loop can be compared by it.
    """
    import numpy as np

    rng = np.random.default_rng(seed + 1)
    shape = MODELS[model][1]
    patterns = 0.5 * rng.standard_normal((10,) + shape)
    labels = rng.integers(0, 10, samples)
    data = (rng.standard_normal((samples,) + shape) + patterns[labels]).astype(np.float32)
    noisy = rng.random(samples) < LABEL_NOISE
    labels[noisy] = rng.integers(0, 10, int(noisy.sum()))
    return data, labels.astype(np.float32)


def grad_request(model):
    """Parameters get gradients; data and label do not (as Module binds for training)."""
    request = {name: "write" for name in param_shapes(model)}
    request["data"] = request["softmax_label"] = "null"
    return request


def fingerprint(prob, label, grads):
    """Numbers two implementations of the same step must agree on (as plain floats)."""
    import numpy as np

    prob = np.asarray(prob, dtype=np.float64)
    picked = prob[np.arange(prob.shape[0]), np.asarray(label).astype(np.int64)]
    result = {"loss": float(-np.mean(np.log(np.maximum(picked, 1e-30))))}
    for name in sorted(grads):
        result[name] = float(np.sqrt(np.sum(np.asarray(grads[name], dtype=np.float64) ** 2)))
    return result


# -- timing ------------------------------------------------------------------------------


def time_steps(step, steps, warmup=0):
    """Wall times (seconds, ``time.perf_counter``) of ``steps`` calls of ``step()``."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def time_interleaved(steps_by_name, rounds, steps, warmup):
    """Times of several step functions, run in alternating rounds (fair against drift).

    Returns name -> list of ``rounds * steps`` step times.
    """
    times = {name: [] for name in steps_by_name}
    for step in steps_by_name.values():
        time_steps(step, 0, warmup)
    for _ in range(rounds):
        for name, step in steps_by_name.items():
            times[name].extend(time_steps(step, steps))
    return times


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return 0.5 * (ordered[middle - 1] + ordered[middle])


def percentile(values, fraction):
    """The ``fraction`` (0..1) quantile of ``values``, linearly interpolated."""
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def finish(started, problems):
    """The end of a benchmark run: load average, time taken, errors; the exit status."""
    print_load("after")
    print(f"took {time.perf_counter() - started:.0f} s")
    for problem in problems:
        print(f"ERROR: {problem}")
    return 1 if problems else 0


def print_load(when):
    """Print the 1-minute load average: other work on the machine spoils the times."""
    if not hasattr(os, "getloadavg"):
        return
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    warning = (
        ""
        if load < cpus
        else ": the machine looks busy, the times may be unreliable (see the p25-p75 spread)"
    )
    print(f"load average {when}: {load:.2f} on {cpus} CPUs{warning}")


def find_interpreter(variable, default, module=None):
    """The Python to run a worker with: ``(path, None)`` or ``(None, why not)``.

    ``variable`` (an environment variable) wins; else this interpreter when it
    can import ``module``; else ``default`` (a path) when it exists.
    """
    configured = os.environ.get(variable)
    if configured:
        if os.path.exists(configured):
            return configured, None
        return None, f"{variable}={configured} not found"
    if module is not None and importlib.util.find_spec(module) is not None:
        return sys.executable, None
    if os.path.exists(str(default)):
        return str(default), None
    return None, f"no interpreter: set {variable} (looked for {default})"


def peak_rss_kib():
    """This process's peak resident set in KiB: VmHWM where /proc has it, else ru_maxrss.

    ``ru_maxrss`` survives ``exec``: a worker started by a large benchmark
    process reports at least that process's size; VmHWM belongs to the
    program the worker runs.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
