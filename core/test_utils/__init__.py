"""``mx.test_utils``: MXNet 1.9's helpers for writing operator and model tests.

``from mxnet.test_utils import *`` suites run unchanged: the star import gives
the public names MXNet 1.9.1's gives (recorded from it), including the modules
and names MXNet's leaks by accident and test files rely on (``np``, ``mx``,
``os``, ``time``, ``Symbol``, ...). The files: ``tolerances`` (per-dtype
defaults), ``compare`` (array comparisons), ``gradients`` (numeric and
symbolic checks), ``consistency`` (across contexts and dtypes, speed,
optimizers), ``random_data``, ``distributions`` (statistical checks),
``env`` (run helpers) and ``data`` (MNIST/CIFAR fetchers).
"""

import bz2
import errno
import gzip
import json
import logging
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import zipfile
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

from .. import context as _context
from ..ndarray import array
from ..runtime import Features
from ..symbol import Symbol
from ..util import get_cuda_compute_capability, getenv, setenv, use_np
from . import data as _data
from . import distributions as _distributions
from . import env as _env
from . import random_data as _random_data
from .compare import (
    almost_equal,
    assert_allclose,
    assert_almost_equal,
    assert_almost_equal_ignore_nan,
    assert_almost_equal_with_err,
    assert_exception,
    checkShapes,
    collapse_sum_like,
    compare_ndarray_tuple,
    locationError,
    np_reduce,
    same,
    same_array,
    same_symbol_structure,
)
from .consistency import (
    check_consistency,
    check_gluon_hybridize_consistency,
    check_speed,
    compare_optimizer,
)
from .data import *  # noqa: F403
from .distributions import *  # noqa: F403
from .env import *  # noqa: F403
from .gradients import (
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    numeric_grad,
    simple_forward,
)
from .random_data import *  # noqa: F403
from .tolerances import (
    default_atols,
    default_context,
    default_dtype,
    default_numeric_eps,
    default_rtols,
    effective_dtype,
    get_atol,
    get_etol,
    get_rtol,
    get_tolerance,
    get_tols,
    set_default_context,
)

Context = _context.Context
current_context = _context.current_context

# the rebind package itself (still importing when this runs; the same object once done)
mx = sys.modules[__name__.rpartition(".")[0]]

_LEAKED = [
    "np", "npt", "rnd", "mx", "Context", "Symbol", "array", "current_context", "OrderedDict",
    "contextmanager", "bz2", "errno", "gzip", "json", "logging", "numbers", "os", "platform",
    "struct", "sys", "time", "traceback", "zipfile", "Features", "getenv", "setenv", "use_np",
    "get_cuda_compute_capability",
]  # fmt: skip
_HELPERS = [
    "almost_equal", "assert_allclose", "assert_almost_equal", "assert_almost_equal_ignore_nan",
    "assert_almost_equal_with_err", "assert_exception", "checkShapes", "check_consistency",
    "check_gluon_hybridize_consistency",
    "check_numeric_gradient", "check_speed", "check_symbolic_backward",
    "check_symbolic_forward", "collapse_sum_like", "compare_ndarray_tuple", "compare_optimizer",
    "default_atols", "default_context", "default_dtype", "default_numeric_eps", "default_rtols",
    "effective_dtype", "get_atol", "get_etol", "get_rtol", "get_tolerance", "get_tols",
    "locationError", "np_reduce", "numeric_grad", "same", "same_array", "same_symbol_structure",
    "set_default_context", "simple_forward",
]  # fmt: skip
__all__ = (
    _LEAKED
    + _HELPERS
    + _data.__all__
    + _distributions.__all__
    + _env.__all__
    + _random_data.__all__
)
