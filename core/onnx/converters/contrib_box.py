"""box_decode and box_encode (``mx.contrib``) in ONNX: elementwise composites.

Both are the arithmetic of ``ops/contrib_box_coding.py`` written with Split,
Mul, Add, Exp, Log and Concat on the last (coordinate) axis, in the same
order (float16 rounded after each operation as NumPy does), so ONNX Runtime
reproduces rebind's and MXNet's boxes.
"""

import numpy as np

from ..graph import tensor_type
from . import converter
from .contrib_tensor import rounded
from .tensor_helpers import cast, ints, scalar, shape_of

__all__ = []


def _work(dtype):
    return "float32" if np.dtype(dtype) == np.float16 else np.dtype(dtype).name


class _Boxes:
    """Arithmetic on (..., k) coordinate tensors in one dtype, rounded as rebind rounds it."""

    def __init__(self, g, dtype, hint):
        self.g, self.dtype, self.work, self.hint = g, np.dtype(dtype), _work(dtype), hint

    def op(self, op_type, *inputs):
        return rounded(self.g, op_type, list(inputs), self.dtype, f"{self.hint}_{op_type}")

    def const(self, value):
        """A constant rounded to the data dtype first (rebind's ``dtype.type(value)``)."""
        value = np.asarray(value).astype(self.dtype)
        return scalar(self.g, value, self.work, self.hint + "_const")

    def split(self, value, pieces):
        """``value`` cut into ``len(pieces)`` slices of the last axis."""
        outs = [self.g.fresh(f"{self.hint}_part") for _ in pieces]
        self.g.add_node("Split", [value, ints(self.g, pieces)], outs, axis=-1)
        return outs

    def concat(self, values, output=None):
        output = output or self.g.fresh(self.hint + "_joined")
        return self.g.add_node("Concat", list(values), [output], axis=-1)

    def to_center(self, corners):
        """[xmin, ymin, xmax, ymax] -> [x, y, width, height] (ops.contrib_box.corner_to_center)."""
        left, top, right, bottom = self.split(corners, [1, 1, 1, 1])
        two = self.const(2)
        x = self.op("Div", self.op("Add", left, right), two)
        y = self.op("Div", self.op("Add", top, bottom), two)
        return self.concat([x, y, self.op("Sub", right, left), self.op("Sub", bottom, top)])


@converter("_contrib_box_decode")
def convert_box_decode(node, g):
    """Corner boxes from (dx, dy, dw, dh) * stds relative to the first anchors."""
    p, (data, anchors) = node.params, node.inputs
    dtype, count = node.in_dtypes[0], node.in_shapes[0][1]
    box = _Boxes(g, dtype, node.name)
    data = cast(g, data, box.work, dtype, hint="data")
    anchors = cast(g, cast(g, anchors, dtype, node.in_dtypes[1]), box.work, dtype, hint="anchors")
    rows = g.add_node("Reshape", [anchors, ints(g, [-1, 4])], [g.fresh("anchor_rows")])
    rows = g.add_node("Slice", [rows, ints(g, [0]), ints(g, [count]), ints(g, [0])], [g.fresh("a")])
    if p.format == "corner":
        rows = box.to_center(rows)
    stds = [np.float32(s) for s in (p.std0, p.std1, p.std2, p.std3)]  # float parameters
    stds = g.const(np.asarray(stds).astype(box.dtype).astype(box.work), box.work, "stds")
    shift, extent = box.split(box.op("Mul", data, stds), [2, 2])
    anchor_center, anchor_size = box.split(rows, [2, 2])
    center = box.op("Add", box.op("Mul", shift, anchor_size), anchor_center)
    if p.clip > 0:
        extent = box.op("Min", extent, box.const(np.float32(p.clip)))
    half = box.op("Mul", box.op("Mul", box.op("Exp", extent), anchor_size), box.const(0.5))
    corners = box.concat([box.op("Sub", center, half), box.op("Add", center, half)])
    g.add_node("Identity", [cast(g, corners, dtype, box.work, hint="boxes")], node.outputs)


@converter("_contrib_box_encode")
def convert_box_encode(node, g):
    """Normalized center offsets and log size ratios of matched refs, masked by samples."""
    samples, matches, anchors, refs, means, stds = node.inputs
    dtype = node.in_dtypes[2]
    box = _Boxes(g, dtype, node.name)
    count = node.in_shapes[2][1]  # the batch is read at run time (Reshape code 0)
    anchors = cast(g, anchors, box.work, dtype, hint="anchors")
    anchors = g.add_node("Reshape", [anchors, ints(g, [0, count, 4])], [g.fresh("anchor_rows")])
    refs = cast(g, cast(g, refs, dtype, node.in_dtypes[3]), box.work, dtype, hint="refs")
    refs = g.add_node("Reshape", [refs, ints(g, [0, -1, 4])], [g.fresh("ref_rows")])
    # rebind: clip(int64(matches), 0, num_refs - 1); Cast truncates toward zero as astype does
    index = cast(g, matches, "int64", hint="match_index")
    index = g.add_node("Reshape", [index, ints(g, [0, count, 1])], [g.fresh("match_rows")])
    last = g.add_node("Gather", [shape_of(g, refs), ints(g, [1])], [g.fresh("num_refs")])
    last = g.add_node("Sub", [last, ints(g, [1])], [g.fresh("last_ref")])
    index = g.add_node("Max", [index, ints(g, [0])], [g.fresh("index_low")])
    index = g.add_node("Min", [index, last], [g.fresh("index")])
    index = g.add_node("Expand", [index, ints(g, [1, 1, 4])], [g.fresh("index_rows")])
    matched = g.add_node("GatherElements", [refs, index], [g.fresh("matched")], axis=1)
    ref_center, ref_size = box.split(box.to_center(matched), [2, 2])
    anchor_center, anchor_size = box.split(box.to_center(anchors), [2, 2])
    offsets = box.op("Div", box.op("Sub", ref_center, anchor_center), anchor_size)
    scales = box.op("Log", box.op("Div", ref_size, anchor_size))
    means = cast(g, cast(g, means, dtype, node.in_dtypes[4]), box.work, dtype, hint="means")
    stds = cast(g, cast(g, stds, dtype, node.in_dtypes[5]), box.work, dtype, hint="stds")
    encoded = box.op("Div", box.op("Sub", box.concat([offsets, scales]), means), stds)
    flags = g.add_node("Reshape", [samples, ints(g, [0, count, 1])], [g.fresh("sample_rows")])
    half = scalar(g, 0.5, node.in_dtypes[0], "positive")
    valid = g.add_node("Greater", [flags, half], [g.fresh("valid")])
    zero = box.const(0)
    targets = g.add_node("Where", [valid, encoded, zero], [g.fresh("targets")])
    g.add_node("Identity", [cast(g, targets, dtype, box.work)], [node.outputs[0]])
    mask = g.add_node("Expand", [valid, ints(g, [1, 1, 4])], [g.fresh("mask")])
    g.add_node("Cast", [mask], [node.outputs[1]], to=tensor_type(dtype))
