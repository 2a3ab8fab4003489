"""Benchmark: images/s of ImageRecordIter (decode + augment + batch), rebind against MXNet 1.9.1.

Writes a RecordIO file of 224x224 JPEGs (quality 90, smooth content with noise),
then times whole epochs of ``ImageRecordIter(data_shape=(3, 224, 224),
batch_size=32, rand_mirror=True, mean/std normalisation)`` with
``preprocess_threads=2``: rebind in this process, MXNet 1.9.1 in a subprocess
(the same file and keywords). MXNet caps ``preprocess_threads`` at half the
CPUs with its default ``ctx='gpu'``; it is also run with ``ctx='cpu'`` and
``OMP_NUM_THREADS=2``, where it decodes on 2 OpenMP threads. The figures are
the median of the timed epochs after one warm-up epoch; the ratio is rebind
over the faster MXNet run.

    python benchmarks/image.py [--images 512] [--epochs 3] [--no-mxnet]

Environment:
    REBIND_MXNET_PYTHON   interpreter with mxnet==1.9.1 (default: ../mxenv/bin/python
                          beside the repository); skipped with a message when missing
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rebind import recordio
from rebind.io.image_record import ImageRecordIter

REPO = Path(__file__).resolve().parent.parent
KWARGS = {
    "data_shape": (3, 224, 224),
    "batch_size": 32,
    "rand_mirror": True,
    "mean_r": 123.68,
    "mean_g": 116.28,
    "mean_b": 103.53,
    "std_r": 58.4,
    "std_g": 57.12,
    "std_b": 57.38,
    "preprocess_threads": 2,
    "prefetch_buffer": 4,
}
MXNET_SCRIPT = """
import json, statistics, sys, time
import mxnet as mx
kwargs = json.loads(sys.argv[1])
it = mx.io.ImageRecordIter(**kwargs)
rates = []
for epoch in range(int(sys.argv[2]) + 1):
    it.reset()
    start, count = time.perf_counter(), 0
    for batch in it:
        batch.data[0].wait_to_read()
        count += batch.data[0].shape[0] - batch.pad
    if epoch:
        rates.append(count / (time.perf_counter() - start))
print(json.dumps(statistics.median(rates)))
"""


def make_records(path, count):
    """``count`` 224x224 JPEG records: gradients plus noise, so they compress like photos."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:224, 0:224]
    writer = recordio.MXRecordIO(str(path), "w")
    for i in range(count):
        base = (yy * (1 + i % 3) + xx * (2 + i % 5)) % 256
        planes = [(base + 40 * c + rng.integers(0, 30, size=base.shape)) % 256 for c in range(3)]
        image = np.stack(planes, axis=2).astype(np.uint8)
        header = recordio.IRHeader(0, float(i % 10), i, 0)
        writer.write(recordio.pack_img(header, image, quality=90, img_fmt=".jpg"))
    writer.close()


def time_rebind(path, epochs):
    it = ImageRecordIter(path_imgrec=str(path), verbose=False, **KWARGS)
    rates = []
    for epoch in range(epochs + 1):
        it.reset()
        start, count = time.perf_counter(), 0
        for batch in it:
            count += batch.data[0].shape[0] - batch.pad
        if epoch:
            rates.append(count / (time.perf_counter() - start))
    it.close()
    return statistics.median(rates)


def time_mxnet(python, path, epochs, extra, env_extra):
    kwargs = dict(KWARGS, path_imgrec=str(path), verbose=False, **extra)
    env = dict(os.environ, **env_extra)
    done = subprocess.run(
        [python, "-c", MXNET_SCRIPT, json.dumps(kwargs), str(epochs)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        print(f"MXNet run failed: {done.stderr.strip()[-500:]}")
        return None
    return float(done.stdout.strip().splitlines()[-1])


def _mxnet_python():
    python = os.environ.get("REBIND_MXNET_PYTHON", str(REPO.parent / "mxenv" / "bin" / "python"))
    return python if Path(python).exists() else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--no-mxnet", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.rec"
        make_records(path, args.images)
        size = path.stat().st_size / args.images / 1024
        print(
            f"{args.images} JPEGs 224x224 ({size:.0f} KiB each), batch 32, 2 threads, "
            f"rand_mirror + mean/std, {os.cpu_count()} CPUs"
        )
        rebind_rate = time_rebind(path, args.epochs)
        print(f"rebind ImageRecordIter:                   {rebind_rate:8.0f} images/s")
        python = None if args.no_mxnet else _mxnet_python()
        if python is None:
            print("MXNet 1.9.1 not run (--no-mxnet, or set REBIND_MXNET_PYTHON)")
            return
        runs = {
            "ctx='gpu' (default; threads capped)": ({}, {}),
            "ctx='cpu', OMP_NUM_THREADS=2": ({"ctx": "cpu"}, {"OMP_NUM_THREADS": "2"}),
        }
        best = 0.0
        for label, (extra, env) in runs.items():
            rate = time_mxnet(python, path, args.epochs, extra, env)
            if rate is not None:
                best = max(best, rate)
                print(f"MXNet 1.9.1 {label:30s}{rate:8.0f} images/s")
        if best:
            print(f"ratio rebind / fastest MXNet: {rebind_rate / best:.2f}")


if __name__ == "__main__":
    sys.exit(main())
