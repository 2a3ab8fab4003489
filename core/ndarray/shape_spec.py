"""MXNet's reshape codes, shared by ``NDArray.reshape`` and the Reshape operator.

In a target shape, besides positive sizes: ``0`` copies the input dimension at
the same position, ``-1`` is inferred from the remaining size, ``-2`` copies
all remaining input dimensions, ``-3`` merges two consecutive input
dimensions, ``-4`` splits one input dimension into the next two values (one of
which may be ``-1``). ``reverse=True`` matches the codes right to left (MXNet's way: reversing the
shape and the codes, then the result).
"""

from ..errors import ShapeError

__all__ = ["infer_reshape"]


def infer_reshape(source, spec, reverse=False):
    """The concrete shape that ``spec`` asks for when reshaping ``source``."""
    source, spec = tuple(int(d) for d in source), tuple(int(d) for d in spec)
    if reverse:
        # MXNet reverses both, applies the codes left to right, and reverses the
        # result: a -4 then splits into the two values before it, swapped
        return tuple(reversed(infer_reshape(source[::-1], spec[::-1])))
    out = _expand(source, spec)
    unknown = [i for i, d in enumerate(out) if d == -1]
    total = _product(source)
    if len(unknown) > 1:
        raise ShapeError(f"reshape: at most one -1 allowed, spec {spec} for shape {source}")
    if unknown:
        known = _product(d for d in out if d != -1)
        if known == 0 or total % known:
            raise ShapeError(f"reshape: cannot infer -1 in {spec} for shape {source}")
        out[unknown[0]] = total // known
    if _product(out) != total:
        raise ShapeError(
            f"reshape: target {tuple(out)} (from spec {spec}) has {_product(out)} elements, "
            f"the array of shape {source} has {total}"
        )
    return tuple(out)


def _expand(source, spec):
    out, src, j = [], 0, 0
    while j < len(spec):
        code = spec[j]
        if code > 0 or code == -1:
            out.append(code)
            src += 1
        elif code == 0:
            out.append(_dim(source, src, spec))
            src += 1
        elif code == -2:
            out.extend(source[src:])
            src = len(source)
        elif code == -3:
            out.append(_dim(source, src, spec) * _dim(source, src + 1, spec))
            src += 2
        elif code == -4:
            out.extend(_split(_dim(source, src, spec), spec[j + 1 : j + 3], spec))
            src += 1
            j += 2
        else:
            raise ShapeError(f"reshape: unknown code {code} in spec {spec}")
        j += 1
    return out


def _split(dim, pair, spec):
    if len(pair) != 2:
        raise ShapeError(f"reshape: -4 must be followed by two sizes in spec {spec}")
    first, second = pair
    if first == -1 and second > 0:
        first = dim // second
    elif second == -1 and first > 0:
        second = dim // first
    if first <= 0 or second <= 0 or first * second != dim:
        raise ShapeError(f"reshape: cannot split dimension {dim} into {pair} (spec {spec})")
    return [first, second]


def _dim(source, index, spec):
    if index >= len(source):
        raise ShapeError(f"reshape: spec {spec} refers past the {len(source)} input dimensions")
    return source[index]


def _product(dims):
    result = 1
    for d in dims:
        result *= d
    return result
