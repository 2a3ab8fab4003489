"""The dtype rules of the output and loss layers: data and label share one dtype.

MXNet 1.9.1 checks this when it infers types and raises where the two differ
(a float32 label with float64 data): SoftmaxOutput and SVMOutput with "This
layer requires uniform type", the regression outputs and softmax_cross_entropy
with "Incompatible attr". The rules differ only in what fixes the dtype:

* ``data_led_type`` (SoftmaxOutput, SVMOutput): the data, else the output;
  a label alone fixes nothing (MXNet leaves the data's dtype undecided).
* ``uniform_type`` (LinearRegressionOutput, LogisticRegressionOutput,
  MAERegressionOutput, softmax_cross_entropy): any known input or output,
  data and label alike (MXNet's ElemwiseType).

Imperative calls skip type inference, so the kernels check their arrays with
``check_label_dtype``.
"""

import numpy as np

from ..errors import DTypeMismatchError
from .base import ArgTypeMismatch

__all__ = ["data_led_type", "uniform_type", "check_label_dtype"]

_SLOTS = ("data", "label")


def _fix(dtype):
    return f"MXNet requires one dtype for data and label: cast with .astype('{dtype}')"


def _checked(in_types, out_types, dtype):
    """Every dtype set to ``dtype``, raising ArgTypeMismatch at the first known other one."""
    names = (*_SLOTS, *(["output"] * len(out_types)))
    for name, given in zip(names, (*in_types, *out_types), strict=True):
        if given is not None and np.dtype(given) != np.dtype(dtype):
            raise ArgTypeMismatch(name, np.dtype(given).name, np.dtype(dtype).name, _fix(dtype))
    return [dtype] * len(in_types), [dtype] * len(out_types)


def uniform_type(params, in_types, out_types, aux_types):
    """Data, label and output share the dtype of the first known of them."""
    dtype = next((t for t in (*in_types, *out_types) if t is not None), None)
    if dtype is None:
        return in_types, out_types, aux_types
    in_types, out_types = _checked(in_types, out_types, dtype)
    return in_types, out_types, aux_types


def data_led_type(params, in_types, out_types, aux_types):
    """Label and output take the data's dtype (or the output's, data unknown)."""
    dtype = in_types[0] if in_types[0] is not None else out_types[0]
    if dtype is None:
        return in_types, out_types, aux_types
    in_types, out_types = _checked(in_types, out_types, dtype)
    return in_types, out_types, aux_types


def check_label_dtype(op_name, data, label):
    """Raise DTypeMismatchError unless ``label`` has ``data``'s dtype (imperative calls)."""
    if label.dtype != data.dtype:
        raise DTypeMismatchError(
            f"{op_name}: argument 'label' has dtype {label.dtype}, expected {data.dtype} "
            f"(the dtype of 'data'; {_fix(data.dtype)})"
        )
