"""``benchmarks/cnn.py --fit``: training beside busy processes, rebind against MXNet 1.9.1.

Three workloads, each run by ``_cnn_fit_worker.py`` with the user's thread
settings: ``Module.fit`` of the MLP 784-512-512-10 and of LeNet
(``_module_runs.fit_job``, as ``benchmarks/module.py`` trains them; a fresh
process each round, a warm-up epoch, then timed epochs) and
``BucketingModule.fit`` of the LSTM LM of ``benchmarks/bucketing.py`` (one
process for the sitting, one epoch per round after a warm-up epoch). Contenders:
rebind on one cpu context, rebind on ``[mx.cpu(0), mx.cpu(1)]``, MXNet on one,
in rounds whose order rotates, while ``cnn.py`` keeps ``--load N`` busy
processes running.
"""

import os
import sys
import tempfile
from pathlib import Path

import _cnn_sitting as sitting
import _common

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_cnn_fit_worker.py"
CONTENDERS = {"rebind": ("rebind", 1), "rebind-2ctx": ("rebind", 2), "mxnet": ("mxnet", 1)}
LABELS = {
    "rebind": "rebind, cpu(0)",
    "rebind-2ctx": "rebind, [cpu(0), cpu(1)]",
    "mxnet": "MXNet 1.9.1, cpu(0)",
}
# workload -> (samples, timed epochs) of a Module.fit run; --quick halves the samples.
# Epochs of a quarter second were at the scheduler's mercy beside busy processes (the
# same MLP code measured 0.93-1.18x two contexts / one in four sittings of 4,096
# samples): the MLP's epochs have 8,192 samples, LeNet's 2,048 (about half a second)
SCHEDULE = {"mlp": (8192, 3), "lenet": (2048, 2), "lstm": (0, 0)}
UNITS = {"mlp": "samples/s", "lenet": "samples/s", "lstm": "tokens/s"}
TIMEOUT = 900  # one run or epoch, on a busy machine
ACC_TOLERANCE, LOSS_TOLERANCE = 0.02, 1e-3  # float32 in other orders over a few epochs


def pythons(args):
    """contender -> interpreter; messages for those skipped."""
    found = {"rebind": sys.executable, "rebind-2ctx": sys.executable}
    if args.no_mxnet:
        return found, ["MXNet: skipped (--no-mxnet)"]
    default = HERE.parent.parent / "mxenv" / "bin" / "python"
    python, reason = _common.find_interpreter("REBIND_MXNET_PYTHON", default)
    if python is None:
        return found, [f"MXNet: skipped ({reason})"]
    found["mxnet"] = python
    return found, []


def command(found, name, workload, samples, epochs, inputs):
    impl, contexts = CONTENDERS[name]
    return [str(found[name]), str(WORKER), impl, workload, str(contexts), str(epochs)] + [
        str(samples),
        str(inputs),
    ]


def one_shot_rounds(found, workload, samples, epochs, rounds, problems):
    """name -> per-round answers of fresh ``Module.fit`` processes."""
    answers = {name: [] for name in found}
    env = dict(os.environ)
    for index in range(rounds):
        for name in sitting.rotated(list(found), index):
            if name not in answers:
                continue
            worker = sitting.Worker(
                f"fit {workload} {name}",
                command(found, name, workload, samples, epochs, ""),
                env,
                str(HERE),
            )
            try:
                answers[name].append(worker.read(TIMEOUT))
            except sitting.WorkerError as exc:
                problems.append(str(exc))
                answers.pop(name)
            finally:
                worker.close()
    return answers


def served_rounds(found, inputs, rounds, problems):
    """name -> per-round answers of the LSTM workers, one epoch each."""
    workers = {}
    for name in found:
        label = f"fit lstm {name}"
        workers[name] = sitting.Worker(
            label, command(found, name, "lstm", 0, 0, inputs), dict(os.environ), str(HERE)
        )
    answers = {}
    try:
        for name, worker in list(workers.items()):
            try:
                worker.read(TIMEOUT)
                answers[name] = []
            except sitting.WorkerError as exc:
                problems.append(str(exc))
        for index in range(rounds):
            for name in sitting.rotated(list(answers), index):
                if name not in answers:
                    continue
                try:
                    answers[name].append(workers[name].request("run", TIMEOUT))
                except sitting.WorkerError as exc:
                    problems.append(str(exc))
                    answers.pop(name)
    finally:
        for worker in workers.values():
            worker.close()
    return answers


def round_rates(entries):
    return [_common.median(entry["rates"]) for entry in entries]


def paired(answers, name, other):
    """Median over rounds of ``name``'s rate over ``other``'s in the same round."""
    if not answers.get(name) or not answers.get(other):
        return None
    pairs = zip(round_rates(answers[name]), round_rates(answers[other]), strict=False)
    return _common.median([a / b for a, b in pairs])


def print_table(workload, answers, rounds):
    unit = UNITS[workload]
    print(
        f"\n{workload}: {unit} of each timed epoch, {rounds} round(s); load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(
        f"  {'contender':<26} {unit:>10} {'p25-p75':^17} {'/MXNet':>6} {'/1 ctx':>6} "
        f"{'CPU s/1k':>9} {'peak MiB':>8} {'check':>8}"
    )
    for name, entries in answers.items():
        if not entries:
            continue
        rates = [rate for entry in entries for rate in entry["rates"]]
        cpu = 1000 * sum(e["cpu"] for e in entries) / sum(e["work"] for e in entries)
        rss = max(e["peak_rss_kib"] for e in entries) / 1024
        to_mxnet, to_one = paired(answers, name, "mxnet"), None
        if name == "rebind-2ctx":
            to_one = paired(answers, name, "rebind")
        print(
            f"  {LABELS[name]:<26} {_common.median(rates):10.0f} "
            f"{_common.percentile(rates, 0.25):8.0f}-{_common.percentile(rates, 0.75):<8.0f} "
            + " ".join(f"{v:5.2f}x" if v is not None else "     -" for v in (to_mxnet, to_one))
            + f" {cpu:9.1f} {rss:8.0f} {entries[-1]['check']:8.4f}"
        )


def check(workload, answers, problems):
    """rebind's runs must train as MXNet's do (accuracy, or the LSTM's loss)."""
    if not answers.get("mxnet"):
        return
    reference = answers["mxnet"][-1]["check"]
    for name, entries in answers.items():
        if not entries or name == "mxnet":
            continue
        value = entries[-1]["check"]
        if workload == "lstm":
            off = abs(value - reference) / abs(reference) > LOSS_TOLERANCE
        else:
            off = abs(value - reference) > ACC_TOLERANCE
        if off:
            problems.append(
                f"fit {workload}: {LABELS[name]} ends at {value:.4f}, MXNet at {reference:.4f}"
            )


def print_targets(results, load):
    print(f"\ntargets (medians of per-round ratios, {load} busy processes):")
    for workload, answers in results.items():
        for name, other, text in (
            ("rebind", "mxnet", "rebind >= 1.0x MXNet"),
            ("rebind-2ctx", "rebind", "two cpu contexts >= 1.0x one"),
        ):
            ratio = paired(answers, name, other)
            if ratio is not None:
                verdict = "met" if ratio >= 1.0 else "NOT met"
                print(f"  fit {workload}: {text}: {ratio:.2f}x: {verdict}")


def run(args):
    """Measure the three workloads; the problems found."""
    import _lstm_lm as lm

    found, messages = pythons(args)
    for message in messages:
        print(message)
    problems, results = [], {}
    with tempfile.TemporaryDirectory(prefix="rebind-fit-") as tmp:
        inputs = Path(tmp) / "lstm.npz"
        lm.save_inputs(str(inputs), lm.make_params(), lm.make_batches())
        for workload, (samples, epochs) in SCHEDULE.items():
            if workload not in args.workloads:
                continue
            if workload == "lstm":
                answers = served_rounds(found, inputs, args.rounds, problems)
            else:
                samples = samples // 2 if args.quick else samples
                answers = one_shot_rounds(found, workload, samples, epochs, args.rounds, problems)
            print_table(workload, answers, args.rounds)
            check(workload, answers, problems)
            results[workload] = answers
    print_targets(results, args.load)
    return problems
