"""Benchmark: rebind's Module against a hand-written NumPy loop and MXNet 1.9.1's Module.

Measures, on seeded synthetic data (``_common.make_dataset``) and the same
starting parameters for every implementation:

- ``Module.fit`` throughput (samples/s per epoch, after one warm-up epoch) of the
  MLP 784-512-512-10 (batch 128) and LeNet (batch 64): SGD with momentum 0.9,
  ``eval_metric='acc'``, the default kvstore 'local', no progress output;
- the peak resident set (``ru_maxrss``) of a process that imports the library,
  builds the data and trains one model (each run is its own process);
- for the MLP, ``Module.predict`` throughput at batch 1024 and the latency of
  ``forward(DataBatch, is_train=False)`` + ``get_outputs()[0]`` at batch 1
  (waited for with ``wait_to_read()``, as MXNet computes asynchronously), next
  to the same forward written by hand in NumPy (the floor: its weights stream
  from memory on every call).

Every measurement runs in a fresh worker process (``_rebind_module.py``,
``_numpy_module.py``, ``_mxnet_module.py``), the implementations in alternating
rounds; the figures are medians with their p25-p75 spread. A fit ratio (to
MXNet, to the NumPy loop) is the median over rounds of that round's ratio
(every implementation runs back to back within a round, so a slow drift of a
shared machine cancels out of the pairs). It prints a table and the issue's targets, met or
not.

    python benchmarks/module.py [--models mlp lenet] [--quick] [--no-mxnet]

Environment:
    REBIND_BENCH_THREADS   threads for OpenMP/MKL/OpenBLAS (default: the CPUs usable)
    REBIND_MXNET_PYTHON    interpreter with mxnet==1.9.1 (default: ../mxenv/bin/python
                           beside the repository); skipped with a message when missing
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _common  # noqa: E402

THREADS = _common.configure_threads()

# model -> (samples, timed epochs, rounds); --quick: half the samples, one round
FIT_SCHEDULE = {"mlp": (4096, 5, 5), "mlp_small": (4000, 5, 5), "lenet": (1024, 3, 3)}
PREDICT_SAMPLES, PREDICT_REPEATS, LATENCY_CALLS, INFERENCE_ROUNDS = 8192, 8, 3000, 2
WORKERS = {"numpy": "_numpy_module.py", "rebind": "_rebind_module.py", "mxnet": "_mxnet_module.py"}
LABELS = {"numpy": "NumPy loop", "rebind": "rebind Module", "mxnet": "MXNet Module"}
TARGETS = {"mlp": 1.8, "mlp_small": 2.0, "lenet": 1.4}  # fit throughput, times MXNet's
NUMPY_TARGET = 0.95  # the MLPs' fit throughput, times the hand-written NumPy loop's
PREDICT_TARGET, LATENCY_TARGET_US, MEMORY_TARGET = 1.1, 100.0, 0.6
ACC_TOLERANCE, NORM_TOLERANCE = 0.02, 1e-3  # float32 in other orders, over a few epochs


def run_worker(impl, python, jobs):
    """Run one worker process; (results, None) or (None, reason)."""
    env = dict(os.environ, REBIND_PROGRESS="0")
    try:
        done = subprocess.run(
            [str(python), str(HERE / WORKERS[impl]), *jobs],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{WORKERS[impl]} failed: {exc}"
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        return None, f"{WORKERS[impl]} exited {done.returncode}: {' | '.join(tail)}"
    return json.loads(done.stdout.strip().splitlines()[-1]), None


def interpreters(no_mxnet):
    """impl -> interpreter, and messages for those skipped."""
    found = {"numpy": sys.executable, "rebind": sys.executable}
    if no_mxnet:
        return found, ["MXNet: skipped (--no-mxnet)"]
    python, reason = _common.find_interpreter(
        "REBIND_MXNET_PYTHON", HERE.parent.parent / "mxenv" / "bin" / "python"
    )
    if python is None:
        return found, [f"MXNet: skipped ({reason})"]
    found["mxnet"] = python
    return found, []


def measure_fit(pythons, model, samples, epochs, rounds, skipped):
    """impl -> {'rates', 'rss', 'import_rss', 'acc', 'norm', 'version'} over the rounds."""
    spec = f"fit:{model}:{samples}:{epochs}"
    results = {}
    for _ in range(rounds):
        for impl, python in pythons.items():
            if impl in skipped:
                continue
            out, reason = run_worker(impl, python, [spec])
            if out is None:
                skipped[impl] = reason
                continue
            job = out["jobs"][spec]
            entry = results.setdefault(
                impl, {"rates": [], "round_rates": [], "rss": [], "import_rss": []}
            )
            entry["rates"] += job["samples_per_s"]
            entry["round_rates"].append(_common.median(job["samples_per_s"]))
            entry["rss"].append(out["peak_rss_kib"] / 1024)
            entry["import_rss"].append(out["rss_after_import_kib"] / 1024)
            entry.update(acc=job["last_epoch_acc"], norm=job["param_norm"], version=out["version"])
    return results


def measure_inference(pythons, rounds, skipped):
    """impl -> {'rates', 'micros', 'checksum', 'version'} for rebind and MXNet."""
    jobs = [f"predict:{PREDICT_SAMPLES}:{PREDICT_REPEATS}", f"latency:{LATENCY_CALLS}"]
    results = {}
    for _ in range(rounds):
        for impl in ("numpy", "rebind", "mxnet"):
            if impl not in pythons or impl in skipped:
                continue
            # the NumPy worker times the hand-written batch-1 forward only
            out, reason = run_worker(impl, pythons[impl], jobs[1:] if impl == "numpy" else jobs)
            if out is None:
                skipped[impl] = reason
                continue
            entry = results.setdefault(impl, {"rates": [], "micros": []})
            entry["micros"] += out["jobs"][jobs[1]]["microseconds"]
            entry["version"] = out["version"]
            if impl != "numpy":
                entry["rates"] += out["jobs"][jobs[0]]["samples_per_s"]
                entry["checksum"] = out["jobs"][jobs[0]]["checksum"]
    return results


# -- report --------------------------------------------------------------------------------


def _spread(values):
    return _common.percentile(values, 0.25), _common.percentile(values, 0.75)


def _ratio(value, reference):
    return f"{value / reference:5.2f}x" if reference else "     -"


def paired_ratio(entry, reference):
    """The median over rounds of ``entry``'s median rate over ``reference``'s, same round."""
    pairs = zip(entry["round_rates"], reference["round_rates"], strict=False)
    return _common.median([rate / other for rate, other in pairs])


def print_fit(model, results):
    """The fit table; impl -> (median samples/s, median peak MiB, paired ratios to MXNet, NumPy).

    A paired ratio is the median over rounds of that round's ratio: each round
    runs the implementations back to back, so a slow phase of the shared host
    hits both sides of a ratio alike.
    """
    numpy_norm = results.get("numpy", {}).get("norm")
    mx_entry = results.get("mxnet")
    mx_rss = _common.median(mx_entry["rss"]) if mx_entry else None
    print(
        f"{'model':<9} {'implementation':<14} {'samples/s':>9} {'p25-p75':^15} {'/MXNet':>6}  "
        f"{'peak MiB':>8} {'/MXNet':>6} {'import':>6}  {'last acc':>8} {'norm diff':>9}"
    )
    summary = {}
    for impl, entry in results.items():
        rate, rss = _common.median(entry["rates"]), _common.median(entry["rss"])
        low, high = _spread(entry["rates"])
        norm_diff = abs(entry["norm"] - numpy_norm) / numpy_norm if numpy_norm else 0.0
        paired = paired_ratio(entry, mx_entry) if mx_entry else None
        print(
            f"{model:<9} {LABELS[impl]:<14} {rate:9.0f} {low:7.0f}-{high:<7.0f} "
            f"{_ratio(paired, 1.0) if paired else '     -':>6}  {rss:8.1f} "
            f"{_ratio(rss, mx_rss):>6} "
            f"{_common.median(entry['import_rss']):6.1f}  {entry['acc']:8.4f} {norm_diff:9.1e}"
        )
        to_numpy = paired_ratio(entry, results["numpy"]) if "numpy" in results else None
        summary[impl] = (rate, rss, paired, to_numpy)
    return summary


def check_fit(model, results):
    """Messages for implementations whose training visibly differs from the NumPy loop's."""
    reference = results.get("numpy")
    problems = []
    for impl, entry in results.items():
        if reference is None or impl == "numpy":
            continue
        acc_diff = abs(entry["acc"] - reference["acc"])
        norm_diff = abs(entry["norm"] - reference["norm"]) / reference["norm"]
        if acc_diff > ACC_TOLERANCE or norm_diff > NORM_TOLERANCE:
            problems.append(
                f"{model}: {LABELS[impl]} trains differently from the NumPy loop (accuracy "
                f"{entry['acc']:.4f} vs {reference['acc']:.4f}, parameter norm off by "
                f"{norm_diff:.1e})"
            )
    return problems


def print_inference(results):
    """The MLP inference table; returns impl -> (median samples/s, median microseconds)."""
    summary = {
        impl: (
            _common.median(entry["rates"]) if entry["rates"] else None,
            _common.median(entry["micros"]),
        )
        for impl, entry in results.items()
    }
    reference = summary.get("mxnet")
    print(f"{'measure':<32} {'implementation':<14} {'median':>9} {'p25-p75':^17} {'/MXNet':>6}")
    for index, (what, key) in enumerate(
        (("predict, batch 1024, samples/s", "rates"), ("forward, batch 1, microseconds", "micros"))
    ):
        for impl, entry in results.items():
            if not entry[key]:
                continue
            low, high = _spread(entry[key])
            value = summary[impl][index]
            ratio = _ratio(value, reference[index]) if reference else "     -"
            print(f"{what:<32} {LABELS[impl]:<14} {value:9.1f} {low:8.1f}-{high:<8.1f} {ratio:>6}")
    return summary


def _verdict(ok):
    return "met" if ok else "NOT met"


def print_targets(fit, inference):
    """The issue's targets, each with its figure and met / NOT met."""
    print("\ntargets:")
    for model, factor in TARGETS.items():
        rows = fit.get(model, {})
        if "rebind" in rows and "mxnet" in rows:
            ratio = rows["rebind"][2]
            print(
                f"  {model} Module.fit >= {factor:.1f}x MXNet's throughput: {ratio:.2f}x "
                f"(median of per-round ratios; medians {rows['rebind'][0]:.0f} vs "
                f"{rows['mxnet'][0]:.0f} samples/s): {_verdict(ratio >= factor)}"
            )
    for model in _common.MLP_HIDDEN:
        rows = fit.get(model, {})
        if "rebind" in rows and "numpy" in rows:
            ratio = rows["rebind"][3]
            print(
                f"  {model} Module.fit >= {NUMPY_TARGET:.2f}x the NumPy loop's throughput: "
                f"{ratio:.2f}x (median of per-round ratios; medians {rows['rebind'][0]:.0f} vs "
                f"{rows['numpy'][0]:.0f} samples/s): {_verdict(ratio >= NUMPY_TARGET)}"
            )
    if "rebind" in inference and "mxnet" in inference:
        ratio = inference["rebind"][0] / inference["mxnet"][0]
        print(
            f"  predict at batch 1024 >= {PREDICT_TARGET:.1f}x MXNet's: {ratio:.2f}x "
            f"({inference['rebind'][0]:.0f} vs {inference['mxnet'][0]:.0f} samples/s): "
            f"{_verdict(ratio >= PREDICT_TARGET)}"
        )
    if "rebind" in inference:
        micros = inference["rebind"][1]
        other = "".join(
            f", {LABELS[impl]} {inference[impl][1]:.0f} us"
            for impl in ("numpy", "mxnet")
            if impl in inference
        )
        print(
            f"  batch-1 forward latency < {LATENCY_TARGET_US:.0f} us: {micros:.1f} us{other}: "
            f"{_verdict(micros < LATENCY_TARGET_US)}"
        )
    for model, rows in fit.items():
        if "rebind" in rows and "mxnet" in rows:
            ratio = rows["rebind"][1] / rows["mxnet"][1]
            print(
                f"  {model} peak memory <= {MEMORY_TARGET:.1f}x MXNet's: {ratio:.2f}x "
                f"({rows['rebind'][1]:.0f} vs {rows['mxnet'][1]:.0f} MiB): "
                f"{_verdict(ratio <= MEMORY_TARGET)}"
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        nargs="+",
        choices=sorted(_common.MODELS),
        default=["mlp", "mlp_small", "lenet"],
    )
    parser.add_argument("--quick", action="store_true", help="half the data, one round")
    parser.add_argument("--no-mxnet", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(
        f"threads: {', '.join(f'{v}={os.environ[v]}' for v in _common.THREAD_VARIABLES)}; "
        f"{os.cpu_count()} CPUs; Python {platform.python_version()}"
    )
    _common.print_load("before")
    pythons, messages = interpreters(args.no_mxnet)
    for message in messages:
        print(message)
    skipped = {}
    fit, problems = {}, []
    for model in args.models:
        samples, epochs, rounds = FIT_SCHEDULE[model]
        if args.quick:
            samples, rounds = samples // 2, 1
        results = measure_fit(pythons, model, samples, epochs, rounds, skipped)
        print(
            f"\n{model}: {_common.DESCRIPTIONS[model]}; Module.fit, {samples} samples, "
            f"{epochs} timed epochs after 1 warm-up, {rounds} round(s); peak RSS = ru_maxrss "
            f"of the worker process (import = after the imports)"
        )
        fit[model] = print_fit(model, results)
        problems += check_fit(model, results)
    inference = {}
    if "mlp" in args.models:
        rounds = 1 if args.quick else INFERENCE_ROUNDS
        results = measure_inference(pythons, rounds, skipped)
        print(
            f"\nMLP inference, bound with for_training=False; predict over {PREDICT_SAMPLES} "
            f"samples x {PREDICT_REPEATS} x {rounds} round(s), {LATENCY_CALLS} x {rounds} "
            "forward calls at batch 1"
        )
        inference = print_inference(results)
        checksums = {impl: e["checksum"] for impl, e in results.items() if "checksum" in e}
        if len(checksums) == 2 and abs(checksums["rebind"] - checksums["mxnet"]) > 1e-3 * max(
            1.0, abs(checksums["mxnet"])
        ):
            problems.append(f"MLP predict: rebind and MXNet disagree ({checksums})")
    for impl, reason in skipped.items():
        print(f"{LABELS[impl]}: skipped ({reason})")
    print_targets(fit, inference)
    return _common.finish(started, problems)


if __name__ == "__main__":
    sys.exit(main())
