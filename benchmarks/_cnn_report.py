"""What ``benchmarks/cnn.py`` prints: output checks, a table per (network, mode), targets."""

import json

import _common
import numpy as np

LABELS = {
    "rebind": "rebind",
    "rebind-numpy": "rebind, NumPy only",
    "mxnet": "MXNet 1.9.1",
    "ort": "ONNX Runtime",
    "torch": "PyTorch eager",
}
# relative to the output's largest magnitude: float32 summed in other orders
TOLERANCE = {"infer": 1e-4, "train": 1e-3}  # training: batch statistics over 16 images
TARGETS_INFER = (("mxnet", 1.0), ("ort", 0.8))  # rebind's images/s over theirs, at least
TARGET_TRAIN = ("mxnet", 1.0)
TARGET_MODELS = ("resnet18_v1", "resnet50_v1", "mobilenet1.0")


def json_arg(spec):
    return json.dumps(spec, sort_keys=True)


def _difference(output, reference):
    if output.shape != reference.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    return float(np.max(np.abs(output.astype(np.float64) - reference))) / scale


def check_outputs(model, mode_name, workers, prefix, problems):
    """name -> relative difference of its warm-up output from the reference's.

    The reference's entry is "ref"; None: not compared.

    The reference is MXNet's output (else rebind's): every contender must agree
    within ``TOLERANCE``; disagreements and non-finite outputs are problems.
    """
    import _cnn_zoo

    mode = "train" if mode_name.startswith("train") else "infer"
    outputs = {name: np.load(entry[2]) for name, entry in workers.items()}
    reference = next((n for n in ("mxnet", "rebind", "rebind-numpy") if n in outputs), None)
    checks = {name: None for name in workers}
    if reference is not None:
        checks[reference] = "ref"
    for name, entry in workers.items():
        if not entry[1].get("finite", True):
            problems.append(f"{model} {mode_name}: {LABELS[name]}'s output is not finite")
    if reference is None or (mode == "train" and _cnn_zoo.has_dropout(prefix)):
        return checks  # (Dropout draws differ between libraries: nothing to compare)
    for name, output in outputs.items():
        if name == reference:
            continue
        checks[name] = _difference(output, outputs[reference].astype(np.float64))
        if checks[name] > TOLERANCE[mode]:
            problems.append(
                f"{model} {mode_name}: {LABELS[name]}'s output differs from "
                f"{LABELS[reference]}'s by {checks[name]:.1e} of its scale "
                f"(tolerance {TOLERANCE[mode]:.0e})"
            )
    return checks


def rates(answers):
    """Images/s of each round's measurement."""
    return [a["images"] / a["seconds"] for a in answers]


def paired_ratio(answers, name, other):
    """Median over rounds of ``name``'s images/s over ``other``'s in the same round."""
    if name not in answers or other not in answers:
        return None
    pairs = list(zip(rates(answers[name]), rates(answers[other]), strict=False))
    return _common.median([a / b for a, b in pairs]) if pairs else None


def _ratio_text(value):
    return f"{value:5.2f}x" if value is not None else "     -"


def _check_text(check):
    if check is None:
        return "-"
    return check if isinstance(check, str) else f"{check:.1e}"


def _load_text(value):
    return f"{value:.2f}" if value is not None else "?"


def print_block(model, mode_name, mode, block, args):
    """The table of one (network, mode)."""
    kind, batch = mode
    what = "inference" if kind == "infer" else "training step (SGD momentum 0.9)"
    before, after = block["load"]
    print(
        f"\n{model}, {what} at batch {batch}: images/s over {args.rounds} round(s) of >= "
        f"{args.seconds:g} s; load average {_load_text(before)} -> {_load_text(after)}"
        + (f"; busy processes: {args.load}" if args.load else "")
    )
    print(
        f"  {'contender':<34} {'images/s':>9} {'p25-p75':^15} {'/MXNet':>6} {'/ORT':>6} "
        f"{'CPU s/img':>9} {'peak MiB':>8} {'check':>8}"
    )
    answers = block["answers"]
    for name in block["contenders"]:
        ready = block["ready"].get(name)
        if ready is None or not answers.get(name):
            why = "did not start" if ready is None else "stopped"
            print(f"  {LABELS[name]:<34} (no measurement: the worker {why}, see ERROR below)")
            continue
        measured = rates(answers[name])
        cpu = _common.median([a["cpu"] / a["images"] for a in answers[name]])
        rss = max(a["peak_rss_kib"] for a in answers[name]) / 1024
        check = block["checks"].get(name)
        engine = f" ({ready['engine']})" if name == "rebind" and ready.get("engine") else ""
        label = f"{LABELS[name]}{engine}"
        print(
            f"  {label:<34} {_common.median(measured):9.2f} "
            f"{_common.percentile(measured, 0.25):7.2f}-{_common.percentile(measured, 0.75):<7.2f} "
            f"{_ratio_text(paired_ratio(answers, name, 'mxnet')):>6} "
            f"{_ratio_text(paired_ratio(answers, name, 'ort')):>6} {cpu:9.3f} {rss:8.0f} "
            f"{_check_text(check):>8}"
        )
    versions = sorted({ready["version"] for ready in block["ready"].values()})
    print(f"  ({', '.join(versions)})")


def target_lines(results):
    """The issue's targets with this sitting's figures: [(text, met)]."""
    lines = []
    for (model, mode_name), block in results.items():
        if model not in TARGET_MODELS:
            continue
        answers = block["answers"]
        if mode_name.startswith("infer"):
            targets = TARGETS_INFER
        elif model == "resnet18_v1":
            targets = (TARGET_TRAIN,)
        else:
            continue
        for other, factor in targets:
            ratio = paired_ratio(answers, "rebind", other)
            if ratio is not None:
                text = f"{model} {mode_name}: rebind >= {factor:.1f}x {LABELS[other]}: {ratio:.2f}x"
                lines.append((text, ratio >= factor))
    return lines


def print_summary(results, args):
    """The targets, met or NOT met (medians of per-round ratios)."""
    lines = target_lines(results)
    if not lines:
        return
    under = f", under {args.load} busy processes" if args.load else ""
    print(f"\ntargets (medians of per-round images/s ratios{under}):")
    for text, met in lines:
        print(f"  {text}: {'met' if met else 'NOT met'}")
