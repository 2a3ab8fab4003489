"""mx.engine: the bulk size is remembered and restored (rebind has no engine to bulk)."""

import rebind as mx


def test_set_bulk_size_returns_the_previous_value():
    first = mx.engine.set_bulk_size(7)
    assert mx.engine.set_bulk_size(first) == 7


def test_bulk_restores_the_size_even_on_error():
    before = mx.engine.set_bulk_size(3)
    try:
        with mx.engine.bulk(10):
            assert mx.engine.set_bulk_size(10) == 10
        assert mx.engine.set_bulk_size(3) == 3
        try:
            with mx.engine.bulk(20):
                raise KeyError("inside")
        except KeyError:
            pass
        assert mx.engine.set_bulk_size(3) == 3
    finally:
        mx.engine.set_bulk_size(before)


def test_results_do_not_depend_on_bulking():
    x = mx.nd.array([[1.0, -2.0]])
    plain = mx.nd.relu(x).asnumpy()
    with mx.engine.bulk(50):
        assert (mx.nd.relu(x).asnumpy() == plain).all()
