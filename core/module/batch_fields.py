"""Reading what the training loops need from user objects, as leniently as MXNet does.

MXNet's ``fit``/``score``/``predict`` accept any batch with ``data`` and ``label``
and read its other fields only when present; callbacks may be one callable or a
list. Both ``base`` (score, predict) and ``training`` (fit) read them here.
"""

__all__ = ["call_all", "pad_of"]


def _as_list(callbacks):
    if callbacks is None:
        return []
    return list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]


def call_all(callbacks, *args):
    """Call one callback, or each of a list of them, with ``args``."""
    for callback in _as_list(callbacks):
        callback(*args)


def pad_of(batch):
    """The batch's padding (examples to ignore at its end); 0 when it has none."""
    return getattr(batch, "pad", None) or 0
