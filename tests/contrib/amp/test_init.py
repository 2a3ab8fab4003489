"""amp.init: symbols and NDArray calls made afterwards cast per the lists.

``init`` patches ``mx.sym``/``mx.nd`` for the rest of the process (as in
MXNet), so each check runs in a fresh interpreter.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rebind.contrib import amp

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = json.loads((Path(__file__).parent / "amp_reference.json").read_text())


def _run(code):
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout, result.stderr


def _nodes(graph):
    return [(n["op"], n["name"], n.get("attrs", {}), n["inputs"]) for n in graph["nodes"]]


def test_symbols_built_after_init_match_mxnet():
    out, err = _run(
        """
        from rebind.contrib import amp
        from tests.contrib.amp.networks import mlp, multicast
        amp.init()
        amp.init()  # a second call changes nothing
        print(mlp()[0].tojson(remove_amp_cast=False))
        print(multicast()[0].tojson(remove_amp_cast=False))
        """
    )
    first, second = (json.loads(text) for text in _split_json(out))
    assert _nodes(first) == _nodes(REFERENCE["init_symbol"])
    assert _nodes(second) == _nodes(REFERENCE["init_multicast"])
    # as in MXNet, symbolic loss outputs say loss scaling does not reach them
    assert "SoftmaxOutput does not support dynamic loss scaling" in err


def _split_json(text):
    decoder, index, found = json.JSONDecoder(), 0, []
    while text[index:].strip():
        while text[index].isspace():
            index += 1
        value, index = decoder.raw_decode(text, index)
        found.append(json.dumps(value))
    return found


def test_ndarray_calls_after_init_cast():
    out, _ = _run(
        """
        import numpy as np
        import rebind as mx
        from rebind.contrib import amp
        amp.init()
        x = mx.nd.ones((2, 3))
        w, b = mx.nd.ones((4, 3)), mx.nd.zeros((4,))
        fc = mx.nd.FullyConnected(x, w, b, num_hidden=4)
        sm = mx.nd.softmax(fc)
        mixed = mx.nd.broadcast_add(fc, x[:, :1])
        same = mx.nd.broadcast_add(fc, fc)
        soft = mx.nd.Activation(fc, act_type="softrelu")
        relu = mx.nd.Activation(fc, act_type="relu")
        print(fc.dtype.__name__, sm.dtype.__name__, mixed.dtype.__name__,
              same.dtype.__name__, soft.dtype.__name__, relu.dtype.__name__)
        print(float(fc.asnumpy()[0, 0]))
        """
    )
    dtypes, value = out.splitlines()
    assert dtypes.split() == ["float16", "float32", "float32", "float16", "float32", "float16"]
    assert float(value) == 3.0


def test_init_refuses_what_rebind_cannot_do():
    with pytest.raises(ValueError, match="bfloat16"):
        amp.init("bfloat16")
    with pytest.raises(NotImplementedError, match="layout_optimization"):
        amp.init(layout_optimization=True)
    for name in ("init_trainer", "unscale"):
        with pytest.raises(NotImplementedError, match="Gluon"):
            getattr(amp, name)(object())
    with pytest.raises(NotImplementedError, match="Gluon"):
        amp.scale_loss(None, object())
