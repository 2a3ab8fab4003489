"""Executors: symbols bound to arrays, compiled into a plan and run on a backend."""

from .binding import bind, simple_bind
from .executor import Executor

__all__ = ["Executor", "bind", "simple_bind"]
