"""Records real MXNet 1.9.1's print_summary text and plot_network graphs for tests/viz/.

Run with the MXNet environment (it needs mxnet and graphviz):

    /work/mxenv/bin/python tests/recording/record_viz.py

It writes tests/viz/mxnet_viz.json: for every case of tests/viz/networks.py, the
text print_summary printed, and for plot_network the Digraph's name, format and
source and the node/edge calls MXNet made, attributes as ordered pairs (so the
tests compare graphs independently of the graphviz package's version).
"""

import contextlib
import io
import json
import sys
from pathlib import Path

import graphviz
import mxnet as mx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "viz"))
import networks  # noqa: E402


class RecordingDigraph(graphviz.Digraph):
    """A Digraph that also keeps every node and edge call in order."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def node(self, name, label=None, **attrs):
        self.calls.append(["node", name, label, list(attrs.items())])
        super().node(name, label=label, **attrs)

    def edge(self, tail_name, head_name, **attrs):
        self.calls.append(["edge", tail_name, head_name, list(attrs.items())])
        super().edge(tail_name, head_name, **attrs)


def build(name):
    return networks.NETWORKS[name][0](mx)


def record_summaries():
    out = {}
    for case, name, kwargs in networks.summary_cases():
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            mx.viz.print_summary(build(name), **kwargs)
        out[case] = buffer.getvalue()
    return out


def record_plots():
    graphviz.Digraph = RecordingDigraph  # plot_network imports Digraph at call time
    out = {}
    for case, name, kwargs in networks.plot_cases():
        dot = mx.viz.plot_network(build(name), **kwargs)
        out[case] = {
            "name": dot.name,
            "format": dot.format,
            "calls": dot.calls,
            "source": dot.source,
        }
    return out


def compact_calls(record):
    """The record as indented JSON, but each node/edge call on one line (a short diff)."""
    lines = {}
    for case, plot in record["plot_network"].items():
        marker = f"@calls {case}@"
        lines[marker] = ",\n".join("   " + json.dumps(call) for call in plot["calls"])
        plot["calls"] = marker
    text = json.dumps(record, indent=1, sort_keys=True)
    for marker, calls in lines.items():
        text = text.replace(json.dumps(marker), "[\n" + calls + "\n  ]")
    return text


def main():
    record = {
        "mxnet_version": mx.__version__,
        "graphviz_version": graphviz.__version__,
        "print_summary": record_summaries(),
        "plot_network": record_plots(),
    }
    path = HERE.parent / "viz" / "mxnet_viz.json"
    path.write_text(compact_calls(record) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
