"""Values shared by the sparse recorders: drawn matrices and their JSON encoding."""

__all__ = ["STYPES", "encode", "matrix"]

STYPES = ("default", "csr", "row_sparse")


def matrix(rng, shape, zero_rows=(1,), density=0.5):
    """Values with some exact zeros and the given all-zero rows."""
    values = rng.uniform(-2, 2, size=shape).astype("float32")
    values[rng.uniform(size=shape) > density] = 0
    for row in zero_rows:
        if row < shape[0]:
            values[row] = 0
    return values


def encode(values):
    return {
        "dtype": str(values.dtype),
        "shape": list(values.shape),
        "values": values.ravel().tolist(),
    }
