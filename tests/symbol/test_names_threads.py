"""NameManager.current and AttrScope.current: MXNet's class attributes, one value per thread."""

import threading

import numpy as np

import rebind as mx
from rebind.attribute import AttrScope
from rebind.name import NameManager


def run_in_thread(target):
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()


def test_name_manager_current_is_assignable_and_per_thread():
    outer = NameManager.current
    seen = {}
    try:
        NameManager.current = NameManager()
        assert NameManager.current.get(None, "main") == "main0"

        def worker():
            seen["fresh"] = "main" not in NameManager.current._counter
            NameManager.current = NameManager()
            seen["name"] = NameManager.current.get(None, "spawned")

        run_in_thread(worker)
        assert seen == {"fresh": True, "name": "spawned0"}
        assert "spawned" not in NameManager.current._counter
        assert NameManager.current.get(None, "main") == "main1"
    finally:
        NameManager.current = outer


def test_name_manager_with_block_sets_current_and_restores_it():
    outer = NameManager.current
    with NameManager() as manager:
        assert NameManager.current is manager
        assert mx.sym.var("a").__add__(1).name == "_plusscalar0"
    assert NameManager.current is outer
    with mx.name.Prefix("enc_") as prefix:
        assert NameManager.current is prefix and mx.name.Prefix.current is prefix


def test_attr_scope_current_is_assignable_and_per_thread():
    outer = AttrScope.current
    seen = {}
    try:
        AttrScope.current = AttrScope(y="hi", z="hey")
        assert mx.sym.var("v").attr("y") == "hi"  # symbols made here take its attributes

        def worker():
            seen["fresh"] = AttrScope.current._attr
            AttrScope.current = AttrScope(x="hello")
            seen["x"] = mx.sym.var("w").attr("x")

        run_in_thread(worker)
        assert seen == {"fresh": {}, "x": "hello"}
        assert AttrScope.current._attr == {"y": "hi", "z": "hey"}
    finally:
        AttrScope.current = outer


def test_a_with_block_in_one_thread_does_not_leak_into_another():
    ready, status = threading.Event(), []

    def worker():
        with mx.AttrScope(x="hello"):
            ready.wait()
            status.append(AttrScope.current._attr.get("x"))

    thread = threading.Thread(target=worker)
    thread.start()
    outer = AttrScope.current
    AttrScope.current = AttrScope(x="hi")
    try:
        ready.set()
        thread.join()
        assert status == ["hello"]
    finally:
        AttrScope.current = outer


def test_a_graph_binds_and_runs_in_another_thread():
    result = []

    def worker():
        a, b = mx.sym.var("a"), mx.sym.var("b")
        args = {"a": mx.nd.ones((2, 2)), "b": mx.nd.full((2, 2), 2.0)}
        result.append((a + b).bind(mx.cpu(), args=args).forward()[0].asnumpy())

    run_in_thread(worker)
    np.testing.assert_array_equal(result[0], np.full((2, 2), 3.0))
