"""Record every MXNet 1.9.1 operator's inputs and parameters (run with /work/mxenv/bin/python).

Writes tests/namespaces/mxnet_operator_signatures.json: for each registered
operator name, MXNet's own description of it (MXSymbolGetAtomicSymbolInfo):
the real name behind an alias, its inputs (type "NDArray-or-Symbol", a
trailing "[]" for a variable number), its parameters with their type strings
(which carry "required" or the default), and the parameter giving the number
of inputs of a variadic operator.
"""

import ctypes
import json
import os

import mxnet as mx
from mxnet.base import _LIB, OpHandle, c_str, check_call, py_str

HERE = os.path.dirname(os.path.abspath(__file__))


def describe(name):
    handle = OpHandle()
    check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(handle)))
    real, desc, key_var, ret = (ctypes.c_char_p() for _ in range(4))
    count = ctypes.c_uint()
    names, types, descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
    check_call(
        _LIB.MXSymbolGetAtomicSymbolInfo(
            handle,
            ctypes.byref(real),
            ctypes.byref(desc),
            ctypes.byref(count),
            ctypes.byref(names),
            ctypes.byref(types),
            ctypes.byref(descs),
            ctypes.byref(key_var),
            ctypes.byref(ret),
        )
    )
    inputs, params = [], {}
    for i in range(count.value):
        arg, kind = py_str(names[i]), py_str(types[i])
        if kind.startswith(("NDArray", "Symbol")):
            inputs.append(arg + ("[]" if kind.rstrip().endswith("[]") else ""))
        else:
            params[arg] = kind
    return {
        "real_name": py_str(real.value),
        "inputs": inputs,
        "params": params,
        "key_var_num_args": py_str(key_var.value) if key_var.value else "",
    }


def main():
    size = ctypes.c_uint()
    plist = ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    names = sorted(py_str(plist[i]) for i in range(size.value))
    ops = {name: describe(name) for name in names}
    with open(os.path.join(HERE, "..", "namespaces", "mxnet_operator_signatures.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "operators": ops}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(len(ops), "operators")


if __name__ == "__main__":
    main()
