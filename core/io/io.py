"""``mx.io.io``: the module MXNet's iterator classes live in (``from mxnet.io.io import ...``).

rebind keeps them in the other files of this package; this module gives them
MXNet's import path.
"""

from .base import DataBatch, DataDesc, DataIter, ResizeIter
from .files import CSVIter, MNISTIter, MXDataIter
from .image_det_record import ImageDetRecordIter
from .image_record import ImageRecordInt8Iter, ImageRecordIter, ImageRecordUInt8Iter
from .libsvm import LibSVMIter
from .ndarray_iter import NDArrayIter
from .prefetch import PrefetchingIter
from .unavailable import ImageRecordIter_v1, ImageRecordUInt8Iter_v1

__all__ = [
    "CSVIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "ImageDetRecordIter",
    "ImageRecordInt8Iter",
    "ImageRecordIter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter",
    "ImageRecordUInt8Iter_v1",
    "LibSVMIter",
    "MNISTIter",
    "MXDataIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
]
