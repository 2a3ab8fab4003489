"""Record MXNet 1.9.1's LibSVMIter: batches, pads, epochs, partitions and refusals.

Run with MXNet: ``/work/mxenv/bin/python tests/recording/record_libsvm.py``.
Writes tests/golden/io/libsvm.json: each case's file texts, iterator arguments,
and per epoch the batches (dense data, label, pad, index), or MXNet's error.
"""

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import mxnet as mx

OUT = Path(__file__).parent.parent / "golden" / "io" / "libsvm.json"
DOC_DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n"
DOC_LABEL = "1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n"


def random_text(seed, width=20):
    """A LibSVM text of 3 to 15 lines, labels 0, 1, ... (so each line names itself)."""
    rs = random.Random(seed)
    lines = []
    for i in range(rs.randint(3, 15)):
        feats = sorted(rs.sample(range(width), rs.randint(0, 5)))
        lines.append(f"{i} " + " ".join(f"{f}:{rs.random():.3f}" for f in feats))
    return "\n".join(lines) + "\n"


def cases():
    yield {"files": {"data.t": DOC_DATA}, "args": {"data_shape": [3], "batch_size": 3}}
    yield {"files": {"data.t": DOC_DATA}, "args": {"data_shape": [3], "batch_size": 4}}
    yield {"files": {"data.t": DOC_DATA}, "args": {"data_shape": [3], "batch_size": 7}}
    yield {
        "files": {"data.t": DOC_DATA, "label.t": DOC_LABEL},
        "args": {"data_shape": [3], "batch_size": 3, "label_libsvm": "label.t", "label_shape": [3]},
    }
    for seed in range(4):
        text = random_text(seed)
        for parts in (2, 3, 5):
            for part in range(parts):
                args = {"data_shape": [20], "batch_size": 2, "num_parts": parts}
                yield {"files": {"data.t": text}, "args": dict(args, part_index=part)}
    for bad in (
        {"round_batch": False},
        {"label_shape": [3]},
        {"data_shape": [3, 2]},
        {"num_parts": 0},
        {"label_libsvm": "data.t"},
    ):
        yield {
            "files": {"data.t": DOC_DATA},
            "args": dict({"data_shape": [3], "batch_size": 3}, **bad),
        }


def batches(it):
    out = []
    for b in it:
        out.append(
            {
                "data": b.data[0].asnumpy().tolist(),
                "data_stype": b.data[0].stype,
                "label": b.label[0].asnumpy().tolist(),
                "label_stype": b.label[0].stype,
                "pad": int(b.pad),
                "index": [int(i) for i in b.index],
            }
        )
    return out


def record(case, folder):
    for name, text in case["files"].items():
        Path(folder, name).write_text(text)
    args = dict(case["args"])
    for key in ("data_shape", "label_shape"):
        if key in args:
            args[key] = tuple(args[key])
    try:
        it = mx.io.LibSVMIter(data_libsvm="data.t", **args)
        case["provide_data"] = [[d.name, list(d.shape)] for d in it.provide_data]
        case["provide_label"] = [[d.name, list(d.shape)] for d in it.provide_label]
        epochs = []
        for _ in range(3):
            epochs.append(batches(it))
            it.reset()
        case["epochs"] = epochs
    except StopIteration:
        case["error"] = "StopIteration (empty part)"
    except mx.base.MXNetError as exc:
        lines = [line for line in str(exc).splitlines() if "MXNetError" in line]
        case["error"] = lines[0] if lines else str(exc).splitlines()[0]
    return case


def record_one(number):
    """Record case ``number`` in a fresh folder (one case a process: MXNet's prefetching
    iterators can crash the process when several are torn down in one)."""
    case = list(cases())[number]
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            return record(case, folder)
        finally:
            os.chdir(here)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        print(json.dumps(record_one(int(sys.argv[2]))))
        return
    recorded = []
    for number in range(len(list(cases()))):
        result = subprocess.run(
            [sys.executable, __file__, "--case", str(number)], capture_output=True, text=True
        )
        lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
        if not lines:  # MXNet crashed: leave the case out, say so
            print(f"case {number} crashed MXNet: {result.stderr.strip()[-300:]}")
            continue
        recorded.append(json.loads(lines[-1]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"mxnet": mx.__version__, "cases": recorded}) + "\n")
    print(f"wrote {len(recorded)} cases to {OUT}")


if __name__ == "__main__":
    main()
