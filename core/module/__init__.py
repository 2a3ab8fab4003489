"""``mx.mod`` / ``mx.module``: the module family and its lifecycle."""

from . import base as base_module  # MXNet's module names for these files
from . import bucketing as bucketing_module
from . import sequential as sequential_module
from .base import BaseModule
from .bucketing import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .lifecycle import Lifecycle, Stage
from .module import Module
from .mutable import MutableModule
from .python_module import PythonLossModule, PythonModule
from .resume import ResumeCheckpoint, save_resume_point
from .sequential import SequentialModule

__all__ = [
    "BaseModule",
    "BucketingModule",
    "DataParallelExecutorGroup",
    "Lifecycle",
    "Module",
    "MutableModule",
    "PythonLossModule",
    "PythonModule",
    "ResumeCheckpoint",
    "SequentialModule",
    "Stage",
    "base_module",
    "bucketing_module",
    "save_resume_point",
    "sequential_module",
]
