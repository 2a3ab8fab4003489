"""``ops.consecutive``: a stack of arrays lying end to end in one buffer, from its memory.

The batched projections stack a layer's time steps (its outputs forward, its
gate gradients backward), which the fused layer writes as consecutive blocks
of one buffer; so does the stack of a layer's merged outputs. ``stacked``'s
view must equal ``xp.stack`` wherever it is taken, be taken only for such a
run, and be read-only; ``stack`` always gives a new array, copied from that
view. Anything else is stacked as before (a new array). On a GPU the same
checks run on CuPy arrays.
"""

import numpy as np
import pytest

from rebind.ops.consecutive import stack, stacked


def _steps(xp, count=5, rows=3, width=4, dtype="float32"):
    buffer = xp.arange((count + 1) * rows * width, dtype=dtype).reshape(count + 1, rows, width)
    return buffer, [buffer[t + 1] for t in range(count)]


def _shares(xp, a, b):
    if xp is np:
        return np.shares_memory(a, b)
    return a.data.mem is b.data.mem


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_consecutive_blocks_stack_as_a_read_only_view(xp, axis):
    buffer, steps = _steps(xp)
    got = stacked(xp, steps, axis=axis)
    expected = xp.stack(steps, axis=axis)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert bool((got == expected).all())
    assert _shares(xp, got, buffer)
    if xp is np:
        assert not got.flags.writeable
    copied = stack(xp, steps, axis=axis)  # a new array of the same values
    assert bool((copied == expected).all()) and not _shares(xp, copied, buffer)
    assert copied.flags.c_contiguous
    copied[...] = 0  # writeable, and writing it leaves the steps alone
    assert bool((xp.stack(steps, axis=axis) == expected).all())


def _not_a_run(xp):
    buffer, steps = _steps(xp)
    other, _ = _steps(xp)
    return {
        "reversed": steps[::-1],
        "a gap": [buffer[1], buffer[3], buffer[5]],
        "one repeated": [buffer[1], buffer[1]],
        "another buffer": [buffer[1], other[2]],
        "other shapes": [buffer[1], buffer[2][:2]],
        "strided blocks": [buffer[1][:, ::2], buffer[2][:, ::2]],
        "separate arrays": [xp.ones((3, 4), dtype="float32") for _ in range(3)],
        "one array": [buffer[1]],
    }


@pytest.mark.parametrize(
    "case",
    [
        "reversed",
        "a gap",
        "one repeated",
        "another buffer",
        "other shapes",
        "strided blocks",
        "separate arrays",
        "one array",
    ],
)
def test_anything_else_is_stacked_as_before(xp, case):
    arrays = _not_a_run(xp)[case]
    if case == "other shapes":
        for function in (stacked, stack):
            with pytest.raises(ValueError):
                function(xp, arrays)
        return
    for function in (stacked, stack):
        got = function(xp, arrays)
        assert bool((got == xp.stack(arrays)).all())
        assert not any(_shares(xp, got, a) for a in arrays)  # a new array
