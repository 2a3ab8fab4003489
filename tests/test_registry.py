"""The plugin registry: built-ins, entry points, blocking, clashes, unknown names."""

import importlib
import sys
import textwrap
import types

import pytest

import rebind as mx
from rebind import registry
from rebind.errors import BackendUnavailableError, PluginError, UnknownNameError

FAKE_BACKEND_PLUGIN = """
import attrs
from rebind import hookimpl
from rebind.backends.numpy_backend import NumpyBackend


@attrs.define(eq=False)
class TracingBackend(NumpyBackend):
    name: str = "fakenp"
    device_type: str = "{device_type}"
    created: list = attrs.field(factory=list)

    def zeros(self, shape, dtype, device_id):
        self.created.append(shape)
        return super().zeros(shape, dtype, device_id)


@hookimpl
def rebind_add_backends(registry):
    registry.add("{name}", TracingBackend(name="{name}"))
"""


@pytest.fixture
def install_plugin(tmp_path, monkeypatch, fresh_registry):
    """Fake an installed distribution whose entry point (group 'rebind') is a plugin module."""

    def install(module_name, source, entry_name=None):
        (tmp_path / f"{module_name}.py").write_text(textwrap.dedent(source))
        dist = tmp_path / f"{module_name}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {module_name}\nVersion: 1.0\n"
        )
        (dist / "entry_points.txt").write_text(
            f"[rebind]\n{entry_name or module_name} = {module_name}\n"
        )
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()
        monkeypatch.delitem(sys.modules, module_name, raising=False)
        return entry_name or module_name

    return install


def test_builtin_backends_are_registered_by_module_name(fresh_registry):
    backends = registry.get_registry("backends")
    assert {"numpy", "cupy"} <= set(backends.names())
    assert backends.owner("numpy") == "rebind.backends.numpy_backend"
    assert backends.owner("cupy") == "rebind.backends.cupy_backend"


def test_hookimpl_is_exported_for_plugin_authors():
    assert mx.hookimpl is registry.hookspecs.hookimpl


def test_training_event_hooks_are_specified(fresh_registry):
    hooks = registry.get_plugin_manager().hook
    assert hooks.rebind_batch_end.spec.argnames == (
        "module",
        "epoch",
        "nbatch",
        "batch_size",
        "eval_metric",
    )
    for name in ("rebind_fit_begin", "rebind_epoch_end", "rebind_fit_end"):
        assert getattr(hooks, name).spec is not None


def test_entry_point_backend_selected_by_env(install_plugin, monkeypatch):
    install_plugin("fake_backend_pkg", FAKE_BACKEND_PLUGIN.format(name="fakenp", device_type="cpu"))
    monkeypatch.setenv("REBIND_BACKEND", "FakeNP")  # names are case-insensitive
    registry.reset()
    array = mx.nd.zeros((2, 3))
    backend = array.context.backend
    assert backend.name == "fakenp"
    assert backend.created == [(2, 3)]
    assert registry.get_registry("backends").owner("fakenp") == "fake_backend_pkg"


def test_entry_point_backend_with_new_device_type(install_plugin, monkeypatch):
    install_plugin("fake_fpga_pkg", FAKE_BACKEND_PLUGIN.format(name="fpga", device_type="fpga"))
    monkeypatch.setenv("REBIND_BACKEND", "fpga")
    registry.reset()
    assert mx.current_context() == mx.Context("fpga", 0)
    array = mx.nd.ones((4,))
    assert array.context == mx.Context("fpga", 0)
    assert array.asnumpy().sum() == 4
    # cpu contexts are still served by the numpy backend
    assert mx.cpu().backend.name == "numpy"


def test_blocked_plugin_is_not_loaded(install_plugin, monkeypatch):
    name = install_plugin(
        "fake_blocked_pkg", FAKE_BACKEND_PLUGIN.format(name="fakenp", device_type="cpu")
    )
    monkeypatch.setenv("REBIND_BLOCKED_PLUGINS", f"other, {name}")
    registry.reset()
    assert "fakenp" not in registry.get_registry("backends")
    assert "fake_blocked_pkg" not in sys.modules


def test_blocking_a_builtin(fresh_registry, monkeypatch):
    monkeypatch.setenv("REBIND_BLOCKED_PLUGINS", "rebind.backends.cupy_backend")
    registry.reset()
    assert "cupy" not in registry.get_registry("backends")
    assert mx.num_gpus() == 0
    with pytest.raises(BackendUnavailableError, match="no backend serves device type 'gpu'"):
        mx.nd.zeros(1, ctx=mx.gpu(0))


def test_autoload_off_skips_entry_points(install_plugin, monkeypatch):
    install_plugin(
        "fake_autoload_pkg", FAKE_BACKEND_PLUGIN.format(name="fakenp", device_type="cpu")
    )
    monkeypatch.setenv("REBIND_DISABLE_PLUGIN_AUTOLOAD", "1")
    registry.reset()
    assert "fakenp" not in registry.get_registry("backends")
    assert "numpy" in registry.get_registry("backends")


def test_duplicate_name_names_both_plugins(install_plugin):
    name = install_plugin(
        "fake_dup_pkg", FAKE_BACKEND_PLUGIN.format(name="numpy", device_type="cpu")
    )
    registry.reset()
    with pytest.raises(PluginError) as info:
        registry.get_registry("backends")
    message = str(info.value)
    assert "rebind.backends.numpy_backend" in message and name in message
    assert "'numpy'" in message


def test_unknown_name_lists_available_and_suggests(fresh_registry):
    with pytest.raises(UnknownNameError) as info:
        registry.lookup("backends", "numpyy")
    message = str(info.value)
    assert "available: cupy, numpy" in message
    assert "Did you mean 'numpy'?" in message
    assert isinstance(info.value, ValueError)


def test_unknown_family(fresh_registry):
    with pytest.raises(PluginError, match="unknown plugin family 'widgets'"):
        registry.get_registry("widgets")


def test_bad_rebind_backend_fails_clearly_at_first_use(fresh_registry, monkeypatch):
    monkeypatch.setenv("REBIND_BACKEND", "tensorflow")
    registry.reset()
    with pytest.raises(BackendUnavailableError) as info:
        mx.nd.zeros(3)
    assert "REBIND_BACKEND='tensorflow'" in str(info.value)
    assert "numpy" in str(info.value)


def _plugin(name, **functions):
    module = types.ModuleType(name)
    for attr, function in functions.items():
        setattr(module, attr, function)
    return module


def test_misspelled_decorated_hook_is_rejected(fresh_registry):
    @mx.hookimpl
    def rebind_add_backend(registry):  # missing the final "s"
        raise AssertionError("never called")

    plugin = _plugin("typo_plugin", rebind_add_backend=rebind_add_backend)
    with pytest.raises(PluginError) as info:
        registry.register_plugin(plugin)
    assert "'rebind_add_backend'" in str(info.value)
    assert "did you mean 'rebind_add_backends'" in str(info.value)
    assert "typo_plugin" in str(info.value)
    assert "typo_plugin" not in [
        registry.get_plugin_manager().get_name(p)
        for p in registry.get_plugin_manager().get_plugins()
    ]


def test_misspelled_undecorated_hook_is_rejected(fresh_registry):
    def rebind_fit_ends(module, num_epoch, eval_metric):
        raise AssertionError("never called")

    with pytest.raises(PluginError, match="did you mean 'rebind_fit_end'"):
        registry.register_plugin(_plugin("typo2", rebind_fit_ends=rebind_fit_ends))


def test_misspelled_hook_in_entry_point_is_rejected(install_plugin):
    install_plugin(
        "fake_typo_pkg",
        """
        def rebind_add_metric(registry):
            pass
    """,
    )
    registry.reset()
    with pytest.raises(PluginError, match="rebind_add_metric"):
        registry.get_registry("metrics")


def test_wrong_hook_arguments_are_rejected(fresh_registry):
    @mx.hookimpl
    def rebind_add_backends(registry, extra):
        raise AssertionError("never called")

    with pytest.raises(PluginError, match="invalid"):
        registry.register_plugin(_plugin("badargs", rebind_add_backends=rebind_add_backends))


def test_broken_entry_point_is_a_plugin_error(install_plugin):
    install_plugin("fake_broken_pkg", "import module_that_does_not_exist\n")
    registry.reset()
    with pytest.raises(PluginError, match="failed to load"):
        registry.get_plugin_manager()


def test_runtime_registration_survives_rebuild_and_warns_on_replace(fresh_registry):
    first, second = object(), object()
    registry.add_runtime("metrics", "MyMetric", first, owner="tests.first")
    assert registry.lookup("metrics", "mymetric") is first
    with pytest.warns(UserWarning, match="replaces"):
        registry.add_runtime("metrics", "mymetric", second, owner="tests.second")
    assert registry.lookup("metrics", "MYMETRIC") is second
    registry.reset()
    with pytest.warns(UserWarning):
        assert registry.lookup("metrics", "MyMetric") is second


def test_register_plugin_at_runtime_adds_to_family(fresh_registry):
    @mx.hookimpl
    def rebind_add_optimizers(registry):
        registry.add("MyOpt", "optimizer-object")

    name = registry.register_plugin(
        _plugin("runtime_opt", rebind_add_optimizers=rebind_add_optimizers)
    )
    assert registry.lookup("optimizers", "myopt") == "optimizer-object"
    registry.unregister_plugin(name=name)
    assert "myopt" not in registry.get_registry("optimizers")
