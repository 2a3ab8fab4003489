"""One unrolled LSTM layer on a GPU: its recurrent products in the step kernels, or cuBLAS's.

    python3 benchmarks/gpu_layer.py [--hidden 200 256 512 1024] [--batch 32 128]
                                    [--steps 35] [--passes 30] [--device gpu|cpu]
                                    [--cell lstm|gru]

On a GPU, ``fused_layer`` runs an unrolled ``LSTMCell`` layer as one plan step.
Where ``cupy_layer_kernels.with_product`` says so each time step is
one kernel that also works out the recurrent product, each unit's sums by its
own thread ("threads") or, with ``PRODUCTS_OVER_WARPS``, split over a warp of
32 threads ("warps"); wider layers take a cuBLAS product and a kernel per
step. This times one layer (input ``(batch, steps, hidden)``, outputs summed
by ``MakeLoss``) bound by ``simple_bind``, forward and backward, all three
ways, for each width and batch, and prints per pass:

- ``wall``: the median of passes each ended by a device synchronisation;
- ``host``: the median time to queue a pass (what the host spends);
- PyTorch's cuDNN ``nn.LSTM`` layer of the same sizes, forward and backward,
  when torch is importable, as a reference.

``--cell gru`` times an unrolled ``GRUCell`` layer the same way ("cuBLAS"
is then the fused cells' steps, each with its cuBLAS product), against
``nn.GRU``. The last column names the placement ``with_product`` and
``PRODUCTS_OVER_WARPS`` choose for each row by default.
The placement is read when a pass runs, so one binding serves all three. Its
figures are what ``with_product``'s limits and ``PRODUCTS_OVER_WARPS``
should be set from. ``--device cpu`` runs the same script on NumPy (no layer
step there: every placement runs the replaced steps), to check the script only.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rebind as mx  # noqa: E402
from rebind.backends import cupy_layer_kernels  # noqa: E402

# the settings of cupy_layer_kernels each placement runs under, whatever the width
SETTINGS = (
    "MAX_HIDDEN_WITH_PRODUCT",
    "MAX_HIDDEN_OVER_THREADS",
    "MAX_STEP_PRODUCT_OVER_WARPS",
    "PRODUCTS_OVER_WARPS",
)
_ALL = 1 << 62
PLACEMENTS = {
    "threads": (_ALL, _ALL, _ALL, False),
    "warps": (_ALL, _ALL, _ALL, True),
    "cuBLAS": (0, 0, 0, False),
}


def default_placement(hidden, batch, kind):
    """The placement cupy_layer_kernels' own settings choose for such a layer."""
    kernels = cupy_layer_kernels
    if not kernels.with_product(hidden, batch, {"lstm": 4, "gru": 3}[kind]):
        return "cuBLAS"
    return "warps" if kernels.PRODUCTS_OVER_WARPS else "threads"


CELLS = {"lstm": mx.rnn.LSTMCell, "gru": mx.rnn.GRUCell}


def _layer(steps, hidden, kind="lstm"):
    data = mx.sym.Variable("data")
    cell = CELLS[kind](hidden, prefix="l0_")
    outputs, _ = cell.unroll(steps, data, layout="NTC", merge_outputs=True)
    return mx.sym.MakeLoss(mx.sym.sum(outputs))


def _synchronize(device):
    if device == "gpu":
        import cupy

        cupy.cuda.Device().synchronize()


def _time_passes(run, device, passes):
    """(wall, host) medians in ms of ``run()``, after three passes of warm-up."""
    for _ in range(3):
        run()
    _synchronize(device)
    walls, hosts = [], []
    for _ in range(passes):
        started = time.perf_counter()
        run()
        queued = time.perf_counter()
        _synchronize(device)
        ended = time.perf_counter()
        walls.append((ended - started) * 1e3)
        hosts.append((queued - started) * 1e3)
    return statistics.median(walls), statistics.median(hosts)


def _rebind_layer(steps, hidden, batch, device, passes, kind="lstm"):
    import numpy as np

    ctx = mx.gpu(0) if device == "gpu" else mx.cpu()
    executor = _layer(steps, hidden, kind).simple_bind(ctx, data=(batch, steps, hidden))
    rng = np.random.default_rng(0)
    for array in executor.arg_dict.values():
        array[:] = rng.uniform(-0.1, 0.1, array.shape).astype(np.float32)
    found = executor._plan.optimizations
    layers = [n for rewrite, n, _ in found if rewrite == f"fused_{kind}_layer"]

    def run():
        executor.forward(is_train=True)
        executor.backward()

    figures = {}
    kernels = cupy_layer_kernels
    saved = [getattr(kernels, setting) for setting in SETTINGS]
    try:
        for name, values in PLACEMENTS.items():
            for setting, value in zip(SETTINGS, values, strict=True):
                setattr(kernels, setting, value)
            figures[name] = _time_passes(run, device, passes)
    finally:
        for setting, value in zip(SETTINGS, saved, strict=True):
            setattr(kernels, setting, value)
    return figures, len(layers)


def _torch_layer(steps, hidden, batch, passes, kind="lstm"):
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    module = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    lstm = module(hidden, hidden, 1, batch_first=True).cuda()
    data = torch.rand(batch, steps, hidden, device="cuda", requires_grad=True)

    def run():
        lstm(data)[0].sum().backward()

    for _ in range(3):
        run()
    torch.cuda.synchronize()
    walls = []
    for _ in range(passes):
        started = time.perf_counter()
        run()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - started) * 1e3)
    return statistics.median(walls)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[200, 256, 512, 1024])
    parser.add_argument("--batch", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--steps", type=int, default=35)
    parser.add_argument("--passes", type=int, default=30)
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    parser.add_argument("--cell", choices=sorted(CELLS), default="lstm")
    args = parser.parse_args(argv)
    if args.device == "gpu":
        reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
        if reason is not None:
            print(f"no GPU to time on: {reason}")
            return 1
    print(
        f"one {CELLS[args.cell].__name__} layer unrolled over {args.steps} steps, forward and "
        "backward; "
        f"ms a pass (median of {args.passes}); "
        + ", ".join(f"{s} {getattr(cupy_layer_kernels, s)}" for s in SETTINGS)
        + "; x: the threads' wall time over each's"
    )
    ways = "".join(f"  {name:>17}" for name in PLACEMENTS)
    ratios = f"{'warps':>6} {'cuBLAS':>6}"
    print(f"{'hidden':>6} {'batch':>5} {'layers':>6}{ways}  {ratios}  torch cuDNN  default")
    print(f"{'':>18}" + f"  {'wall':>8} {'host':>8}" * len(PLACEMENTS))
    for hidden in args.hidden:
        for batch in args.batch:
            figures, layers = _rebind_layer(
                args.steps, hidden, batch, args.device, args.passes, args.cell
            )
            reference = (
                _torch_layer(args.steps, hidden, batch, args.passes, args.cell)
                if args.device == "gpu"
                else None
            )
            cells = "".join(f"  {wall:>8.3f} {host:>8.3f}" for wall, host in figures.values())
            threads = figures["threads"][0]
            ratios = " ".join(
                f"{threads / figures[name][0]:>5.2f}x" for name in ("warps", "cuBLAS")
            )
            torch_text = "-" if reference is None else f"{reference:.3f}"
            chosen = default_placement(hidden, batch, args.cell)
            print(
                f"{hidden:>6} {batch:>5} {layers:>6}{cells}  {ratios}  {torch_text:>11}  {chosen}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
