"""``mx.operator``: operators written in Python, as MXNet 1.9.1 offers them.

* ``CustomOp`` / ``CustomOpProp`` with ``@register`` (``custom_op``): the API
  to use, run by the ``Custom`` operator;
* ``PythonOp``, ``NumpyOp``, ``NDArrayOp`` (``legacy_op``): MXNet's deprecated
  pre-CustomOp API, built on ``Custom``;
* ``get_operator_arguments`` (``op_arguments``): an operator's parameters.
"""

from .custom_op import (
    REQS,
    CustomOp,
    CustomOpProp,
    get_all_registered_operators,
    lookup_prop,
    register,
    registered_names,
)
from .legacy_op import NDArrayOp, NumpyOp, PythonOp
from .ndarray.ndarray import NDArray  # noqa: F401 - MXNet's mx.operator offers it too
from .op_arguments import OperatorArguments, get_operator_arguments

__all__ = [
    "CustomOp",
    "CustomOpProp",
    "register",
    "get_all_registered_operators",
    "get_operator_arguments",
    "OperatorArguments",
    "registered_names",
    "lookup_prop",
    "PythonOp",
    "NumpyOp",
    "NDArrayOp",
    "REQS",
]
