"""``mx.io``: data iterators and the descriptions of what they yield.

The pieces live in the modules of this package: ``base`` (DataDesc,
DataBatch, DataIter, ResizeIter), ``prefetch`` (PrefetchingIter),
``ndarray_iter`` (NDArrayIter) and ``files`` (CSVIter, MNISTIter).
"""

from .base import DataBatch, DataDesc, DataIter, ResizeIter
from .files import CSVIter, MNISTIter
from .ndarray_iter import NDArrayIter
from .prefetch import PrefetchingIter

__all__ = [
    "CSVIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "MNISTIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
]
