"""Golden cases: BatchNormWithReLU (MXNet 1.9.1 runs it through MKL-DNN: 4-D data, axis 1)."""

from tests.ops.cases import arg, case


def _bn_relu(case_id, attrs, data=(4, 3, 5, 2), modes=("train", "infer"), dtype="float32"):
    channels = (data[1],)
    args = {
        "data": arg(data, dtype),
        "gamma": arg(channels, dtype, "positive"),
        "beta": arg(channels, dtype, "uniform", -0.5, 0.5),
    }
    aux = {"moving_mean": arg(channels, dtype), "moving_var": arg(channels, dtype, "positive")}
    return case(
        case_id,
        "_contrib_BatchNormWithReLU",
        args,
        attrs,
        sym_func="contrib.BatchNormWithReLU",
        aux=aux,
        modes=modes,
    )


CASES = [
    _bn_relu("bn_relu_default", {}),
    _bn_relu("bn_relu_free_gamma", {"fix_gamma": False, "eps": 1e-4, "momentum": 0.8}),
    _bn_relu("bn_relu_global_stats", {"fix_gamma": False, "use_global_stats": True}),
    _bn_relu("bn_relu_mean_var", {"fix_gamma": False, "output_mean_var": True}, modes=("train",)),
]
