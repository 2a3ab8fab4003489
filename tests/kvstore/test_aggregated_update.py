"""A push of several keys reaches rebind's optimizer updater in one call (update_many), with
the arithmetic of one call per key; a user's updater function still gets one key a call."""

import numpy as np

import rebind as mx
from rebind.optimizer.updater import Updater


def _store(updater=None):
    kv = mx.kv.create("local")
    shapes = {"w0": (3, 2), "w1": (4,), "w2": (2, 2)}
    for name, shape in shapes.items():
        kv.init(name, mx.nd.array(np.full(shape, 1.0, np.float32)))
    if updater is None:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9, wd=0.01))
    else:
        kv._set_updater(updater)
    return kv, shapes


def _grads(shapes, seed):
    rng = np.random.RandomState(seed)
    return {
        n: [mx.nd.array(rng.normal(size=s).astype(np.float32)) for _ in range(2)]
        for n, s in shapes.items()
    }


def test_one_updater_call_for_every_key_of_a_push_same_values_as_per_key(monkeypatch):
    together, shapes = _store()
    alone, _ = _store()
    calls = []
    call = Updater.__call__

    def counted(self, index, grad, weight):
        if self is together._updater:
            calls.append(list(index) if isinstance(index, list) else index)
        return call(self, index, grad, weight)

    monkeypatch.setattr(Updater, "__call__", counted)
    for step in range(3):
        grads = _grads(shapes, step)
        names = list(shapes)
        outs = [[mx.nd.zeros(shapes[n]) for _ in range(2)] for n in names]
        together.pushpull(names, [grads[n] for n in names], out=outs)
        for name in names:  # the same pushes one key at a time
            out = [mx.nd.zeros(shapes[name]) for _ in range(2)]
            alone.pushpull(name, grads[name], out=out)
            np.testing.assert_array_equal(outs[names.index(name)][1].asnumpy(), out[1].asnumpy())
    assert calls == [[b"w0", b"w1", b"w2"]] * 3


def test_a_users_updater_function_gets_one_key_a_call():
    seen = []

    def updater(key, grad, weight):
        seen.append(key)
        weight[:] = weight + grad

    kv, shapes = _store(updater)
    grads = _grads(shapes, 0)
    names = list(shapes)
    outs = [[mx.nd.zeros(shapes[n])] for n in names]
    kv.pushpull(names, [grads[n] for n in names], out=outs)
    assert seen == [b"w0", b"w1", b"w2"]
    want = 1.0 + grads["w1"][0].asnumpy() + grads["w1"][1].asnumpy()
    np.testing.assert_allclose(outs[1][0].asnumpy(), want, rtol=1e-6)
