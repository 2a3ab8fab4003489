"""MXNet's C++ iterators that rebind does not have, each refusing with its reason."""

__all__ = [
    "ImageDetRecordIter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter_v1",
    "LibSVMIter",
]

IMAGE_PIPELINE = (
    "MXNet's deprecated v1 and detection image iterators are not implemented; "
    "use mx.io.ImageRecordIter"
)
SPARSE = "LibSVMIter yields CSR batches; rebind stores every array densely"


def _refusing(name, reason):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"mx.io.{name}: {reason}")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"MXNet's ``{name}``: not available in rebind ({reason})."
    return refuse


ImageRecordIter_v1 = _refusing("ImageRecordIter_v1", IMAGE_PIPELINE)
ImageRecordUInt8Iter_v1 = _refusing("ImageRecordUInt8Iter_v1", IMAGE_PIPELINE)
ImageDetRecordIter = _refusing("ImageDetRecordIter", IMAGE_PIPELINE)
LibSVMIter = _refusing("LibSVMIter", SPARSE)
