"""``mx.test_utils``: MXNet 1.9's helpers for writing operator and model tests.

``from rebind.test_utils import *`` brings in the same public names as MXNet's module,
including the modules its star-import leaks and test files come to rely on (``np``, ``mx``,
``os``, ``time``, ``array``, ``Symbol``, ...). Not leaked: ``requests``, ``ss``
(scipy.stats), ``Features`` and MXNet's C-runtime ``getenv``/``setenv``.
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
from ..symbol import Symbol
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
from .consistency import check_consistency, check_speed, compare_optimizer
from .data import (
    DOWNLOAD_TIMEOUT_S,
    DownloadError,
    download,
    get_bz2_data,
    get_cifar10,
    get_mnist,
    get_mnist_iterator,
    get_mnist_pkl,
    get_mnist_ubyte,
    get_zip_data,
)
from .env import (
    DummyIter,
    discard_stderr,
    environment,
    is_aarch64_run,
    is_cd_run,
    list_gpus,
    retry,
    set_env_var,
)
from .gradients import (
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    numeric_grad,
    simple_forward,
)
from .random_data import (
    create_2d_tensor,
    create_sparse_array,
    create_sparse_array_zd,
    create_vector,
    get_identity_mat,
    get_identity_mat_batch,
    rand_coord_2d,
    rand_ndarray,
    rand_shape_2d,
    rand_shape_3d,
    rand_shape_nd,
    rand_sparse_ndarray,
    random_arrays,
    random_sample,
    random_uniform_arrays,
    shuffle_csr_column_indices,
)
from .stats import (
    chi2_sf,
    chi_square_check,
    gen_buckets_probs_with_ppf,
    mean_check,
    var_check,
    verify_generator,
)
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


__all__ = [
    # leaked by MXNet's star-import, kept for test files that rely on them
    "np", "npt", "rnd", "mx", "Context", "Symbol", "array", "current_context", "OrderedDict",
    "contextmanager", "bz2", "errno", "gzip", "json", "logging", "numbers", "os", "platform",
    "struct", "sys", "time", "traceback", "zipfile",
    # the helpers
    "DOWNLOAD_TIMEOUT_S", "DownloadError", "DummyIter", "almost_equal", "assert_allclose",
    "assert_almost_equal", "assert_almost_equal_ignore_nan", "assert_almost_equal_with_err",
    "assert_exception", "checkShapes", "check_consistency", "check_numeric_gradient",
    "check_speed", "check_symbolic_backward", "check_symbolic_forward", "chi2_sf",
    "chi_square_check", "collapse_sum_like", "compare_ndarray_tuple", "compare_optimizer",
    "create_2d_tensor", "create_sparse_array", "create_sparse_array_zd", "create_vector",
    "default_atols", "default_context", "default_dtype", "default_numeric_eps", "default_rtols",
    "discard_stderr", "download", "effective_dtype", "environment", "gen_buckets_probs_with_ppf",
    "get_atol", "get_bz2_data", "get_cifar10", "get_etol", "get_identity_mat",
    "get_identity_mat_batch", "get_mnist", "get_mnist_iterator", "get_mnist_pkl",
    "get_mnist_ubyte", "get_rtol", "get_tolerance", "get_tols", "get_zip_data",
    "is_aarch64_run", "is_cd_run", "list_gpus", "locationError", "mean_check", "np_reduce",
    "numeric_grad", "rand_coord_2d", "rand_ndarray", "rand_shape_2d", "rand_shape_3d",
    "rand_shape_nd", "rand_sparse_ndarray", "random_arrays", "random_sample",
    "random_uniform_arrays", "retry", "same", "same_array", "same_symbol_structure",
    "set_default_context", "set_env_var", "shuffle_csr_column_indices", "simple_forward",
    "var_check", "verify_generator",
]
