"""rebind.missing: mx.gluon, mx.autograd, mx.np... say why rebind lacks them and what to use."""

import importlib

import pytest

import rebind as mx
from rebind.errors import MissingModuleError, MissingNamespaceError
from rebind.missing import REASONS


@pytest.mark.parametrize("name", ["gluon", "autograd", "np", "npx", "numpy", "numpy_extension"])
def test_attribute_access_explains_and_hasattr_stays_false(name):
    assert not hasattr(mx, name)
    with pytest.raises(AttributeError, match=f"^mx.{name}: ") as info:
        getattr(mx, name)
    assert isinstance(info.value, MissingNamespaceError)
    assert isinstance(info.value, mx.MXNetError)
    assert "not part of rebind" in str(info.value)


def test_gluon_message_names_the_ways_to_load_a_gluon_model():
    with pytest.raises(MissingNamespaceError) as info:
        mx.gluon.nn.Dense(3)
    text = str(info.value)
    for way in ("HybridBlock.export", "mx.model.load_checkpoint", "Module.load", "onnx"):
        assert way in text, way


def test_the_recommended_names_exist():
    # the explanations send users to these; they must be real
    assert callable(mx.model.load_checkpoint)
    assert callable(mx.mod.Module.load)
    assert callable(mx.onnx.import_model)
    assert callable(mx.sym.Variable("x").simple_bind)


def test_other_missing_names_keep_pythons_message():
    with pytest.raises(AttributeError, match="^module 'rebind' has no attribute 'no_such_name'$"):
        mx.no_such_name  # noqa: B018


@pytest.mark.parametrize("module", ["rebind.gluon", "rebind.gluon.nn", "rebind.npx"])
def test_import_explains(module):
    top = module.split(".")[1]
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module(module)
    assert isinstance(info.value, MissingModuleError)
    assert str(info.value) == f"No module named 'rebind.{top}': {REASONS[top]}"


def test_from_import_keeps_the_explanation():
    with pytest.raises(ImportError, match="not part of rebind"):
        from rebind import autograd  # noqa: F401


def test_real_submodules_still_import():
    assert importlib.import_module("rebind.image") is mx.image
    with pytest.raises(ModuleNotFoundError, match="No module named 'rebind.no_such_module'$"):
        importlib.import_module("rebind.no_such_module")
