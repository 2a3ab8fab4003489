"""Rank 1 builds a wider first layer than rank 0: init must name the key and both shapes.

mpiexec -n N python mismatch_worker.py
"""

from common import BATCH, FEATURES, HIDDEN, build_net, report

import rebind as mx
from rebind.errors import ShapeError


def main():
    kv = mx.kv.create("dist_sync")
    hidden = HIDDEN + 1 if kv.rank == 1 else HIDDEN
    module = mx.mod.Module(build_net(hidden), context=mx.cpu())
    module.bind(
        data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))]
    )
    module.init_params()
    try:
        module.init_optimizer(kvstore=kv)
    except ShapeError as exc:
        report(kv.rank, f"ShapeError: {exc}")
    else:
        report(kv.rank, "no error")


if __name__ == "__main__":
    main()
