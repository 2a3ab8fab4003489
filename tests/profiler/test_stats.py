"""profiler.dumps(): MXNet's aggregate table and its JSON form."""

import json

import pytest

import rebind as mx
from rebind import profiler

from .conftest import mlp_executor, run_passes


@pytest.fixture
def profiled_mlp(ctx, tmp_path, monkeypatch, mxnet_facts):
    """The recording script's passes, with aggregate statistics, on plans without rewrites."""
    monkeypatch.setenv("REBIND_GRAPH_OPT", "0")
    executor = mlp_executor(ctx)
    profiler.set_config(
        profile_all=True,
        filename=str(tmp_path / "p.json"),
        aggregate_stats=True,
        continuous_dump=False,
    )
    profiler.set_state("run")
    run_passes(executor, mxnet_facts["passes"])
    profiler.set_state("stop")
    return executor


def _rows(table, section):
    lines = table.splitlines()
    start = lines.index(section) + 4
    end = lines.index("", start)
    return [line.split() for line in lines[start:end]]


def test_table_counts_and_layout_match_mxnet(profiled_mlp, mxnet_facts):
    table = profiler.dumps()
    lines = table.splitlines()
    assert lines[:3] == mxnet_facts["table_head"]
    head = mxnet_facts["section_head"]
    at = lines.index("operator")
    assert lines[at : at + 4] == head
    rows = _rows(table, "operator")
    assert {r[0]: int(r[1]) for r in rows} == mxnet_facts["operator_counts"]
    for name, count, total, low, high, avg in rows:
        assert float(low) <= float(avg) <= float(high) <= float(total)
        assert float(avg) == pytest.approx(float(total) / int(count), abs=1e-4)
        # columns end where MXNet's headers end
        line = next(x for x in lines if x.startswith(name + " "))
        assert len(line) == len(head[2]) or len(name) > 25


def test_json_holds_the_same_statistics(profiled_mlp, mxnet_facts):
    document = json.loads(profiler.dumps(format="json"))
    assert list(document) == mxnet_facts["json_keys"]
    assert document["Unit"] == mxnet_facts["unit"]
    operators = document["Time"]["operator"]
    assert {k: v["Count"] for k, v in operators.items()} == mxnet_facts["operator_counts"]
    table = {r[0]: r for r in _rows(profiler.dumps(), "operator")}
    for name, stat in operators.items():
        # the JSON keeps 4 significant digits (as MXNet's), the table 4 decimals: a GPU's
        # slower first calls take over 1 ms, where the 4th digit is 1e-3
        assert stat["Total"] == pytest.approx(float(table[name][2]), rel=5e-4, abs=1e-4)


@pytest.mark.parametrize(
    "sort_by, key",
    [("total", "Total"), ("avg", "Avg"), ("min", "Min"), ("max", "Max"), ("count", "Count")],
)
@pytest.mark.parametrize("ascending", [False, True])
def test_sort_orders_rows(profiled_mlp, sort_by, key, ascending):
    document = json.loads(profiler.dumps(format="json", sort_by=sort_by, ascending=ascending))
    values = [stat[key] for stat in document["Time"]["operator"].values()]
    assert values == sorted(values, reverse=not ascending)
    table_names = [
        r[0] for r in _rows(profiler.dumps(sort_by=sort_by, ascending=ascending), "operator")
    ]
    assert table_names == list(document["Time"]["operator"])


def test_ties_come_out_by_name_from_last_to_first(profiled_mlp):
    document = json.loads(profiler.dumps(format="json", sort_by="count"))
    names = list(document["Time"]["operator"])
    # counts 6, 6, then four 3s: MXNet's heap pops equal values by name, descending
    assert names[:2] == ["_backward_FullyConnected", "FullyConnected"]
    assert names[2:] == sorted(names[2:], reverse=True)


def test_reset_clears_after_printing(profiled_mlp):
    first = profiler.dumps(reset=True)
    assert "FullyConnected" in first
    assert "FullyConnected" not in profiler.dumps()
    assert json.loads(profiler.dumps(format="json"))["Time"] == {}


def test_counter_row_matches_mxnet(mxnet_facts):
    profiler.set_config(aggregate_stats=True, continuous_dump=False)
    profiler.set_state("run")
    counter = profiler.Counter(profiler.Domain("PyDom"), "cnt", 5)
    counter += 2
    counter -= 1
    assert (
        json.loads(profiler.dumps(format="json"))["Time"]["PyDom"]["cnt"]
        == (mxnet_facts["counter_row"])
    )


def test_without_aggregate_stats_dumps_is_empty(ctx):
    profiler.set_config(continuous_dump=False)
    profiler.set_state("run")
    mx.nd.relu(mx.nd.ones((2, 2), ctx=ctx))
    assert profiler.dumps() == "" and profiler.dumps(format="json") == ""


@pytest.mark.parametrize(
    "kwargs", [{"format": "xml"}, {"sort_by": "name"}, {"ascending": "yes"}, {"reset": None}]
)
def test_invalid_dumps_arguments_assert_as_in_mxnet(kwargs):
    with pytest.raises(AssertionError, match="Invalid value provided"):
        profiler.dumps(**kwargs)


class _AddOne(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("profiled_add_one")
class _AddOneProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _AddOne()


def test_custom_operators_have_their_own_section(tmp_path):
    """As MXNet (test_custom_operator_profiling_multiple_custom_ops): the Python code of a
    custom operator and the operators it calls are listed under 'Custom Operator'."""
    profiler.set_config(profile_all=True, filename=str(tmp_path / "p.json"), aggregate_stats=True)
    profiler.set_state("run")
    profiler.dumps(reset=True)
    net = mx.sym.Custom(mx.sym.Variable("a"), op_type="profiled_add_one")
    executor = net.bind(mx.cpu(), {"a": mx.nd.zeros((3, 3))}, args_grad={"a": mx.nd.zeros((3, 3))})
    executor.forward(is_train=True)
    executor.backward([mx.nd.ones((3, 3))])
    mx.nd.relu(mx.nd.ones((2,)))  # outside any custom operator
    stats = json.loads(profiler.dumps(format="json"))["Time"]
    profiler.set_state("stop")
    custom = stats["Custom Operator"]
    assert custom["profiled_add_one::pure_python"]["Count"] == 1
    assert custom["_backward_profiled_add_one::pure_python"]["Count"] == 1
    assert custom["profiled_add_one::_plus_scalar"]["Count"] == 1
    assert "relu" in stats["operator"] and "relu" not in custom
    assert "profiled_add_one::relu" not in custom
