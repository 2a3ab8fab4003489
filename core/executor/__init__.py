"""Executors: symbols bound to arrays, compiled into a plan and run on a backend."""

from ..ndarray import NDArray  # MXNet's mx.executor has it too
from .binding import bind, simple_bind
from .executor import Executor

__all__ = ["Executor", "NDArray", "bind", "simple_bind"]
