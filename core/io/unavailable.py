"""MXNet's C++ iterators that rebind does not have, each refusing with its reason."""

__all__ = [
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter_v1",
]

IMAGE_PIPELINE = (
    "MXNet's deprecated v1 image iterators are not implemented; use mx.io.ImageRecordIter"
)


def _refusing(name, reason):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"mx.io.{name}: {reason}")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"MXNet's ``{name}``: not available in rebind ({reason})."
    return refuse


ImageRecordIter_v1 = _refusing("ImageRecordIter_v1", IMAGE_PIPELINE)
ImageRecordUInt8Iter_v1 = _refusing("ImageRecordUInt8Iter_v1", IMAGE_PIPELINE)
