"""Record the JSON MXNet 1.9.1 writes for every network in ``graph_cases.py``.

Run with MXNet 1.9.1 (Python 3.8) from this folder: ``python make_mxnet_graphs.py``.
It writes ``data/mxnet_graphs.json.gz`` ({case name: JSON text}), which
``test_mxnet_graphs.py`` compares rebind's output with. rebind never imports
MXNet; this script is only kept so the file can be made again.
"""

import gzip
import json
import warnings

import graph_cases
import mxnet as mx


def main():
    warnings.simplefilter("ignore")  # FusedRNNCell's NTC advice
    recorded = {name: graph_cases.build(mx, name) for name in sorted(graph_cases.cases())}
    with gzip.GzipFile("data/mxnet_graphs.json.gz", "wb", mtime=0) as handle:
        handle.write(json.dumps(recorded, indent=0, sort_keys=True).encode("utf-8"))


if __name__ == "__main__":
    main()
