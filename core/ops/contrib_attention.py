"""The interleaved multi-head attention matmuls of mx.contrib (MXNet 1.9.1's transformer.cc).

They read attention projections laid out as (seq, batch, heads * parts *
head_dim), ``parts`` being 3 (queries, keys, values) for self attention and
2 (keys, values) for encoder-decoder attention, and work per (batch, head):
``*_qk`` gives (batch * heads, seq_q, seq_k) scores ``q @ k.T / sqrt(head_dim)``,
``*_valatt`` gives (seq_q, batch, heads * head_dim) from ``attention @ v``.
"""

import math

import attrs
import numpy as np

from .base import OpDef, forward_only_shape, mismatch
from .params import param, positive

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class InterleavedParams:
    heads: int = param("int", validator=positive)


def _project(x, heads, parts, part):
    """(seq, batch, heads * parts * d) -> (batch * heads, seq, d): one of the interleaved parts."""
    seq, batch, width = x.shape
    split = x.reshape(seq, batch, heads, parts, width // (heads * parts))[:, :, :, part]
    return split.transpose(1, 2, 0, 3).reshape(batch * heads, seq, -1)


def _unproject(xp, grad, heads, parts, part, shape):
    """The inverse of ``_project`` into zeros of ``shape`` (a gradient of the interleaved input)."""
    seq, batch, width = shape
    full = xp.zeros((seq, batch, heads, parts, width // (heads * parts)), dtype=grad.dtype)
    full[:, :, :, part] = grad.reshape(batch, heads, seq, -1).transpose(2, 0, 1, 3)
    return full.reshape(shape)


def _merge_heads(y, heads):
    """(batch * heads, seq, d) -> (seq, batch, heads * d)."""
    group, seq, depth = y.shape
    return (
        y.reshape(group // heads, heads, seq, depth)
        .transpose(2, 0, 1, 3)
        .reshape(seq, -1, heads * depth)
    )


def _check_3d(names, in_shapes):
    for name, shape in zip(names, in_shapes, strict=True):
        if shape is not None and len(shape) != 3:
            raise mismatch(name, shape, "a 3-D (seq_length, batch, projections) array", "3-D")


def _divisible(name, shape, by):
    if shape[2] % by:
        raise mismatch(name, shape, f"a last axis divisible by {by}", "heads * parts * head_dim")


def _selfatt_qk_shape(p, in_shapes):
    (qkv,) = in_shapes
    _check_3d(("queries_keys_values",), in_shapes)
    _divisible("queries_keys_values", qkv, 3 * p.heads)
    return [(p.heads * qkv[1], qkv[0], qkv[0])]


def _selfatt_valatt_shape(p, in_shapes):
    qkv, att = in_shapes
    _check_3d(("queries_keys_values", "attention"), in_shapes)
    _divisible("queries_keys_values", qkv, 3 * p.heads)
    if tuple(att) != (qkv[1] * p.heads, qkv[0], qkv[0]):
        expected = (qkv[1] * p.heads, qkv[0], qkv[0])
        raise mismatch("attention", att, expected, "(batch * heads, seq, seq)")
    return [(qkv[0], qkv[1], qkv[2] // 3)]


def _encdec_qk_shape(p, in_shapes):
    q, kv = in_shapes
    _check_3d(("queries", "keys_values"), in_shapes)
    _divisible("queries", q, p.heads)
    if kv[2] != 2 * q[2] or kv[1] != q[1]:
        raise mismatch("keys_values", kv, f"(seq, {q[1]}, {2 * q[2]})", "keys and values")
    return [(q[1] * p.heads, q[0], kv[0])]


def _encdec_valatt_shape(p, in_shapes):
    kv, att = in_shapes
    _check_3d(("keys_values", "attention"), in_shapes)
    _divisible("keys_values", kv, 2 * p.heads)
    if att[2] != kv[0] or att[0] != kv[1] * p.heads:
        raise mismatch("attention", att, f"({kv[1] * p.heads}, seq_q, {kv[0]})", "attention")
    return [(att[1], kv[1], kv[2] // 2)]


def _scale(x, heads, parts):
    return x.dtype.type(1 / math.sqrt(np.float32(x.shape[2] // (heads * parts))))


def _qk_forward(ctx, p, inputs, aux):
    if len(inputs) == 1:  # self attention: queries and keys share one interleaved input
        (qkv,) = inputs
        q, k = _project(qkv, p.heads, 3, 0), _project(qkv, p.heads, 3, 1)
        scale = _scale(qkv, p.heads, 3)
    else:
        queries, kv = inputs
        q, k = _project(queries, p.heads, 1, 0), _project(kv, p.heads, 2, 0)
        scale = _scale(queries, p.heads, 1)
    out = ctx.xp.matmul(q * scale, k.swapaxes(1, 2))
    return [out], (q, k, scale, [x.shape for x in inputs])


def _qk_backward(ctx, p, saved, out_grads, need_grad):
    xp, (q, k, scale, shapes) = ctx.xp, saved
    head = out_grads[0]
    grad_q = xp.matmul(head, k) * scale
    grad_k = xp.matmul(head.swapaxes(1, 2), q) * scale
    if len(shapes) == 1:
        grad = _unproject(xp, grad_q, p.heads, 3, 0, shapes[0])
        grad += _unproject(xp, grad_k, p.heads, 3, 1, shapes[0])
        return [grad if need_grad[0] else None]
    return [
        _merge_heads(grad_q, p.heads) if need_grad[0] else None,
        _unproject(xp, grad_k, p.heads, 2, 0, shapes[1]) if need_grad[1] else None,
    ]


def _valatt(parts):
    """Forward and backward of a ``*_valatt`` op whose input interleaves ``parts`` projections."""

    def forward(ctx, p, inputs, aux):
        projections, attention = inputs
        v = _project(projections, p.heads, parts, parts - 1)
        out = _merge_heads(ctx.xp.matmul(attention, v), p.heads)
        return [out], (v, attention, projections.shape)

    def backward(ctx, p, saved, out_grads, need_grad):
        xp, (v, attention, shape) = ctx.xp, saved
        head = _project(out_grads[0], p.heads, 1, 0)
        grad_v = xp.matmul(attention.swapaxes(1, 2), head)
        return [
            _unproject(xp, grad_v, p.heads, parts, parts - 1, shape) if need_grad[0] else None,
            xp.matmul(head, v.swapaxes(1, 2)) if need_grad[1] else None,
        ]

    return forward, backward


def _matmul(name, params, arguments, shape, forward, backward, doc):
    return OpDef(
        name=name,
        params=params,
        arguments=arguments,
        infer_shape=forward_only_shape(shape),
        forward=forward,
        backward=backward,
        doc=doc,
    )


OPS = [
    _matmul(
        "_contrib_interleaved_matmul_selfatt_qk",
        InterleavedParams,
        ("queries_keys_values",),
        _selfatt_qk_shape,
        _qk_forward,
        _qk_backward,
        "Scaled query-key scores of interleaved self-attention projections.",
    ),
    _matmul(
        "_contrib_interleaved_matmul_selfatt_valatt",
        InterleavedParams,
        ("queries_keys_values", "attention"),
        _selfatt_valatt_shape,
        *_valatt(3),
        "Attention-weighted values of interleaved self-attention projections.",
    ),
    _matmul(
        "_contrib_interleaved_matmul_encdec_qk",
        InterleavedParams,
        ("queries", "keys_values"),
        _encdec_qk_shape,
        _qk_forward,
        _qk_backward,
        "Scaled query-key scores of encoder-decoder attention projections.",
    ),
    _matmul(
        "_contrib_interleaved_matmul_encdec_valatt",
        InterleavedParams,
        ("keys_values", "attention"),
        _encdec_valatt_shape,
        *_valatt(2),
        "Attention-weighted values of interleaved encoder-decoder projections.",
    ),
]
