"""A shared weight's gradient terms (ops/weight_terms.py): joined, summed once, exact where alone.

The executor hands the terms of an unrolled projection's steps to
``add_gradient``; these tests check the terms themselves: a single term is
the step's own product bit for bit, several are the sum of their products
(to float rounding), all ``count`` arrived give a plain array at once, the
steps' arrays are copied on the CPU (a later change to them changes nothing)
and kept by reference on a GPU (joined once, when read), and terms that
cannot join, or plain arrays, are summed as arrays.
"""

import numpy as np

from rebind.executor.codegen import add_gradient
from rebind.ops.weight_terms import Terms, join, value


def _steps(count, rows=5, out=4, width=3, seed=0):
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal((rows, out)).astype(np.float32) for _ in range(count)]
    inputs = [rng.standard_normal((rows, width)).astype(np.float32) for _ in range(count)]
    return grads, inputs


def _products(grads, inputs):
    return sum(g.T @ x for g, x in zip(grads, inputs, strict=True))


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _summed(count, grads, inputs):
    total, owned = None, False
    for grad, data in zip(grads, inputs, strict=True):
        term = Terms(np, count, grad, data) if data is not None else Terms(np, count, grad)
        total, owned = add_gradient(total, owned, term)
    return total


def test_a_single_term_is_the_steps_own_product():
    (grad,), (data,) = _steps(1)
    np.testing.assert_array_equal(value(Terms(np, 1, grad, data)), grad.T @ data)
    np.testing.assert_array_equal(value(Terms(np, 1, grad)), grad.sum(axis=0))


def test_all_terms_arrived_give_the_sum_of_the_products():
    grads, inputs = _steps(6)
    weight = _summed(6, grads, inputs)
    bias = _summed(6, grads, [None] * 6)
    assert type(weight) is np.ndarray and type(bias) is np.ndarray  # summed on the last join
    _close(weight, _products(grads, inputs))
    _close(bias, sum(g.sum(axis=0) for g in grads))


def test_terms_hold_copies_of_the_steps_arrays():
    grads, inputs = _steps(3)
    expected = _products(grads, inputs)
    partial = _summed(3, grads[:2], inputs[:2])  # two of three: still terms
    assert type(partial) is Terms and partial.received == 2
    for array in (*grads[:2], *inputs[:2]):
        array[...] = 1e6  # the steps' memory reused after their backward
    total, _ = add_gradient(partial, True, Terms(np, 3, grads[2], inputs[2]))
    _close(total, expected)


def test_fewer_terms_than_counted_are_summed_when_read():
    grads, inputs = _steps(4)
    partial = _summed(5, grads, inputs)  # a fifth step never ran backward
    assert type(partial) is Terms
    _close(value(partial), _products(grads, inputs))


def test_other_gradients_and_misfits_are_summed_as_arrays():
    grads, inputs = _steps(2)
    plain = np.ones((4, 3), np.float32)
    term = Terms(np, 2, grads[0], inputs[0])
    np.testing.assert_allclose(join(term, plain), grads[0].T @ inputs[0] + 1, rtol=1e-6)
    np.testing.assert_allclose(join(plain, term), grads[0].T @ inputs[0] + 1, rtol=1e-6)
    wider, _ = _steps(1, rows=9)  # more rows than the first step's buffers hold
    other = Terms(np, 2, wider[0], inputs[0][:1].repeat(9, axis=0))
    assert not term.accepts(other)
    expected = grads[0].T @ inputs[0] + wider[0].T @ inputs[0][:1].repeat(9, axis=0)
    _close(join(term, other), expected)
    assert join(plain, plain) is None


class DeviceArray(np.ndarray):
    """A NumPy array that ``is_cupy_array`` takes for a GPU array (its type's module)."""


DeviceArray.__module__ = "cupy._core.fake"


def test_device_terms_are_kept_by_reference_and_joined_once(monkeypatch):
    grads, inputs = _steps(4)
    device_grads = [g.view(DeviceArray) for g in grads]
    device_inputs = [x.view(DeviceArray) for x in inputs]
    joins = []
    real_concatenate = np.concatenate

    def concatenate(arrays):
        joins.append(len(arrays))
        return real_concatenate(arrays)

    monkeypatch.setattr(np, "concatenate", concatenate)
    partial = _summed(4, device_grads[:3], device_inputs[:3])
    assert type(partial) is Terms and partial.received == 3 and not partial.buffered
    assert all(a is b for a, b in zip(partial.listed[0], device_grads[:3], strict=True))
    assert all(a is b for a, b in zip(partial.listed[1], device_inputs[:3], strict=True))
    assert joins == []  # nothing copied while the terms arrive
    total, _ = add_gradient(partial, True, Terms(np, 4, device_grads[3], device_inputs[3]))
    assert joins == [4, 4]  # the four steps' gradients and inputs, once each
    np.testing.assert_array_equal(
        total, real_concatenate(grads).T @ real_concatenate(inputs)
    )  # the same rows in the same order as the buffers would hold
    _close(total, _products(grads, inputs))
    bias = _summed(4, device_grads, [None] * 4)
    np.testing.assert_array_equal(bias, real_concatenate(grads).sum(axis=0))


def test_device_terms_read_early_and_misfits_still_sum():
    grads, inputs = _steps(3)
    device = [
        (g.view(DeviceArray), x.view(DeviceArray)) for g, x in zip(grads, inputs, strict=True)
    ]
    partial = _summed(5, [g for g, _ in device], [x for _, x in device])  # 3 of 5 arrived
    _close(value(partial), _products(grads, inputs))
    wider, _ = _steps(1, rows=9)
    other = Terms(np, 5, wider[0].view(DeviceArray), inputs[0][:1].repeat(9, axis=0))
    assert partial.accepts(other)  # 3 x 5 rows joined, 9 more fit in the 25 of five steps
    too_wide, _ = _steps(1, rows=11)
    assert not partial.accepts(Terms(np, 5, too_wide[0], inputs[0][:1].repeat(11, axis=0)))
