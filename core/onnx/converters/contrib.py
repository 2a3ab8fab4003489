"""The detection and resampling operators of ``mx.contrib`` in ONNX.

AdaptiveAvgPooling2D and BilinearResize2D are separable resamplings whose
weights depend only on the spatial sizes, which export fixes: each becomes two
MatMuls with constant matrices (``rows @ x @ cols.T``), exactly rebind's
computation on any opset. ROIAlign is ONNX's RoiAlign (with ``aligned``,
opset 16's half-pixel mode) fed the batch column as indices. box_nms,
box_decode and box_encode export in contrib_nms.py and contrib_box.py; the
other detection operators are refused with the reason (MultiBox*, Proposal and
the rest have no ONNX counterpart).
"""

import attrs
import numpy as np

from ...ops.contrib_resize import _bilinear_matrix, _pool_matrix, _pool_size, _resized
from . import converter, refuse
from .elementwise_unary import UNARY
from .nn import narrow, wide, work_dtype
from .nn_norm import convert_batch_norm
from .tensor_helpers import fail, ints, scalar

__all__ = []


def _separable(node, g, rows, cols):
    """``rows @ data @ cols.T`` over the two spatial axes, with constant matrices."""
    dtype = node.in_dtypes[0]
    data = wide(g, node.inputs[0], dtype)
    work = work_dtype(dtype)
    rows = g.const(rows, work, node.name + "_rows")
    cols = g.const(np.ascontiguousarray(cols.T), work, node.name + "_cols")
    mixed = g.add_node("MatMul", [rows, data], [g.fresh(node.name + "_mixed_rows")])
    out = g.add_node("MatMul", [mixed, cols], [g.fresh(node.name + "_mixed")])
    narrow(g, out, dtype, node.outputs[0])


@converter("_contrib_AdaptiveAvgPooling2D")
def convert_adaptive_avg_pooling(node, g):
    """Adaptive average pooling: each output row/column averages its window of the input."""
    height, width = node.in_shapes[0][2:]
    out_h, out_w = _pool_size(node.params)
    _separable(node, g, _pool_matrix(height, out_h), _pool_matrix(width, out_w))


@converter("_contrib_BilinearResize2D")
def convert_bilinear_resize(node, g):
    """Bilinear resizing with MXNet's source positions (align_corners or half-pixel)."""
    p, shape = node.params, node.in_shapes[0]
    like = node.in_shapes[1] if p.mode == "like" else None
    out_h, out_w = _resized(p, shape, like)
    rows = _bilinear_matrix(shape[2], out_h, p.align_corners)
    cols = _bilinear_matrix(shape[3], out_w, p.align_corners)
    _separable(node, g, rows, cols)


@converter("_contrib_ROIAlign")
def convert_roi_align(node, g):
    """RoiAlign in average mode: MXNet's sample grid, bilinear weights and minimum ROI size."""
    p, dtype = node.params, node.in_dtypes[0]
    if p.position_sensitive:
        raise fail(
            node, g, "ROIAlign with position_sensitive=True (ONNX RoiAlign has no R-FCN mode)"
        )
    if p.aligned and g.opset < 16:
        raise fail(node, g, "ROIAlign with aligned=True (RoiAlign's half_pixel mode: opset 16)")
    data = wide(g, node.inputs[0], dtype)
    rois = wide(g, node.inputs[1], node.in_dtypes[1])
    columns = [ints(g, [i], node.name + "_col") for i in (0, 1, 5)]
    axis = ints(g, [1], node.name + "_axis")
    batch = g.add_node("Slice", [rois, columns[0], columns[1], axis], [g.fresh("batch")])
    boxes = g.add_node("Slice", [rois, columns[1], columns[2], axis], [g.fresh("boxes")])
    flat = g.add_node("Flatten", [batch], [g.fresh("batch_flat")], axis=0)
    batch = g.add_node("Cast", [flat], [g.fresh("batch_index")], to=7)  # int64, truncating
    squeezed = g.add_node("Reshape", [batch, ints(g, [-1])], [g.fresh("batch_indices")])
    extra = {}
    if g.opset >= 16:
        extra["coordinate_transformation_mode"] = "half_pixel" if p.aligned else "output_half_pixel"
    pooled = g.add_node(
        "RoiAlign",
        [data, boxes, squeezed],
        [g.fresh(node.name + "_pooled")],
        mode="avg",
        output_height=p.pooled_size[0],
        output_width=p.pooled_size[1],
        sampling_ratio=max(p.sample_ratio, 0),
        spatial_scale=float(np.float32(p.spatial_scale)),
        **extra,
    )
    narrow(g, pooled, dtype, node.outputs[0])


# -- the elementwise helpers --------------------------------------------------------------
@converter("_contrib_gradientmultiplier")
def convert_gradient_multiplier(node, g):
    """The identity at inference (only its gradient is scaled)."""
    g.add_node("Identity", [node.inputs[0]], [node.outputs[0]])


@converter("_contrib_round_ste", "_contrib_sign_ste")
def convert_straight_through(node, g):
    """round / sign (their straight-through gradient does not export)."""
    build = UNARY["round" if node.op.name == "_contrib_round_ste" else "sign"]
    build(g, node.inputs[0], node.outputs[0], node.out_dtypes[0])


@converter("_contrib_div_sqrt_dim")
def convert_div_sqrt_dim(node, g):
    """A product with 1 / sqrt(last dimension), fixed at export."""
    dtype = node.out_dtypes[0]
    factor = scalar(g, 1 / np.sqrt(node.in_shapes[0][-1]), dtype, node.name + "_factor")
    g.add_node("Mul", [node.inputs[0], factor], [node.outputs[0]])


@converter("_contrib_SyncBatchNorm")
def convert_sync_batch_norm(node, g):
    """Inference never synchronizes: BatchNorm over axis 1 with the moving statistics."""
    convert_batch_norm(node, g)


@converter("_contrib_BatchNormWithReLU")
def convert_batch_norm_relu(node, g):
    """Inference BatchNorm (as BatchNorm's converter) into a fresh value, then Relu."""
    normalized = g.fresh(node.name + "_bn")
    convert_batch_norm(attrs.evolve(node, outputs=(normalized, *node.outputs[1:])), g)
    g.add_node("Relu", [normalized], [node.outputs[0]])


_NOT_YET = "rebind does not export it yet (ONNX could express it as a composite graph)"

_REASONS = {
    "_contrib_box_iou": "pairwise box overlaps; no ONNX operator (it would be a composite graph)",
    "_contrib_bipartite_matching": "a greedy matching loop for training targets; no ONNX operator",
    "_contrib_MultiBoxPrior": "SSD anchor generation has no ONNX operator",
    "_contrib_MultiBoxTarget": "SSD training targets; inference graphs do not contain it",
    "_contrib_MultiBoxDetection": (
        "SSD decoding plus MXNet's in-place NMS layout; ONNX has no equivalent operator"
    ),
    "_contrib_Proposal": "Faster R-CNN's proposal layer (anchors, NMS, cyclic rows); no ONNX op",
    "_contrib_PSROIPooling": "R-FCN's position-sensitive pooling; ONNX has no such operator",
    "_contrib_MultiProposal": "Faster R-CNN's batched proposal layer; no ONNX operator",
    "_contrib_index_copy": f"row replacement (ONNX ScatterND); {_NOT_YET}",
    "_contrib_DeformableConvolution": (
        f"a convolution sampling at learned offsets (ONNX DeformConv, opset 19); {_NOT_YET}"
    ),
    "_contrib_ModulatedDeformableConvolution": (
        f"a masked deformable convolution (ONNX DeformConv with mask, opset 19); {_NOT_YET}"
    ),
    "_contrib_DeformablePSROIPooling": "deformable R-FCN pooling; ONNX has no such operator",
    "_contrib_RROIAlign": "ROIAlign over rotated boxes; ONNX RoiAlign takes axis-aligned ones",
    "_contrib_count_sketch": f"hashed signed sums into buckets (a MatMul); {_NOT_YET}",
    "_contrib_fft": f"a complex FFT in interleaved layout (ONNX DFT, opset 17); {_NOT_YET}",
    "_contrib_ifft": f"an inverse FFT of interleaved input (ONNX DFT, opset 17); {_NOT_YET}",
    "_contrib_hawkesll": "a sequential point-process recursion over time; no ONNX operator",
    "_contrib_edge_id": "it reads csr graphs; ONNX has no sparse tensor inputs",
    "_contrib_dgl_adjacency": "it maps csr graphs to csr graphs; ONNX has no sparse tensors",
    "_contrib_dgl_subgraph": "it maps csr graphs to csr subgraphs; ONNX has no sparse tensors",
    "_contrib_dgl_graph_compact": "it maps csr graphs to csr graphs; ONNX has no sparse tensors",
    "_contrib_dgl_csr_neighbor_uniform_sample": (
        "a random walk over a csr graph with csr output; ONNX has no sparse tensors"
    ),
    "_contrib_dgl_csr_neighbor_non_uniform_sample": (
        "a weighted random walk over a csr graph with csr output; ONNX has no sparse tensors"
    ),
    "_contrib_boolean_mask": (
        "its output length depends on the mask's values, so (as in MXNet) a graph holding it "
        "has no static shapes to export"
    ),
}
for _name, _reason in _REASONS.items():
    refuse(_name, _reason)
