"""Benchmark: data-parallel training throughput with ``kvstore='dist_sync'`` on 1, 2, 4 workers.

Each worker trains the MLP 784-512-512-10 (relu, batch 128 per worker) with
``Module.forward_backward`` + ``update`` (SGD with momentum, updates on the
store: every step allreduces the six gradients over MPI). The driver starts
one ``mpiexec -n N`` job per worker count and prints, for each, the command,
the examples per second of the whole job (N * 128 / median step time) and
the scaling efficiency, throughput(N) / (N * throughput(1)) (1: the first
worker count given).

    python benchmarks/distributed.py [--workers 1 2 4] [--steps 200] [--warmup 20] [--threads 1]

Every worker gets ``--threads`` BLAS threads (default 1, so the figures measure
scaling by processes, not by threads); with more workers than CPUs the
workers share cores (oversubscribed) and the figure says so. Run it on an
otherwise idle machine: with spinning BLAS threads a busy one distorts every
figure. Needs ``pip install 'rebind[mpi]'``.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _common  # noqa: E402

from rebind.plugins.mpi_comm import find_mpiexec, launcher_environment  # noqa: E402

MODEL = "mlp"
BATCH = _common.MODELS[MODEL][0]


# -- one worker ---------------------------------------------------------------------------


def run_worker(steps, warmup):
    """Time ``steps`` training steps on this MPI worker; rank 0 prints one JSON line."""
    import rebind as mx

    kv = mx.kv.create("dist_sync")
    arrays = _common.make_arrays(MODEL, seed=_common.SEED + kv.rank)
    module = mx.mod.Module(_common.build_symbol(mx, MODEL), context=mx.cpu())
    module.bind(
        data_shapes=[("data", arrays["data"].shape)], label_shapes=[("softmax_label", (BATCH,))]
    )
    params = {name: mx.nd.array(arrays[name]) for name in _common.param_shapes(MODEL)}
    module.init_params(arg_params=params)
    module.init_optimizer(
        kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9}
    )
    batch = mx.io.DataBatch([mx.nd.array(arrays["data"])], [mx.nd.array(arrays["softmax_label"])])

    def step():
        module.forward_backward(batch)
        module.update()

    for _ in range(warmup):
        step()
    kv.barrier()
    # every step ends with allreduces, so rank 0's step times are the job's
    times = _common.time_steps(step, steps)
    kv.barrier()
    if kv.rank == 0:
        record = {
            "workers": kv.num_workers,
            "step_seconds": _common.median(times),
            "p25": _common.percentile(times, 0.25),
            "p75": _common.percentile(times, 0.75),
        }
        # one write: under PYTHONUNBUFFERED print() writes the newline apart, and the
        # launcher may put another rank's output between
        sys.stdout.write("RESULT " + json.dumps(record) + "\n")
        sys.stdout.flush()


# -- the driver ---------------------------------------------------------------------------


def cpus():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def mpiexec():
    found = find_mpiexec()
    if found is None:
        sys.exit("no mpiexec found: pip install 'rebind[mpi]'")
    return found


def run_job(workers, steps, warmup, threads):
    command = [mpiexec(), "-n", str(workers), sys.executable, "-m", "mpi4py", __file__]
    command += ["--worker", "--steps", str(steps), "--warmup", str(warmup)]
    env = launcher_environment(command[0], dict(os.environ, REBIND_BENCH_THREADS=str(threads)))
    shown = f"REBIND_BENCH_THREADS={threads} " + " ".join(
        Path(part).name if i == 0 else part for i, part in enumerate(command)
    )
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode != 0 or not lines:
        sys.exit(f"{shown} failed:\n{result.stdout}\n{result.stderr}")
    record = json.loads(lines[0].removeprefix("RESULT "))
    record.update(threads=threads, command=shown)
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads per worker")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _common.configure_threads()
        run_worker(args.steps, args.warmup)
        return
    print(f"MLP 784-512-512-10, batch {BATCH} per worker, SGD momentum, kvstore='dist_sync'")
    print(f"machine: {platform.processor() or platform.machine()}, {cpus()} CPUs usable")
    _common.print_load("before")
    print()
    per_worker = None  # examples/s of one worker in the first job: the scaling baseline
    for workers in args.workers:
        record = run_job(workers, args.steps, args.warmup, args.threads)
        throughput = workers * BATCH / record["step_seconds"]
        per_worker = per_worker or throughput / workers
        note = f" (oversubscribed: {workers} workers on {cpus()} CPUs)" if workers > cpus() else ""
        print(f"$ {record['command']}")
        print(
            f"  {workers} worker(s) x {record['threads']} thread(s): {throughput:,.0f} "
            f"examples/s, {1e3 * record['step_seconds']:.2f} ms/step (p25-p75 "
            f"{1e3 * record['p25']:.2f}-{1e3 * record['p75']:.2f}), scaling efficiency "
            f"{throughput / (workers * per_worker):.2f}{note}",
            flush=True,
        )
    _common.print_load("after")


if __name__ == "__main__":
    main()
