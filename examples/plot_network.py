"""The README demo's network, summarized as a table and drawn as a picture.

Builds the 64-128-64-10 MLP of examples/mlp_digits.py, prints its layers with
``mx.viz.print_summary`` and draws it with ``mx.viz.plot_network``, edges
labelled with the shapes of a batch of 32 digits. The picture's format follows
the output file's suffix (svg, png, pdf, ...); a ``.gv`` or ``.dot`` file gets
the DOT source, which needs no ``dot`` program. Needs the graphviz package
(extra ``viz``: ``python -m pip install -e ".[viz]"`` from a checkout, also in
``[examples]``); drawing also needs Graphviz's ``dot`` program (``apt-get
install graphviz``, ``brew install graphviz`` or ``conda install graphviz``).
With ``import mxnet as mx`` in place of ``import rebind as mx`` it runs
unchanged (docs/mlp_digits.svg is its picture).

    python examples/plot_network.py [OUTPUT]    (default: mlp_digits.svg here)
"""

import argparse
import shutil
import sys
from pathlib import Path

import rebind as mx

BATCH_SHAPE = {"data": (32, 64)}  # 32 digits of 8x8 pixels, flattened
SOURCE_FORMATS = ("gv", "dot")  # written as DOT text, without Graphviz's programs


def build_mlp():
    """64 pixels -> 128 -> 64 -> 10 classes, as in examples/mlp_digits.py."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default="mlp_digits.svg")
    args = parser.parse_args()
    output = Path(args.output)
    picture_format = output.suffix.lstrip(".") or "svg"

    net = build_mlp()
    mx.viz.print_summary(net, shape=BATCH_SHAPE)
    digraph = mx.viz.plot_network(
        net,
        title="mlp_digits",
        save_format=picture_format,
        shape=BATCH_SHAPE,
        node_attrs={"fixedsize": "false"},  # boxes grow to fit "FullyConnected"
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    if picture_format in SOURCE_FORMATS:
        output.write_text(digraph.source)
    else:
        check_dot(output)
        # pipe() rather than render(): it writes exactly the named file and no .gv beside it
        output.write_bytes(digraph.pipe(format=picture_format))
    print(f"wrote {output}")


def check_dot(output):
    """Exit with what to install when Graphviz's ``dot`` program is not on PATH."""
    if shutil.which("dot") is None:
        sys.exit(
            f"plot_network.py: drawing {output} needs Graphviz's `dot` program, which is not "
            "on PATH; install Graphviz (apt-get install graphviz, brew install graphviz or "
            f"conda install graphviz), or write the DOT source: {output.with_suffix('.gv')}"
        )


if __name__ == "__main__":
    main()
