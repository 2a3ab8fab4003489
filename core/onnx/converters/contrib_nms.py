"""box_nms (``mx.contrib``) in ONNX: MXNet's greedy suppression, written out.

ONNX's NonMaxSuppression is not used: it returns selected indices per class
(not MXNet's score-sorted, -1-padded box rows), has no ``valid_thresh`` on
MXNet's terms, no background class, and its tie order and IoU arithmetic are
the runtime's. Instead the converter writes ``ops/contrib_box.py``'s steps:

1. valid boxes (score > valid_thresh, class != background_id) sorted by
   descending score with TopK (ONNX breaks ties by lower index: stable), the
   first ``topk`` kept;
2. the pairwise IoU of those candidates with MXNet's arithmetic (negative
   extents count 0, NaN never passes), ``> overlap_thresh`` for later boxes
   of the same class (or any class with force_suppress);
3. a Loop over the candidates in order: a box still alive suppresses the
   later boxes it hits (MXNet's sequential greedy pass);
4. the survivors moved to the front in order (a second stable TopK), boxes
   converted to ``out_format``, every other row -1.

The pairwise matrices take (batch, topk, topk) memory, as the NumPy kernel's.
"""

import numpy as np

from ..errors import require_onnx
from ..graph import tensor_type
from . import converter
from .contrib_tensor import rounded
from .tensor_helpers import cast, ints, scalar, shape_of

__all__ = []


def _work(dtype):
    return "float32" if np.dtype(dtype) == np.float16 else np.dtype(dtype).name


class _Nms:
    """Builders over (batch, count, width) boxes of one dtype (float16 rounded per operation)."""

    def __init__(self, node, g):
        self.node, self.g, self.p = node, g, node.params
        self.dtype = np.dtype(node.in_dtypes[0])
        self.work = _work(self.dtype)

    def fresh(self, hint):
        return self.g.fresh(f"{self.node.name}_{hint}")

    def add(self, op_type, inputs, hint, **attributes):
        return self.g.add_node(op_type, list(inputs), [self.fresh(hint)], **attributes)

    def math(self, op_type, *inputs):
        return rounded(self.g, op_type, list(inputs), self.dtype, f"{self.node.name}_{op_type}")

    def const(self, value, dtype=None):
        """A 0-d constant; in the data dtype unless ``dtype`` is given (then as is)."""
        if dtype is None:
            value, dtype = np.asarray(value).astype(self.dtype), self.work
        return scalar(self.g, value, dtype, self.node.name + "_const")

    def column(self, boxes, index):
        """``boxes[..., index]`` (the last axis dropped)."""
        return self.add("Gather", [boxes, self.g.const(np.int64(index), np.int64)], "col", axis=2)

    def positions(self, count):
        """0 .. count - 1 (int64, 1-D)."""
        zero, one = (self.g.const(np.int64(v), np.int64) for v in (0, 1))
        return self.add("Range", [zero, self.g.const(np.int64(count), np.int64), one], "pos")

    def gather_rows(self, boxes, order, width):
        """``boxes[b, order[b, k]]`` for every k: (batch, k, width)."""
        index = self.add("Unsqueeze", [order, ints(self.g, [-1])], "order_col")
        index = self.add("Expand", [index, ints(self.g, [1, 1, width])], "order_rows")
        return self.add("GatherElements", [boxes, index], "rows", axis=1)

    def smallest(self, key, count):
        """Indices of the ``count`` smallest keys per row, ties by lower index (TopK's rule)."""
        k = ints(self.g, [count])
        _, index = self.g.add_node(
            "TopK", [key, k], [self.fresh("sorted"), self.fresh("order")], axis=1, largest=0
        )
        return index


def _candidates(nms, boxes, count):
    """(candidate rows in score order, alive flags): step 1."""
    p = nms.p
    scores = nms.column(boxes, p.score_index)
    # MXNet casts valid_thresh to the data dtype before comparing
    valid = nms.add("Greater", [scores, nms.const(np.float32(p.valid_thresh))], "valid")
    if p.id_index >= 0:
        ids = nms.column(boxes, p.id_index)
        background = nms.add("Equal", [ids, nms.const(p.background_id)], "background")
        valid = nms.add("And", [valid, nms.add("Not", [background], "object")], "valid_object")
    descending = nms.add("Neg", [cast(nms.g, scores, "float64", nms.work)], "neg_score")
    infinity = nms.const(np.inf, "float64")
    key = nms.add("Where", [valid, descending, infinity], "sort_key")
    order = nms.smallest(key, count)
    total = cast(nms.g, valid, "int64", hint=nms.node.name + "_valid_count")
    total = nms.add("ReduceSum", [total, ints(nms.g, [1])], "count", keepdims=1)
    alive = nms.add("Less", [nms.positions(count), total], "alive")  # (batch, count)
    return nms.gather_rows(boxes, order, nms.node.in_shapes[0][-1]), alive


def _corners(nms, coords):
    """(x1, y1, x2, y2, area) each (batch, count, 1), as ops.contrib_box.overlaps."""
    g = nms.g
    parts = [nms.fresh("coord") for _ in range(4)]
    g.add_node("Split", [coords, ints(g, [1, 1, 1, 1])], parts, axis=-1)
    if nms.p.in_format == "center":
        x, y, w, h = parts
        half_w, half_h = nms.math("Div", w, nms.const(2)), nms.math("Div", h, nms.const(2))
        corners = [nms.math("Sub", x, half_w), nms.math("Sub", y, half_h)]
        corners += [nms.math("Add", x, half_w), nms.math("Add", y, half_h)]
    else:
        corners = parts
        w, h = nms.math("Sub", parts[2], parts[0]), nms.math("Sub", parts[3], parts[1])
    zero = nms.const(0)
    negative = nms.add(
        "Or", [nms.add("Less", [w, zero], "w_neg"), nms.add("Less", [h, zero], "h_neg")], "neg"
    )
    area = nms.add("Where", [negative, zero, nms.math("Mul", w, h)], "area")
    return [*corners, area]


def _hits(nms, candidates, count):
    """(batch, count, count): candidate j overlaps earlier candidate i enough: step 2.

    The candidates are already in the work dtype (float32 for float16 data).
    """
    p, g = nms.p, nms.g
    start = ints(g, [p.coord_start])
    coords = nms.add("Slice", [candidates, start, ints(g, [p.coord_start + 4]), ints(g, [2])], "xy")
    rows = _corners(nms, coords)  # each (batch, count, 1): box i
    cols = [nms.add("Transpose", [v], "t", perm=[0, 2, 1]) for v in rows]  # (batch, 1, count)
    zero = nms.const(0)

    def overlap(low, high):
        extent = nms.math(
            "Sub", nms.math("Min", rows[high], cols[high]), nms.math("Max", rows[low], cols[low])
        )
        return nms.add("Where", [nms.add("Greater", [extent, zero], "pos"), extent, zero], "ext")

    inter = nms.math("Mul", overlap(0, 2), overlap(1, 3))
    union = nms.math("Sub", nms.math("Add", rows[4], cols[4]), inter)
    iou = nms.math("Div", inter, union)
    # as ops.contrib_box.greater: the threshold as float32, compared in float32 for float16
    threshold = nms.const(np.asarray(np.float32(p.overlap_thresh)).astype(nms.work), nms.work)
    hits = nms.add("Greater", [iou, threshold], "hits")
    position = nms.positions(count)
    earlier = nms.add("Unsqueeze", [position, ints(g, [1])], "pos_col")
    later = nms.add("Greater", [position, earlier], "later")  # (count, count): j > i
    hits = nms.add("And", [hits, later], "later_hits")
    if not p.force_suppress and p.id_index >= 0:
        hits = nms.add("And", [hits, _same_class(nms, candidates)], "class_hits")
    return hits


def _same_class(nms, candidates):
    """(batch, count, count): the int casts of the two candidates' ids are equal (MXNet's test)."""
    g = nms.g
    ids = cast(g, nms.column(candidates, nms.p.id_index), "int64", hint=nms.node.name + "_ids")
    first = nms.add("Unsqueeze", [ids, ints(g, [2])], "id_i")
    second = nms.add("Unsqueeze", [ids, ints(g, [1])], "id_j")
    return nms.add("Equal", [first, second], "same_class")


def _suppress(nms, hits, alive, count):
    """Step 3: for i in order, a live candidate i kills every later one it hits (a Loop)."""
    onnx = require_onnx()
    helper, prefix = onnx.helper, nms.fresh("loop") + "_"
    bool_type = tensor_type(np.bool_)
    axis = onnx.numpy_helper.from_array(np.array([1], np.int64), prefix + "axis_value")
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], [prefix + "axis"], value=axis),
            helper.make_node("Gather", [hits, prefix + "i"], [prefix + "row"], axis=1),
            helper.make_node("Gather", [prefix + "alive", prefix + "i"], [prefix + "me"], axis=1),
            helper.make_node("Unsqueeze", [prefix + "me", prefix + "axis"], [prefix + "me_col"]),
            helper.make_node("And", [prefix + "row", prefix + "me_col"], [prefix + "struck"]),
            helper.make_node("Not", [prefix + "struck"], [prefix + "spared"]),
            helper.make_node("And", [prefix + "alive", prefix + "spared"], [prefix + "alive_out"]),
            helper.make_node("Identity", [prefix + "cond"], [prefix + "cond_out"]),
        ],
        prefix + "body",
        [
            helper.make_tensor_value_info(prefix + "i", tensor_type(np.int64), []),
            helper.make_tensor_value_info(prefix + "cond", bool_type, []),
            helper.make_tensor_value_info(prefix + "alive", bool_type, None),
        ],
        [
            helper.make_tensor_value_info(prefix + "cond_out", bool_type, []),
            helper.make_tensor_value_info(prefix + "alive_out", bool_type, None),
        ],
    )
    trips = nms.g.const(np.int64(count), np.int64, nms.node.name + "_trips")
    return nms.add("Loop", [trips, "", alive], "kept", body=body)


def _converted(nms, rows, width):
    """Rows with their coordinates in ``out_format`` (ops.contrib_box's conversions)."""
    p, g = nms.p, nms.g
    if p.in_format == p.out_format:
        return rows
    start, tail = p.coord_start, width - p.coord_start - 4
    sizes = [start] * bool(start) + [1, 1, 1, 1] + [tail] * bool(tail)
    pieces = [nms.fresh("field") for _ in sizes]
    g.add_node("Split", [rows, ints(g, sizes)], pieces, axis=2)
    head = pieces[:1] if start else []
    a, b, c, d = pieces[len(head) : len(head) + 4]
    two = nms.const(2)
    if p.out_format == "center":
        box = [nms.math("Div", nms.math("Add", a, c), two)]
        box += [nms.math("Div", nms.math("Add", b, d), two)]
        box += [nms.math("Sub", c, a), nms.math("Sub", d, b)]
    else:
        half_w, half_h = nms.math("Div", c, two), nms.math("Div", d, two)
        box = [nms.math("Sub", a, half_w), nms.math("Sub", b, half_h)]
        box += [nms.math("Add", a, half_w), nms.math("Add", b, half_h)]
    parts = [*head, *box, *pieces[len(head) + 4 :]]
    return nms.add("Concat", parts, "converted", axis=2)


def _compact(nms, candidates, kept, count, num, width):
    """Step 4: survivors first in order, the rest -1, padded to ``num`` rows."""
    g = nms.g
    position = nms.positions(count)
    last = g.const(np.int64(count), np.int64)
    order = nms.smallest(nms.add("Where", [kept, position, last], "slot_key"), count)
    rows = _converted(nms, nms.gather_rows(candidates, order, width), width)
    total = nms.add("ReduceSum", [cast(g, kept, "int64"), ints(g, [1])], "kept_count", keepdims=1)
    filled = nms.add("Unsqueeze", [nms.add("Less", [position, total], "filled"), ints(g, [2])], "f")
    rows = nms.add("Where", [filled, rows, nms.const(-1)], "out_rows")
    if count < num:
        pads = ints(g, [0, 0, 0, 0, num - count, 0])
        rows = nms.add("Pad", [rows, pads, nms.const(-1)], "padded", mode="constant")
    return rows


@converter("_contrib_box_nms")
def convert_box_nms(node, g):
    """MXNet's box_nms: score-sorted survivors of greedy suppression, -1 rows after them."""
    nms, p = _Nms(node, g), node.params
    num, width = node.in_shapes[0][-2:]
    count = num if p.topk < 0 else min(num, p.topk)
    data = node.inputs[0]
    if count < 1 or num == 0:  # MXNet copies the input
        g.add_node("Identity", [data], node.outputs)
        return
    boxes = cast(g, data, nms.work, nms.dtype, hint=node.name + "_wide")
    boxes = nms.add("Reshape", [boxes, ints(g, [-1, num, width])], "boxes")
    candidates, alive = _candidates(nms, boxes, count)
    kept = _suppress(nms, _hits(nms, candidates, count), alive, count)
    out = _compact(nms, candidates, kept, count, num, width)
    out = cast(g, out, nms.dtype, nms.work, hint=node.name + "_out")
    g.add_node("Reshape", [out, shape_of(g, data)], node.outputs)
