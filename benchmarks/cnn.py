"""Benchmark: model-zoo convolutional networks on the CPU, against MXNet, ONNX Runtime and PyTorch.

Networks of MXNet 1.9.1's Gluon model zoo (ResNet-18 v1, ResNet-50 v1 and
MobileNet-1.0 unless ``--models`` names others of the sixteen), loaded from
MXNet-exported checkpoints (``--zoo DIR``; missing files are built from the
recorded symbol JSON and ``zoo_params``, see ``_cnn_zoo.py``), measured as a
user runs them:

* inference at batch 1 and 32: ``Module.bind(for_training=False)``,
  ``forward(DataBatch, is_train=False)``, ``get_outputs()[0].asnumpy()``;
* a training step at batch 16 (``--train-models``, default ResNet-18): the
  network under SoftmaxOutput, ``forward_backward`` + ``update`` with SGD
  (momentum 0.9);

in images/s, for rebind (default settings; its inference engine is
``REBIND_INFERENCE_ENGINE``'s choice, its convolution kernels
``REBIND_CONV_KERNELS``'s), rebind on NumPy alone (both forced to ``numpy``:
the old path, also in training), MXNet 1.9.1, ONNX Runtime (the network exported by rebind's
``mx.onnx.export_model``, a default CPU session) and PyTorch eager (the same
graph and weights as ``torch.nn.functional`` calls, ``_cnn_torch.py``). Every
contender runs in its own worker process (``_cnn_worker.py``) with the thread
settings the user has (none are set here); the workers of one (network, mode)
are loaded together, their warm-up outputs compared (rebind vs MXNet within
1e-4 of the output's scale), then timed in rounds whose order rotates. Printed:
images/s median (p25-p75 over rounds), the ratios to MXNet and to ONNX Runtime
(medians of per-round ratios), CPU seconds per image (getrusage of the worker:
all its threads), the worker's peak RSS (VmHWM), and the load average. ``--load N``
runs N busy processes (pure-Python spin loops) beside the contenders all
sitting; ``--fit`` measures ``Module.fit`` under load instead (``_cnn_fit.py``).

    python benchmarks/cnn.py [--models ...] [--train-models ...] [--rounds 3] [--seconds 1.5]
                             [--quick] [--load N] [--no-mxnet] [--no-ort] [--no-torch]
                             [--no-rebind-numpy] [--zoo DIR]
    python benchmarks/cnn.py --fit [--load N] [--quick] [--no-mxnet] [--workloads W ...]

Environment: REBIND_MXNET_PYTHON (default ../mxenv/bin/python), REBIND_TORCH_PYTHON
(default: this interpreter if it has torch, else ../torchenv/bin/python),
REBIND_ZOO (default ../zoo), REBIND_INFERENCE_ENGINE (rebind's engine), REBIND_CONV_KERNELS
(rebind's convolution kernels).
"""

import argparse
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import _cnn_report as report  # noqa: E402
import _cnn_sitting as sitting  # noqa: E402
import _cnn_zoo as zoo  # noqa: E402
import _common  # noqa: E402

CONTENDERS = ("rebind", "rebind-numpy", "mxnet", "ort", "torch")
TRAINERS = ("rebind", "rebind-numpy", "mxnet", "torch")  # ONNX Runtime only infers
MODES = {"infer1": ("infer", 1), "infer32": ("infer", 32), "train16": ("train", 16)}
DEFAULT_MODELS = ("resnet18_v1", "resnet50_v1", "mobilenet1.0")
READY_TIMEOUT = 900  # loading and the warm-up (ResNet-50 training on a busy machine)
RUN_TIMEOUT = 300  # beyond --seconds: one step of the slowest contender
LOAD_LIMIT = 4 * 3600  # busy processes end by themselves after this many seconds
WORKER = HERE / "_cnn_worker.py"


def interpreters(args):
    """contender -> (python, None) or (None, why it is skipped)."""
    found = {"rebind": (sys.executable, None)}
    found["rebind-numpy"] = (
        (None, "skipped (--no-rebind-numpy)") if args.no_rebind_numpy else (sys.executable, None)
    )
    if args.no_ort:
        found["ort"] = (None, "skipped (--no-ort)")
    elif any(importlib.util.find_spec(m) is None for m in ("onnx", "onnxruntime")):
        found["ort"] = (None, "skipped: needs onnx and onnxruntime (pip install onnx onnxruntime)")
    else:
        found["ort"] = (sys.executable, None)
    if args.no_mxnet:
        found["mxnet"] = (None, "skipped (--no-mxnet)")
    else:
        default = REPO.parent / "mxenv" / "bin" / "python"
        found["mxnet"] = _common.find_interpreter("REBIND_MXNET_PYTHON", default)
    found["torch"] = (None, "skipped (--no-torch)") if args.no_torch else torch_interpreter()
    return found


def torch_interpreter():
    """(python, None) for an interpreter that imports torch, else (None, why not)."""
    default = REPO.parent / "torchenv" / "bin" / "python"
    python, reason = _common.find_interpreter("REBIND_TORCH_PYTHON", default, module="torch")
    if python is None:
        return None, f"skipped: PyTorch is not installed ({reason})"
    try:
        done = subprocess.run(
            [str(python), "-c", "import torch"], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"skipped: {python} cannot import torch ({exc})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"skipped: {python} cannot import torch ({last})"
    return python, None


def worker_env(contender):
    """The user's environment; rebind-numpy forces rebind's NumPy engine and kernels."""
    env = dict(os.environ)
    if contender == "rebind-numpy":
        env["REBIND_INFERENCE_ENGINE"] = "numpy"
        env["REBIND_CONV_KERNELS"] = "numpy"
    return env


def prepare_files(model, mode_names, contenders, zoo_dir, tmp, problems):
    """Checkpoint prefix, and the ONNX files and PyTorch weights the contenders need.

    A network rebind cannot export leaves ONNX Runtime out for it (a problem:
    rebind exports every layer of the zoo's networks).
    """
    prefix, note = zoo.ensure_checkpoint(zoo_dir, model)
    if note:
        print(f"\nnote: {note}")
    files = {"prefix": prefix, "onnx": {}, "weights": None}
    if "ort" in contenders:
        batches = sorted({MODES[m][1] for m in mode_names if MODES[m][0] == "infer"})
        try:
            for batch in batches:
                files["onnx"][batch] = zoo.export_onnx(prefix, model, batch, tmp)
        except Exception as exc:  # noqa: BLE001 (any exporter failure: report, go on)
            problems.append(f"{model}: mx.onnx.export_model failed, no ONNX Runtime ({exc})")
            files["onnx"] = {}
    if "torch" in contenders:
        files["weights"] = zoo.torch_weights(prefix, model, tmp)
    return files


def start_workers(model, mode_name, contenders, found, files, tmp, problems):
    """Start the contenders' workers together; name -> (Worker, ready answer)."""
    mode, batch = MODES[mode_name]
    started = {}
    for name in contenders:
        spec = {
            "contender": name,
            "model": model,
            "mode": mode,
            "batch": batch,
            "side": zoo.side(model),
            "prefix": files["prefix"],
            "onnx": files["onnx"].get(batch, ""),
            "weights": files["weights"] or "",
            "output": str(Path(tmp) / f"{name}-{model}-{mode_name}.npy"),
        }
        command = [str(found[name][0]), str(WORKER), report.json_arg(spec)]
        label = f"{model} {mode_name} {name}"
        started[name] = (sitting.Worker(label, command, worker_env(name), str(HERE)), spec)
    workers = {}
    for name, (worker, spec) in started.items():
        try:
            workers[name] = (worker, worker.read(READY_TIMEOUT), spec["output"])
        except sitting.WorkerError as exc:
            problems.append(str(exc))
    return workers


def time_rounds(workers, rounds, seconds, problems):
    """name -> list of per-round answers; the order of the contenders rotates each round."""
    answers = {name: [] for name in workers}
    for index in range(rounds):
        for name in sitting.rotated(list(workers), index):
            if name not in answers:
                continue
            worker = workers[name][0]
            try:
                answers[name].append(worker.request(f"run {seconds}", RUN_TIMEOUT + seconds))
            except sitting.WorkerError as exc:
                problems.append(str(exc))
                answers.pop(name)
    return answers


def measure(model, mode_name, contenders, found, files, args, tmp, problems):
    """One (network, mode): load, check, time in rounds; the block's figures."""
    load_before = sitting.load_average()
    workers = start_workers(model, mode_name, contenders, found, files, tmp, problems)
    try:
        checks = report.check_outputs(model, mode_name, workers, files["prefix"], problems)
        answers = time_rounds(workers, args.rounds, args.seconds, problems)
    finally:
        for worker, _, _ in workers.values():
            worker.close()
    ready = {name: entry[1] for name, entry in workers.items()}
    return {
        "contenders": contenders,
        "answers": answers,
        "ready": ready,
        "checks": checks,
        "load": (load_before, sitting.load_average()),
    }


def plan(args):
    """[(model, mode name)] in the order they are measured."""
    steps = []
    for model in args.models:
        for mode_name in args.modes:
            if MODES[mode_name][0] == "train" and model not in args.train_models:
                continue
            steps.append((model, mode_name))
    return steps


def run_sitting(args, found):
    """Measure every (network, mode) of the plan; (results, problems)."""
    results, problems = {}, []
    active = [name for name in CONTENDERS if found[name][0] is not None]
    with tempfile.TemporaryDirectory(prefix="rebind-cnn-") as tmp:
        for model in args.models:
            steps = [(m, mode) for m, mode in plan(args) if m == model]
            if not steps:
                continue
            modes = [mode_name for _, mode_name in steps]
            try:
                files = prepare_files(model, modes, active, args.zoo, tmp, problems)
            except (OSError, ValueError, RuntimeError) as exc:
                problems.append(f"{model}: cannot prepare its files ({exc})")
                continue
            for mode_name in modes:
                trains = MODES[mode_name][0] == "train"
                contenders = [n for n in active if n in TRAINERS or not trains]
                if "ort" in contenders and not files["onnx"]:
                    contenders.remove("ort")
                block = measure(model, mode_name, contenders, found, files, args, tmp, problems)
                results[(model, mode_name)] = block
                report.print_block(model, mode_name, MODES[mode_name], block, args)
    return results, problems


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = sorted(zoo.NETWORKS)
    parser.add_argument("--models", nargs="+", choices=names, default=list(DEFAULT_MODELS))
    parser.add_argument(
        "--train-models",
        nargs="+",
        choices=names,
        default=["resnet18_v1"],
        help="networks (of --models) whose training step is measured (default: ResNet-18)",
    )
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5, help="per measurement (>= 1 step)")
    parser.add_argument("--quick", action="store_true", help="one round of 0.5 s measurements")
    parser.add_argument("--load", type=int, default=0, metavar="N", help="N busy processes")
    parser.add_argument("--fit", action="store_true", help="Module.fit under --load instead")
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=["mlp", "lenet", "lstm"],
        default=["mlp", "lenet", "lstm"],
        help="with --fit: the workloads to measure (default: all three)",
    )
    parser.add_argument("--zoo", type=Path, default=zoo.default_folder())
    for name in ("mxnet", "ort", "torch", "rebind-numpy"):
        parser.add_argument(f"--no-{name}", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 1, 0.5
    if args.rounds < 1 or args.seconds <= 0 or args.load < 0:
        parser.error("--rounds must be >= 1, --seconds > 0 and --load >= 0")
    return args


def main(argv=None):
    args = parse(argv)
    started = time.perf_counter()
    print(f"{' '.join([Path(sys.argv[0]).name] + sys.argv[1:])}")
    print(
        f"{os.cpu_count()} CPUs, usable {len(os.sched_getaffinity(0))}; Python "
        f"{platform.python_version()}; REBIND_INFERENCE_ENGINE="
        f"{os.environ.get('REBIND_INFERENCE_ENGINE', '(unset: auto)')}; REBIND_CONV_KERNELS="
        f"{os.environ.get('REBIND_CONV_KERNELS', '(unset: auto)')}; thread variables: "
        + (
            ", ".join(f"{v}={os.environ[v]}" for v in _common.THREAD_VARIABLES if v in os.environ)
            or "none (each library's defaults)"
        )
    )
    _common.print_load("before")
    if args.fit:
        import _cnn_fit

        with sitting.BusyLoad(args.load, LOAD_LIMIT) as load:
            print(f"busy processes beside every contender: {len(load.processes)}")
            problems = _cnn_fit.run(args)
        return _common.finish(started, problems)
    found = interpreters(args)
    for name in CONTENDERS:
        if found[name][0] is None:
            print(f"{report.LABELS[name]}: {found[name][1]}")
    print(f"zoo: {args.zoo}")
    with sitting.BusyLoad(args.load, LOAD_LIMIT) as load:
        print(f"busy processes beside every contender: {len(load.processes)}")
        results, problems = run_sitting(args, found)
        if args.load and load.alive() != args.load:
            problems.append(f"only {load.alive()} of {args.load} busy processes lasted the sitting")
    report.print_summary(results, args)
    return _common.finish(started, problems)


if __name__ == "__main__":
    sys.exit(main())
