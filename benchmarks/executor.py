"""Benchmark: rebind's executor against hand-written NumPy, MXNet 1.9.1 and PyTorch.

Times one training step (forward(is_train=True) + backward()) of two models,
an MLP 784-512-512-10 at batch 128 and a LeNet-style CNN at batch 64, and
prints the median step time of each implementation and its ratio to the
hand-written NumPy step (``benchmarks/_numpy_reference.py``), which computes
exactly the same thing; the first step's output and gradients are compared
first, so the times are of the same computation.

    python benchmarks/executor.py [--models mlp lenet] [--quick] [--no-mxnet] [--no-torch]

Environment:
    REBIND_BENCH_THREADS   threads for OpenMP/MKL/OpenBLAS/torch (default: the CPUs usable)
    REBIND_MXNET_PYTHON    interpreter with mxnet==1.9.1 (default: ../mxenv/bin/python
                           beside the repository); skipped with a message when missing
    REBIND_TORCH_PYTHON    interpreter with torch (default: this one if it has torch, else
                           ../torchenv/bin/python beside the repository)
"""

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import _common  # noqa: E402

THREADS = _common.configure_threads()  # before NumPy (and its BLAS) is loaded

import _numpy_reference  # noqa: E402
import numpy as np  # noqa: E402

import rebind as mx  # noqa: E402

# name -> (rounds, steps per round, warm-up steps); --quick takes a quarter of the rounds.
# Short alternating rounds: on a shared machine, load comes and goes in bursts.
SCHEDULE = {"mlp": (40, 10, 50), "lenet": (25, 2, 3)}
MLP_TARGET = 1.10
TOLERANCE = 1e-4  # relative, float32 with a different summation order
# other libraries (MXNet's MKL-DNN, PyTorch's oneDNN) sum in other orders, and some of the
# sums cancel (bias gradients)
OTHER_TOLERANCE = 1e-3


# -- rebind --------------------------------------------------------------------------------


def rebind_step(model, arrays):
    """A step function running rebind's executor, and the executor."""
    batch, shape = _common.MODELS[model]
    symbol = _common.build_symbol(mx, model)
    exe = symbol.simple_bind(
        mx.cpu(), grad_req=_common.grad_request(model), data=(batch, *shape), softmax_label=(batch,)
    )
    for name, value in arrays.items():
        exe.arg_dict[name][:] = value

    def step():
        exe.forward(is_train=True)
        exe.backward()

    return step, exe


def compare_first_step(model, arrays, exe):
    """Max differences between rebind's first step and the NumPy one; (ok, message)."""
    prob, grads = _numpy_reference.STEPS[model](arrays)
    out_diff = float(np.max(np.abs(exe.outputs[0].asnumpy() - prob)))
    worst, worst_name = 0.0, None
    for name, expected in grads.items():
        got = exe.grad_dict[name].asnumpy()
        if got.shape != expected.shape:
            return False, f"gradient {name}: shape {got.shape}, NumPy has {expected.shape}"
        rel = float(np.max(np.abs(got - expected)) / max(np.max(np.abs(expected)), 1e-30))
        if rel > worst:
            worst, worst_name = rel, name
    ok = out_diff <= TOLERANCE and worst <= TOLERANCE
    where = f" ({worst_name})" if worst_name else ""
    return ok, (
        f"output max|diff| {out_diff:.1e}, gradients max relative diff {worst:.1e}"
        f"{where}, loss {_loss(prob, arrays):.6f}"
    )


def _loss(prob, arrays):
    return _common.fingerprint(prob, arrays["softmax_label"], {})["loss"]


def compare_fingerprint(model, arrays, check):
    """Worst relative difference of a worker's loss and gradient norms from NumPy's."""
    prob, grads = _numpy_reference.STEPS[model](arrays)
    expected = _common.fingerprint(prob, arrays["softmax_label"], grads)
    return max(abs(check[k] - v) / max(abs(v), 1e-30) for k, v in expected.items())


# -- other frameworks, in their own interpreters -------------------------------------------


def run_worker(script, python, schedule, models):
    """Run a worker script; (results by model, None) or (None, reason)."""
    specs = []
    for model in models:
        rounds, steps, warmup = schedule[model]
        specs.append(f"{model}:{rounds * steps}:{warmup}")
    try:
        done = subprocess.run(
            [str(python), str(HERE / script), *specs],
            capture_output=True,
            text=True,
            timeout=600,
            env=os.environ.copy(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{script} failed: {exc}"
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        return None, f"{script} exited {done.returncode}: {' | '.join(tail)}"
    return json.loads(done.stdout), None


# -- report --------------------------------------------------------------------------------


def _blas():
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas.get('version', '')}".strip()
    except Exception:  # old NumPy: no dict form
        return "unknown BLAS"


def _row(model, label, times, numpy_median, note=""):
    med = _common.median(times) * 1e3
    q = np.percentile(np.asarray(times) * 1e3, [25, 75])
    ratio = f"{med / numpy_median:6.2f}x" if numpy_median else "     -"
    print(
        f"{model:<6} {label:<30} {med:9.2f} {q[0]:7.2f}-{q[1]:<7.2f} {min(times) * 1e3:7.2f} "
        f"{ratio}  {note}"
    )
    return med


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", nargs="+", choices=sorted(_common.MODELS), default=["mlp", "lenet"]
    )
    parser.add_argument("--quick", action="store_true", help="a quarter of the steps")
    parser.add_argument("--no-mxnet", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    schedule = {m: (max(r // 4, 2) if args.quick else r, s, w) for m, (r, s, w) in SCHEDULE.items()}

    print(
        f"threads: {', '.join(f'{v}={os.environ[v]}' for v in _common.THREAD_VARIABLES)}"
        f" (torch.set_num_threads({THREADS})); {os.cpu_count()} CPUs"
    )
    print(f"Python {platform.python_version()}, NumPy {np.__version__} ({_blas()})")
    _common.print_load("before")

    workers = {}
    for name, script, variable, env_default, module, skip in (
        ("MXNet", "_mxnet_executor.py", "REBIND_MXNET_PYTHON", "mxenv", None, args.no_mxnet),
        ("PyTorch", "_torch_step.py", "REBIND_TORCH_PYTHON", "torchenv", "torch", args.no_torch),
    ):
        if skip:
            print(f"{name}: skipped (--no-{name.lower()})")
            continue
        python, reason = _common.find_interpreter(
            variable, REPO.parent / env_default / "bin" / "python", module
        )
        results = None
        if python is not None:
            results, reason = run_worker(script, python, schedule, args.models)
        if results is None:
            print(f"{name}: skipped ({reason})")
        else:
            workers[name] = results

    failures = []
    summary = {}
    for model in args.models:
        rounds, steps, warmup = schedule[model]
        arrays = _common.make_arrays(model)
        print(
            f"\n{model}: {_common.DESCRIPTIONS[model]}; median of {rounds * steps} steps "
            f"after {warmup} warm-up (forward(is_train=True) + backward())"
        )
        impls = {"numpy": lambda a=arrays, m=model: _numpy_reference.STEPS[m](a)}
        try:
            impls["rebind"], exe = rebind_step(model, arrays)
            exe.forward(is_train=True)
            exe.backward()
        except Exception as exc:  # e.g. an operator not written yet
            print(f"  rebind: cannot run this model ({type(exc).__name__}: {exc})")
            impls.pop("rebind", None)
        else:
            ok, message = compare_first_step(model, arrays, exe)
            print(f"  check rebind vs NumPy, first step: {message}: {'OK' if ok else 'MISMATCH'}")
            if not ok:
                failures.append(f"{model}: rebind differs from NumPy")
        for name, results in workers.items():
            rel = compare_fingerprint(model, arrays, results[model]["check"])
            verdict = "OK" if rel <= OTHER_TOLERANCE else "MISMATCH"
            print(
                f"  check {name} vs NumPy, first step (loss, gradient norms): max relative "
                f"diff {rel:.1e}: {verdict}"
            )
        times = _common.time_interleaved(impls, rounds, steps, warmup)

        print(
            f"{'model':<6} {'implementation':<30} {'median ms':>9} {'p25-p75 ms':^15} "
            f"{'min ms':>7} {'/ NumPy':>7}"
        )
        numpy_median = _common.median(times["numpy"]) * 1e3
        medians = {"numpy": _row(model, "NumPy, hand-written", times["numpy"], numpy_median)}
        if "rebind" in times:
            medians["rebind"] = _row(model, "rebind executor", times["rebind"], numpy_median)
        for name, results in workers.items():
            result = results[model]
            medians[name] = _row(
                model, result["version"], result["times"], numpy_median, "(separate process)"
            )
        summary[model] = medians

    if "mlp" in summary and "rebind" in summary["mlp"]:
        ratio = summary["mlp"]["rebind"] / summary["mlp"]["numpy"]
        verdict = "met" if ratio <= MLP_TARGET else "NOT met"
        print(
            f"\ntarget: rebind / NumPy <= {MLP_TARGET:.2f}x on the MLP step: "
            f"{ratio:.2f}x, {verdict}"
        )
    for failure in failures:
        print(f"ERROR: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
