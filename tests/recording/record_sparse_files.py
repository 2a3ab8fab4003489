# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record sparse NDArray files and conversions from MXNet 1.9.1 (run with /work/mxenv/bin/python).

Usage: ``record_sparse_files.py`` from the repository root. Writes into
``tests/golden/sparse/``:

* ``inputs.npz``: the dense inputs (drawn here from a fixed seed) and the
  explicit parts used to build arrays;
* ``<case>.params``: ``mx.nd.save`` of the case's arrays (dict or list);
* ``<case>.npz``: for each array, ``NAME.stype`` (0 default, 1 row_sparse,
  2 csr), ``NAME.dense`` (``asnumpy``), and ``NAME.data`` / ``NAME.indices`` /
  ``NAME.indptr`` as MXNet reports them;
* ``pickle_<name>.bin``: the ``handle`` bytes MXNet pickles a sparse array as;
* ``cases.json``: each case's array names, in order, and how each was built.
"""

import json
import os
import pickle

import mxnet as mx
import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "sparse")
STYPE_IDS = {"default": 0, "row_sparse": 1, "csr": 2}


def draw_inputs():
    """Dense inputs with empty rows, NaN, -0.0, and several dtypes."""
    rng = np.random.RandomState(20261129)
    mask = rng.rand(6, 5) < 0.4
    csr_dense = (rng.standard_normal((6, 5)) * mask).astype(np.float32)
    csr_dense[2] = 0  # an empty row
    special = np.array([[0, np.nan, 0], [-0.0, 0, 3], [0, 0, 0], [np.inf, 0, -1]], np.float32)
    rows = rng.rand(7) < 0.5
    rsp_dense = (rng.standard_normal((7, 3)) * rows[:, None]).astype(np.float64)
    rsp3 = (rng.randint(-3, 4, size=(5, 2, 3)) * (rng.rand(5) < 0.6)[:, None, None]).astype(
        np.float16
    )
    return {
        "csr_dense": csr_dense,
        "special": special,
        "rsp_dense": rsp_dense,
        "rsp3": rsp3,
        "int_dense": (csr_dense * 10).astype(np.int32),
        "coo_data": np.array([1.5, -2.0, 3.0, 4.0], np.float32),
        "coo_row": np.array([2, 0, 2, 1], np.int64),
        "coo_col": np.array([3, 1, 0, 1], np.int64),
        "rsp_values": np.array([[1, 2], [3, 4]], np.float32),
        "rsp_indices": np.array([1, 4], np.int64),
    }


def build(inputs):
    """Each case: name -> list of (array name, NDArray, how it was built)."""
    nd = mx.nd
    dense = nd.array(inputs["csr_dense"])
    return {
        "csr_dict": [
            ("csr_f32", dense.tostype("csr"), "tostype csr of csr_dense"),
            (
                "csr_f64",
                nd.array(inputs["csr_dense"], dtype="float64").tostype("csr"),
                "tostype csr of csr_dense as float64",
            ),
            (
                "csr_i32",
                nd.array(inputs["int_dense"], dtype="int32").tostype("csr"),
                "tostype csr of int_dense as int32",
            ),
            ("csr_special", nd.array(inputs["special"]).tostype("csr"), "tostype csr of special"),
            ("csr_empty", nd.sparse.zeros("csr", (3, 4)), "sparse.zeros csr (3, 4)"),
            (
                "csr_coo",
                nd.sparse.csr_matrix(
                    (inputs["coo_data"], (inputs["coo_row"], inputs["coo_col"])), shape=(3, 4)
                ),
                "csr_matrix from coo (3, 4)",
            ),
            ("dense", dense, "csr_dense itself"),
        ],
        "rsp_dict": [
            (
                "rsp_f64",
                nd.array(inputs["rsp_dense"], dtype="float64").tostype("row_sparse"),
                "tostype row_sparse of rsp_dense as float64",
            ),
            (
                "rsp3_f16",
                nd.array(inputs["rsp3"], dtype="float16").tostype("row_sparse"),
                "tostype row_sparse of rsp3 as float16",
            ),
            (
                "rsp_special",
                nd.array(inputs["special"]).tostype("row_sparse"),
                "tostype row_sparse of special",
            ),
            (
                "rsp_empty",
                nd.sparse.zeros("row_sparse", (4, 2, 3)),
                "sparse.zeros row_sparse (4, 2, 3)",
            ),
            (
                "rsp_parts",
                nd.sparse.row_sparse_array(
                    (inputs["rsp_values"], inputs["rsp_indices"]), shape=(6, 2)
                ),
                "row_sparse_array from rsp_values, rsp_indices (6, 2)",
            ),
        ],
        "mixed_list": [
            ("0", dense.tostype("row_sparse"), "tostype row_sparse of csr_dense"),
            ("1", dense, "csr_dense itself"),
            ("2", dense.tostype("csr"), "tostype csr of csr_dense"),
        ],
    }


def parts(array):
    """What MXNet reports for one array."""
    out = {"stype": np.array(STYPE_IDS[array.stype]), "dense": array.asnumpy()}
    if array.stype != "default":
        out["data"] = array.data.asnumpy()
        out["indices"] = array.indices.asnumpy()
    if array.stype == "csr":
        out["indptr"] = array.indptr.asnumpy()
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    inputs = draw_inputs()
    np.savez(os.path.join(OUT, "inputs.npz"), **inputs)
    manifest = {}
    for case, entries in build(inputs).items():
        arrays = {name: array for name, array, _ in entries}
        data = [arrays[n] for n, _, _ in entries] if case.endswith("list") else arrays
        mx.nd.save(os.path.join(OUT, case + ".params"), data)
        record = {}
        for name, array, _ in entries:
            record.update({name + "." + k: v for k, v in parts(array).items()})
        np.savez(os.path.join(OUT, case + ".npz"), **record)
        manifest[case] = [{"name": n, "built": how} for n, _, how in entries]
    for name, array, _ in build(inputs)["csr_dict"][:1] + build(inputs)["rsp_dict"][:1]:
        state = pickle.loads(pickle.dumps(array)).__getstate__()
        with open(os.path.join(OUT, "pickle_" + name + ".bin"), "wb") as handle:
            handle.write(bytes(state["handle"]))
    manifest["mxnet_version"] = mx.__version__
    with open(os.path.join(OUT, "cases.json"), "w") as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
