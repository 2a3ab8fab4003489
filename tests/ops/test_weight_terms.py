"""A shared weight's gradient terms (ops/weight_terms.py): joined, summed once, exact where alone.

The executor hands the terms of an unrolled projection's steps to
``add_gradient``; these tests check the terms themselves: a single term is
the step's own product bit for bit, several are the sum of their products
(to float rounding), all ``count`` arrived give a plain array at once, the
steps' arrays are copied (a later change to them changes nothing), and terms
that cannot join, or plain arrays, are summed as arrays.
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
