"""``mx.io``: data iterators and the descriptions of what they yield.

The pieces live in small modules beside this one: ``io_base`` (DataDesc,
DataBatch, DataIter, ResizeIter), ``io_prefetch`` (PrefetchingIter),
``io_ndarray`` (NDArrayIter) and ``io_files`` (CSVIter, MNISTIter).
"""

from .io_base import DataBatch, DataDesc, DataIter, ResizeIter
from .io_files import CSVIter, MNISTIter
from .io_ndarray import NDArrayIter
from .io_prefetch import PrefetchingIter

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
