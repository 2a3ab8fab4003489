"""Worker: rebind's Module on the benchmark models; prints JSON on stdout.

Run by ``benchmarks/module.py`` in a fresh process (so its peak memory is its
own): ``python _rebind_module.py JOB [...]`` with the jobs of ``_module_runs``.
The progress bar is silenced (``REBIND_PROGRESS=0``).
"""

import logging
import os
import sys

import _common

_common.configure_threads()
os.environ["REBIND_PROGRESS"] = "0"

import _module_runs  # noqa: E402
import numpy as np  # noqa: E402

import rebind as mx  # noqa: E402

if __name__ == "__main__":
    logging.disable(logging.WARNING)  # fit's per-epoch log lines
    _module_runs.main(mx, sys.argv[1:], f"rebind {mx.__version__} (numpy {np.__version__})")
