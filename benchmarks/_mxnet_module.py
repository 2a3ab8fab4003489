"""Worker: MXNet 1.9.1's Module on the benchmark models; prints JSON on stdout.

Run by ``benchmarks/module.py`` under the MXNet interpreter (Python 3.8):
``python _mxnet_module.py JOB [...]`` with the jobs of ``_module_runs``
(``fit:MODEL:SAMPLES:EPOCHS``, ``predict:SAMPLES:REPEATS``, ``latency:CALLS``).
"""

import logging
import sys

import _common

_common.configure_threads()

import _module_runs  # noqa: E402
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

if __name__ == "__main__":
    logging.disable(logging.WARNING)  # fit's per-epoch log lines
    version = "MXNet " + mx.__version__ + " (numpy " + np.__version__ + ")"
    _module_runs.main(mx, sys.argv[1:], version)
