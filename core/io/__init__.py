"""``mx.io``: data iterators and the descriptions of what they yield.

The pieces live in the modules of this package: ``base`` (DataDesc,
DataBatch, DataIter, ResizeIter), ``prefetch`` (PrefetchingIter),
``ndarray_iter`` (NDArrayIter), ``libsvm`` (LibSVMIter), ``files``
(MXDataIter, CSVIter, MNISTIter),
``image_record`` (ImageRecordIter and its uint8/int8 forms, with
``image_record_aug`` and ``image_record_workers``), ``image_det_record``
(ImageDetRecordIter, with ``image_det_aug``), ``unavailable`` (MXNet's
v1 image iterators, which refuse with their reason), and,
under MXNet's module names, ``io`` and ``utils``.
"""

from . import io, utils
from .io import *  # noqa: F403
from .io import __all__ as _io_names

__all__ = [*_io_names, "io", "utils"]
