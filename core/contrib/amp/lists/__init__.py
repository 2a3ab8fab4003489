"""Operator lists for automatic mixed precision (float16; MXNet's bfloat16 lists are absent)."""

from . import symbol_fp16

__all__ = ["symbol_fp16"]
