"""MXNet's C++ iterators that rebind does not have yet, each refusing with its reason."""

__all__ = [
    "ImageDetRecordIter",
    "ImageRecordInt8Iter",
    "ImageRecordIter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter",
    "ImageRecordUInt8Iter_v1",
    "LibSVMIter",
]

IMAGE_PIPELINE = "image RecordIO iterators are not implemented yet (tracked by issue #17)"
SPARSE = "LibSVMIter yields CSR batches; rebind stores every array densely"


def _refusing(name, reason):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"mx.io.{name}: {reason}")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"MXNet's ``{name}``: not available in rebind ({reason})."
    return refuse


ImageRecordIter = _refusing("ImageRecordIter", IMAGE_PIPELINE)
ImageRecordIter_v1 = _refusing("ImageRecordIter_v1", IMAGE_PIPELINE)
ImageRecordUInt8Iter = _refusing("ImageRecordUInt8Iter", IMAGE_PIPELINE)
ImageRecordUInt8Iter_v1 = _refusing("ImageRecordUInt8Iter_v1", IMAGE_PIPELINE)
ImageRecordInt8Iter = _refusing("ImageRecordInt8Iter", IMAGE_PIPELINE)
ImageDetRecordIter = _refusing("ImageDetRecordIter", IMAGE_PIPELINE)
LibSVMIter = _refusing("LibSVMIter", SPARSE)
