"""Where Module.fit spends its steps on a GPU: host time by function, device time by kernel.

    python3 benchmarks/gpu_profile.py [--models mlp mlp4096 lenet lstm] [--batches N]
                                      [--top N] [--device gpu|cpu] [--pytorch]

For each workload of ``benchmarks/gpu.py`` (the same symbol, data, parameters
and SGD, through ``_gpu_rebind.fit``), two fits of two epochs each; the first
epoch of each (binding, kernel compilation) is left out, the second measured:

1. under ``cProfile``: the host's functions by own time and by cumulative
   time (a step the host cannot keep ahead of the device shows here);
2. under PyTorch's profiler, when torch is importable: CUPTI records every
   kernel and copy the process starts, CuPy's included, so its table gives
   the device time by kernel and the launches a step.

With ``--pytorch``, PyTorch eager's loop of ``benchmarks/gpu.py`` runs under
the same profiler after each workload (both its epochs, the first a warm-up):
which kernels it picks for the same products, and what its step costs.

The epoch's end (``get_params`` and the callbacks) is inside the measured
part, as it is inside ``benchmarks/gpu.py``'s rates. Nothing here is compared
with anything: ``benchmarks/gpu.py`` gives the rates.
"""

import argparse
import cProfile
import importlib.util
import io
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _gpu_models as models  # noqa: E402
import _gpu_rebind  # noqa: E402


def _stats_text(profile, sort, top):
    text = io.StringIO()
    pstats.Stats(profile, stream=text).strip_dirs().sort_stats(sort).print_stats(top)
    lines = text.getvalue().splitlines()
    return "\n".join(line for line in lines if line.strip() and "List reduced" not in line)


def _second_epoch(model, device, batches, start, stop):
    """Fit two epochs; ``start()`` after the first (the warm-up), ``stop()`` at the end.

    Returns the seconds from ``start`` to ``stop``.
    """
    marks = {}

    def on_epoch_end(epoch):
        if epoch == 0:
            marks["start"] = time.perf_counter()
            start()

    _gpu_rebind.fit(model, device, "full", batches, 1, on_epoch_end)
    stop()
    return time.perf_counter() - marks["start"]


def host_profile(model, device, batches, top):
    profile = cProfile.Profile()
    seconds = _second_epoch(model, device, batches, profile.enable, profile.disable)
    print(
        f"-- {model}: host, one epoch of {batches} batches under cProfile: {seconds:.3f} s "
        f"({1e3 * seconds / batches:.2f} ms a batch with the profiler's cost)"
    )
    print(_stats_text(profile, "tottime", top))
    print(_stats_text(profile, "cumulative", top))


def kernel_profile(model, device, batches, top):
    import torch.profiler as tp

    activities = [tp.ProfilerActivity.CPU]
    if device == "gpu":
        activities.append(tp.ProfilerActivity.CUDA)
    prof = tp.profile(activities=activities)
    seconds = _second_epoch(model, device, batches, prof.start, prof.stop)
    events = prof.key_averages()
    device_us = sum(getattr(e, "self_device_time_total", 0) for e in events)
    launches = sum(e.count for e in events if getattr(e, "self_device_time_total", 0) and e.count)
    print(
        f"-- {model}: device, one epoch of {batches} batches: {seconds:.3f} s wall, "
        f"{device_us / 1e3:.1f} ms on the device, {launches / batches:.0f} kernels and "
        f"copies a batch"
    )
    sort = "self_cuda_time_total" if device == "gpu" else "self_cpu_time_total"
    print(events.table(sort_by=sort, row_limit=top, max_name_column_width=50))


def pytorch_kernel_profile(model, device, batches, top):
    """PyTorch eager's own loop (``_gpu_torch.fit``) under the same profiler: its kernels."""
    import _gpu_torch
    import torch.profiler as tp

    activities = [tp.ProfilerActivity.CPU, tp.ProfilerActivity.CUDA]
    with tp.profile(activities=activities) as prof:
        _gpu_torch.fit(model, device, "full", batches, 1)
    events = prof.key_averages()
    device_us = sum(getattr(e, "self_device_time_total", 0) for e in events)
    print(
        f"-- {model}: PyTorch eager, device, two epochs of {batches} batches (the first a "
        f"warm-up): {device_us / 1e3 / (2 * batches):.2f} ms on the device a batch"
    )
    print(events.table(sort_by="self_cuda_time_total", row_limit=top, max_name_column_width=50))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=models.MODEL_NAMES, default=None)
    parser.add_argument("--batches", type=int, default=None, help="batches an epoch")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--no-torch", action="store_true", help="skip the kernel table")
    parser.add_argument(
        "--pytorch", action="store_true", help="also PyTorch eager's loop's kernels (GPU)"
    )
    args = parser.parse_args(argv)
    has_torch = not args.no_torch and importlib.util.find_spec("torch") is not None
    for model in args.models or models.MODEL_NAMES:
        batches = args.batches or models.SCHEDULES["quick"][model][0]
        host_profile(model, args.device, batches, args.top)
        if has_torch:
            try:
                kernel_profile(model, args.device, batches, args.top)
            except Exception as exc:  # the profiler is a lead, not the point
                print(f"-- {model}: torch profiler failed: {exc!r}")
        if has_torch and args.pytorch and args.device == "gpu":
            pytorch_kernel_profile(model, args.device, batches, args.top)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
