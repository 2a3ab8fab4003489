"""Golden cases: SyncBatchNorm on one device (ndev=1)."""

from tests.ops.cases import arg, case


def _sync_bn(case_id, attrs, data=(4, 3, 5, 2), modes=("train", "infer")):
    channels = (data[1],)
    settings = {"key": case_id}  # MXNet shares buffers by key: one key per shape
    settings.update(attrs)
    args = {"data": arg(data), "gamma": arg(channels, "float32", "positive"), "beta": arg(channels)}
    aux = {"moving_mean": arg(channels), "moving_var": arg(channels, "float32", "positive")}
    return case(
        case_id,
        "_contrib_SyncBatchNorm",
        args,
        settings,
        sym_func="contrib.SyncBatchNorm",
        aux=aux,
        modes=modes,
    )


CASES = [
    _sync_bn("sync_bn_default", {}),
    _sync_bn("sync_bn_free_gamma", {"fix_gamma": False, "eps": 1e-4, "momentum": 0.8}),
    _sync_bn("sync_bn_global_stats", {"fix_gamma": False, "use_global_stats": True}),
    # in inference MXNet leaves the mean and var outputs unwritten: train mode only
    _sync_bn(
        "sync_bn_mean_var", {"fix_gamma": False, "output_mean_var": True}, (6, 4), modes=("train",)
    ),
]
