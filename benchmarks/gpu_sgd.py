"""One SGD step with momentum over a model's weights on a GPU: device time and bandwidth.

    python3 benchmarks/gpu_sgd.py [--models mlp mlp4096 lstm] [--steps 50]

A large model's optimizer step is bound by memory: with momentum and weight
decay it reads each weight, gradient and momentum once and writes the weight
and momentum back, five 4-byte accesses an element (so the figures' GB/s
count those bytes). This times, on the weight shapes of ``benchmarks/gpu.py``'s
workloads (their biases without decay, as Module's optimizer gives them):

- rebind's multi-weight kernel (``backends/cupy_multi_kernels``, one launch
  per 16 weights), with every array on a 16-byte word, as CuPy allocates
  them: four elements a thread, as whole words;
- the same kernel with each weight a view one element into a buffer: one
  element a thread (how every group ran before the words);
- ``torch.optim.SGD`` with PyTorch's default implementation on the device
  (``foreach``) and with ``fused=True``, on tensors of the same shapes.

Each figure is the median over ``--steps`` steps of the device time between
two CUDA events, and of the host time the step's call took (a short step's
device time is mostly the device waiting for that call's launch). Nothing
is asserted: ``benchmarks/gpu.py`` gives the workloads' rates.
"""

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _gpu_models as models  # noqa: E402

LR, MOMENTUM, WD = 0.1, 0.9, 1e-4


def _shapes(model):
    """The model's parameter shapes, weights (decayed) first as Module names them."""
    params = models.initial_params(model, "full")
    return {name: value.shape for name, value in params.items()}


def _device_ms(cupy, step, steps):
    """Medians of the device ms between the events, and of the host us queuing a step."""
    times, hosts = [], []
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(steps):
        start.record()
        queued = time.perf_counter()
        step()
        hosts.append((time.perf_counter() - queued) * 1e6)
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times), statistics.median(hosts)


def _rebind_step(cupy, shapes, shift):
    from rebind.backends import cupy_multi_kernels

    rng = cupy.random.default_rng(0)

    def array(shape):
        buffer = rng.standard_normal(math.prod(shape) + shift, dtype=cupy.float32)
        return buffer[shift:].reshape(shape)

    names = list(shapes)
    weights, grads, moms = ([array(shapes[n]) for n in names] for _ in range(3))
    f32 = cupy.float32
    decays = [f32(LR * WD if n.endswith("_weight") else 0.0) for n in names]
    rates = [f32(LR)] * len(names)
    return lambda: cupy_multi_kernels.sgd_steps(
        cupy, weights, grads, moms, decays, rates, f32(MOMENTUM)
    )


def _torch_step(torch, shapes, **implementation):
    device = torch.device("cuda:0")
    params = {n: torch.randn(s, device=device, requires_grad=True) for n, s in shapes.items()}
    for value in params.values():
        value.grad = torch.randn_like(value)
    groups = [
        {"params": [v for n, v in params.items() if n.endswith("_weight")], "weight_decay": WD},
        {"params": [v for n, v in params.items() if not n.endswith("_weight")]},
    ]
    optimizer = torch.optim.SGD(groups, lr=LR, momentum=MOMENTUM, **implementation)
    return optimizer.step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", nargs="+", choices=models.MODEL_NAMES, default=["mlp", "mlp4096", "lstm"]
    )
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)
    import rebind as mx

    reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        print(f"no GPU to time on: {reason}")
        return 1
    import cupy

    try:
        import torch
    except ImportError:
        torch = None
    print(f"one SGD step (momentum {MOMENTUM}, weight decay on weights), device ms (median of")
    print(f"{args.steps}) and GB/s at five 4-byte accesses an element; cupy {cupy.__version__}")
    for model in args.models:
        shapes = _shapes(model)
        elements = sum(math.prod(shape) for shape in shapes.values())
        cases = {
            "rebind, 16-byte words": _rebind_step(cupy, shapes, 0),
            "rebind, one element a thread": _rebind_step(cupy, shapes, 1),
        }
        if torch is not None and torch.cuda.is_available():
            cases["torch SGD (foreach)"] = _torch_step(torch, shapes)
            cases["torch SGD (fused=True)"] = _torch_step(torch, shapes, fused=True)
        print(f"{model}: {len(shapes)} arrays, {elements / 1e6:.2f}M elements")
        for name, step in cases.items():
            for _ in range(3):  # compile and warm
                step()
            ms, host = _device_ms(cupy, step, args.steps)
            rate = elements * 20 / ms / 1e6
            print(f"  {name:<30} {ms:8.3f} ms  {rate:7.0f} GB/s  host {host:6.1f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
