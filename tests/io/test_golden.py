"""Replays the NDArrayIter and DataDesc cases recorded from MXNet 1.9.1 (golden/io)."""

import json
import re

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN

IO = json.loads((GOLDEN / "manifest.json").read_text())["categories"]["io"]
CASES = {case["id"]: case for case in IO["cases"]}


def _source(spec, sources, reverse_dicts):
    """The iterator input described by a manifest kwargs entry."""
    if spec is None:
        return None
    if spec.startswith("array["):
        return sources[0]
    if spec.startswith("list["):
        count = int(re.match(r"list\[(\d+)\]", spec).group(1))
        return sources[:count]
    if spec.startswith("dict:"):
        names = spec[len("dict:") :].split(",")
        pairs = list(zip(names, sources, strict=False))
        # built in reverse order: the iterator must sort the names itself
        return dict(reversed(pairs) if reverse_dicts else pairs)
    raise AssertionError(f"unknown source spec {spec!r}")


def _make_iter(case, npz, wrap):
    kwargs = dict(case["kwargs"])
    data_sources = [wrap(npz["source.data"]), wrap(npz["source.data2"])]
    kwargs["data"] = _source(kwargs["data"], data_sources, reverse_dicts=True)
    kwargs["label"] = _source(kwargs["label"], [wrap(npz["source.label"])], reverse_dicts=True)
    return mx.io.NDArrayIter(shuffle=case["shuffle"], **kwargs)


def _check_descs(found, expected):
    assert [d.name for d in found] == [e["name"] for e in expected]
    assert [tuple(d.shape) for d in found] == [tuple(e["shape"]) for e in expected]
    assert [np.dtype(d.dtype).name for d in found] == [e["dtype"] for e in expected]
    assert [d.layout for d in found] == [e["layout"] for e in expected]


def _replay(case, npz, it, ctx):
    _check_descs(it.provide_data, case["iter_provide_data"])
    _check_descs(it.provide_label, case["iter_provide_label"])
    for epoch, expected_batches in enumerate(case["epochs"]):
        batches = list(it)
        assert len(batches) == len(expected_batches), f"epoch {epoch}"
        for number, (batch, expected) in enumerate(zip(batches, expected_batches, strict=True)):
            where = f"epoch{epoch}.batch{number}"
            assert batch.pad == expected["pad"], where
            assert len(batch.data) == expected["num_data"], where
            assert len(batch.label) == expected["num_label"], where
            assert (batch.index is not None) == expected["has_index"], where
            assert batch.provide_data == expected["provide_data"], where
            assert batch.provide_label == expected["provide_label"], where
            for part in ("data", "label"):
                for i, value in enumerate(getattr(batch, part)):
                    want = npz[f"{where}.{part}.{i}"]
                    if ctx is not None:
                        assert value.context == ctx, where
                    assert value.dtype == want.dtype.type, where
                    np.testing.assert_array_equal(value.asnumpy(), want, err_msg=where)
        it.reset()


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_ndarrayiter_case_on_context(case_id, golden, ctx):
    """NDArray inputs on the backend under test: batches stay there and match MXNet."""
    case = CASES[case_id]
    npz = np.load(golden / case["file"])
    it = _make_iter(case, npz, lambda values: mx.nd.array(values, ctx=ctx))
    _replay(case, npz, it, ctx)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_ndarrayiter_case_from_numpy(case_id, golden):
    """NumPy inputs (placed on the current context) give the same batches."""
    case = CASES[case_id]
    npz = np.load(golden / case["file"])
    _replay(case, npz, _make_iter(case, npz, lambda values: values), None)


def _recorded_dtype(value, repr_text):
    # MXNet prints a NumPy type as <class 'numpy.x'> and a string as it is: the repr
    # tells which of the two the recorder passed
    if value is None:
        return {}
    return {"dtype": np.dtype(value).type if "<class" in repr_text else value}


@pytest.mark.parametrize("index", range(len(IO["datadesc"])))
def test_datadesc(index):
    entry = IO["datadesc"][index]
    name, shape = entry["args"][0], tuple(entry["args"][1])
    kwargs = dict(entry["kwargs"])
    kwargs.update(_recorded_dtype(kwargs.pop("dtype", None), entry["repr"]))
    desc = mx.io.DataDesc(name, shape, **kwargs)
    assert desc.name == entry["name"]
    assert tuple(desc.shape) == tuple(entry["shape"])
    assert np.dtype(desc.dtype).name == entry["dtype"]
    assert desc.layout == entry["layout"]
    assert repr(desc) == entry["repr"]
    assert mx.io.DataDesc.get_batch_axis(desc.layout) == entry["get_batch_axis"]
    assert (desc == (entry["name"], tuple(entry["shape"]))) == entry["is_tuple_equal"]
    assert isinstance(desc, tuple) and tuple(desc) == (name, shape)


def test_datadesc_get_list():
    expected = IO["datadesc_get_list"]
    shapes = [(e["name"], tuple(e["shape"])) for e in expected]
    types = [(e["name"], np.dtype(e["dtype"]).type) for e in reversed(expected)]
    descs = mx.io.DataDesc.get_list(shapes, types)
    _check_descs(descs, expected)
    untyped = mx.io.DataDesc.get_list(shapes, None)
    assert [d.dtype for d in untyped] == [np.float32] * len(shapes)


@pytest.mark.parametrize("layout", sorted(IO["datadesc_get_batch_axis"]))
def test_datadesc_get_batch_axis(layout):
    axis = IO["datadesc_get_batch_axis"][layout]
    assert mx.io.DataDesc.get_batch_axis(None if layout == "None" else layout) == axis
