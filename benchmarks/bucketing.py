"""Benchmark: training MXNet's lstm_bucketing language model with a BucketingModule.

The word-level LSTM LM of MXNet's ``lstm_bucketing`` example (vocabulary
10 000, embedding 200, two unrolled LSTMCell layers of 200, buckets 10..60,
batch 32, SGD lr 0.01 wd 1e-5; ``_lstm_lm.py``) on synthetic sentences whose
lengths spread over the buckets (fixed seed, 2 batches per bucket an epoch,
shuffled). Measures

* tokens per second of training (forward(is_train=True), backward, update per
  batch, through the buckets in the epoch's order; ``BucketingModule.fit`` for
  rebind and MXNet, as MXNet's lstm_bucketing example trains): rebind, MXNet 1.9.1,
  PyTorch (nn.LSTM) and a hand-written NumPy LSTM (``_numpy_lstm.py``); every
  implementation runs in its own process, one epoch at a time in alternating
  rounds (fair against load that comes and goes); tokens count the padded
  positions (batch x bucket length);
* peak memory (peak RSS of a fresh process) of training two epochs over all
  buckets against training as many batches of the largest bucket alone, for
  rebind and MXNet;

and checks that every implementation computes the same thing (the last
batch's loss after the warm-up epoch and after each timed epoch agree).

    python benchmarks/bucketing.py [--rounds N] [--quick] [--no-mxnet] [--no-torch]
                                   [--no-memory]

Environment: REBIND_BENCH_THREADS, REBIND_MXNET_PYTHON, REBIND_TORCH_PYTHON as
for ``benchmarks/executor.py``; REBIND_GRAPH_OPT=0 turns rebind's graph
rewrites off (to see what they bring).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import _common  # noqa: E402

THREADS = _common.configure_threads()  # before NumPy (and its BLAS) is loaded

import _lstm_lm as lm  # noqa: E402
import numpy as np  # noqa: E402

SPEED_TARGET = 1.5  # rebind tokens/s over MXNet's
MEMORY_TARGET = 1.25  # peak RSS over all buckets / largest bucket alone
LOSS_TOLERANCE = 1e-3  # relative: float32 summation orders differ between libraries
WORKER = HERE / "_bucketing_worker.py"


def interpreters(args):
    """impl -> (python, None) or (None, reason)."""
    found = {"rebind": (Path(sys.executable), None), "numpy": (Path(sys.executable), None)}
    for impl, variable, env_dir, module, skip in (
        ("mxnet", "REBIND_MXNET_PYTHON", "mxenv", None, args.no_mxnet),
        ("torch", "REBIND_TORCH_PYTHON", "torchenv", "torch", args.no_torch),
    ):
        if skip:
            found[impl] = (None, f"skipped (--no-{impl})")
            continue
        configured = os.environ.get(variable)
        default = REPO.parent / env_dir / "bin" / "python"
        if configured:
            path = Path(configured)
            found[impl] = (path, None) if path.exists() else (None, f"{variable} not found")
        elif module is not None and _has_module(module):
            found[impl] = (Path(sys.executable), None)
        elif default.exists():
            found[impl] = (default, None)
        else:
            found[impl] = (None, f"no interpreter: set {variable} (looked for {default})")
    return found


def _has_module(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


class Worker:
    """One implementation serving epochs over a pipe (see ``_bucketing_runs.serve``)."""

    def __init__(self, impl, python, inputs):
        self.impl = impl
        self.process = subprocess.Popen(
            [str(python), str(WORKER), impl, "serve", str(inputs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(HERE),
        )
        self.ready = self._read()
        self.times, self.losses = [], []

    def _read(self):
        line = self.process.stdout.readline()
        if not line:
            tail = self.process.stderr.read().strip().splitlines()[-3:]
            raise RuntimeError(f"{self.impl} worker stopped: {' | '.join(tail)}")
        return json.loads(line)

    def run_epoch(self):
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        result = self._read()
        self.times.append(result["seconds"])
        self.losses.append(result["loss"])

    def close(self):
        try:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        except OSError:
            pass
        self.process.wait(timeout=60)


def measure_speed(found, inputs, rounds, tokens):
    """impl -> (version, tokens/s from the median epoch, warm-up loss, epoch losses)."""
    workers = {}
    for impl in ("rebind", "mxnet", "torch", "numpy"):
        python, reason = found[impl]
        if python is None:
            print(f"{impl}: {reason}")
            continue
        try:
            workers[impl] = Worker(impl, python, inputs)
        except (OSError, RuntimeError, ValueError) as exc:
            print(f"{impl}: cannot run ({exc})")
    for _ in range(rounds):
        for worker in workers.values():
            worker.run_epoch()
    results = {}
    for impl, worker in workers.items():
        worker.close()
        median = _common.median(worker.times)
        results[impl] = {
            "version": worker.ready["version"],
            "tokens_per_s": tokens / median,
            "best_tokens_per_s": tokens / min(worker.times),
            "spread": (tokens / max(worker.times), tokens / min(worker.times)),
            "warmup_loss": worker.ready["loss"],
            "losses": worker.losses,
        }
    return results


def measure_memory(found, inputs):
    """impl -> {"all": (baseline, peak), "largest": ...} in MiB, each from a fresh process."""
    results = {}
    for impl in ("rebind", "mxnet"):
        python, reason = found[impl]
        if python is None:
            continue
        results[impl] = {}
        for which in ("largest", "all"):
            done = subprocess.run(
                [str(python), str(WORKER), impl, "memory", str(inputs), which],
                capture_output=True,
                text=True,
                cwd=str(HERE),
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                print(f"{impl} memory ({which}) failed: {done.stderr.strip().splitlines()[-1:]}")
                results.pop(impl)
                break
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            results[impl][which] = (figures["baseline_kib"] / 1024, figures["peak_kib"] / 1024)
    return results


def check_losses(speed):
    """Whether every implementation's losses agree with rebind's (or NumPy's)."""
    reference = speed.get("rebind") or speed.get("numpy")
    ok = True
    for impl, result in speed.items():
        pairs = [(result["warmup_loss"], reference["warmup_loss"])]
        pairs += list(zip(result["losses"], reference["losses"], strict=False))
        worst = max(abs(a - b) / abs(b) for a, b in pairs)
        verdict = "OK" if worst <= LOSS_TOLERANCE else "MISMATCH"
        ok = ok and worst <= LOSS_TOLERANCE
        print(
            f"  check {impl:<6} loss after warm-up {result['warmup_loss']:.5f}, "
            f"max relative difference from the reference {worst:.1e}: {verdict}"
        )
    return ok


def report_speed(speed, tokens, rounds):
    print(
        f"\nspeed: {tokens} tokens an epoch (padded); tokens/s of the median and of the "
        f"best of {rounds} epochs, after a warm-up epoch that binds the buckets"
    )
    print(
        f"{'implementation':<28} {'median':>8} {'/ MXNet':>8} {'best':>8} {'/ MXNet':>8} "
        f"{'slowest':>8}"
    )
    mxnet = speed.get("mxnet")
    for impl in ("rebind", "mxnet", "torch", "numpy"):
        if impl not in speed:
            continue
        result = speed[impl]
        label = result["version"] if impl != "numpy" else "NumPy LSTM, hand-written"
        median, best = result["tokens_per_s"], result["best_tokens_per_s"]
        ratio = f"{median / mxnet['tokens_per_s']:7.2f}x" if mxnet else "       -"
        best_ratio = f"{best / mxnet['best_tokens_per_s']:7.2f}x" if mxnet else "       -"
        print(
            f"{label:<28} {median:8.0f} {ratio} {best:8.0f} {best_ratio} {result['spread'][0]:8.0f}"
        )


def report_memory(memory):
    print("\npeak memory (RSS of a fresh process; baseline: after imports and inputs)")
    print(
        f"{'implementation':<14} {'largest alone':>14} {'all buckets':>12} {'ratio':>6} "
        f"{'baseline':>9} {'ratio above baseline':>21}"
    )
    for impl, figures in memory.items():
        (base_l, peak_l), (base_a, peak_a) = figures["largest"], figures["all"]
        above = (peak_a - base_a) / (peak_l - base_l)
        print(
            f"{impl:<14} {peak_l:11.0f} MiB {peak_a:8.0f} MiB {peak_a / peak_l:5.2f}x "
            f"{base_a:5.0f} MiB {above:20.2f}x"
        )


def verdicts(speed, memory):
    lines = []
    if "rebind" in speed and "mxnet" in speed:
        for statistic, key in (("median", "tokens_per_s"), ("best", "best_tokens_per_s")):
            ratio = speed["rebind"][key] / speed["mxnet"][key]
            met = "met" if ratio >= SPEED_TARGET else "NOT met"
            lines.append(
                f"tokens/s rebind / MXNet >= {SPEED_TARGET}x ({statistic} epochs): "
                f"{ratio:.2f}x, {met}"
            )
    if "rebind" in memory:
        figures = memory["rebind"]
        ratio = figures["all"][1] / figures["largest"][1]
        met = "met" if ratio <= MEMORY_TARGET else "NOT met"
        lines.append(
            f"peak memory all buckets / largest alone <= {MEMORY_TARGET}x: {ratio:.2f}x, {met}"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed epochs per implementation")
    parser.add_argument("--quick", action="store_true", help="2 rounds, no memory runs")
    parser.add_argument("--no-mxnet", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args(argv)
    rounds = 2 if args.quick else args.rounds

    print(
        f"threads: {THREADS} (OpenMP/MKL/OpenBLAS/torch); {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()}, NumPy {np.__version__}; "
        f"REBIND_GRAPH_OPT={os.environ.get('REBIND_GRAPH_OPT', '1')}"
    )
    _common.print_load("before")
    found = interpreters(args)
    params, batches = lm.make_params(), lm.make_batches()
    tokens = lm.tokens(batches)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Path(tmp) / "inputs.npz"
        lm.save_inputs(str(inputs), params, batches)
        speed = measure_speed(found, inputs, rounds, tokens)
        memory = {} if args.quick or args.no_memory else measure_memory(found, inputs)
    _common.print_load("after")
    print("\nchecks (same inputs, same initial weights: the losses must agree)")
    ok = check_losses(speed)
    report_speed(speed, tokens, rounds)
    if memory:
        report_memory(memory)
    print()
    for line in verdicts(speed, memory):
        print("target: " + line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
