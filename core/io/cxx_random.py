"""``std::shuffle`` with ``std::mt19937``, as MXNet 1.9.1's C++ iterators draw it.

MNISTIter shuffles its examples once with ``std::shuffle(first, last,
std::mt19937(seed))``. The released MXNet 1.9.1 library was built against a
libstdc++ whose ``std::shuffle`` is the plain Fisher-Yates walk (one
``uniform_int_distribution(0, i)`` draw per position ``i = 1 .. n-1``) and
whose ``uniform_int_distribution`` scales a 32-bit draw down by
``(2**32 - 1) // range``, drawing again while the draw falls in the uneven
remainder. Reproducing those three pieces gives MXNet's order for any seed
(checked against real MXNet in tests/io/test_data_order.py).

NumPy's legacy ``RandomState(seed)`` is the same Mersenne Twister, seeded the
same way as ``std::mt19937(seed)``; a full-range 32-bit ``randint`` returns its
raw outputs in order.
"""

import numpy as np

__all__ = ["std_shuffle_order"]

_U32_MAX = 0xFFFFFFFF
_CHUNK = 4096


class _Mt19937:
    """Raw 32-bit outputs of ``std::mt19937(seed)``, read in chunks."""

    def __init__(self, seed):
        self._state = np.random.RandomState(seed % (1 << 32))
        self._chunk = []

    def __call__(self):
        if not self._chunk:
            draws = self._state.randint(0, 1 << 32, size=_CHUNK, dtype=np.uint32)
            self._chunk = draws[::-1].tolist()
        return self._chunk.pop()


def _uniform_int(engine, upper):
    """libstdc++'s ``uniform_int_distribution(0, upper)`` (downscaling with rejection)."""
    span = upper + 1
    scaling = _U32_MAX // span
    past = span * scaling
    while True:
        draw = engine()
        if draw < past:
            return draw // scaling


def std_shuffle_order(count, seed):
    """The permutation ``std::shuffle`` makes of ``range(count)`` with ``std::mt19937(seed)``."""
    order = list(range(count))
    engine = _Mt19937(int(seed))
    for i in range(1, count):
        j = _uniform_int(engine, i)
        order[i], order[j] = order[j], order[i]
    return np.array(order, dtype=np.int64)
