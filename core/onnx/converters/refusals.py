"""The operators that have no ONNX form, each with the reason the export error gives.

Training-only operators (optimizer updates, losses, gradient helpers), random
samplers, sparse-storage and in-place internals, and the few computations ONNX
has no operator for (decompositions, solves, histograms, Correlation).
"""

from . import refuse

__all__ = []

_OPTIMIZER_UPDATES = (
    "sgd_update",
    "sgd_mom_update",
    "mp_sgd_update",
    "mp_sgd_mom_update",
    "nag_mom_update",
    "mp_nag_mom_update",
    "adam_update",
    "_adamw_update",
    "_mp_adamw_update",
    "rmsprop_update",
    "rmspropalex_update",
    "ftrl_update",
    "_sparse_adagrad_update",
    "_contrib_group_adagrad_update",
    "ftml_update",
    "signsgd_update",
    "signum_update",
    "lamb_update_phase1",
    "lamb_update_phase2",
    "mp_lamb_update_phase1",
    "mp_lamb_update_phase2",
    "multi_sgd_update",
    "multi_sgd_mom_update",
    "multi_mp_sgd_update",
    "multi_mp_sgd_mom_update",
    "preloaded_multi_sgd_update",
    "preloaded_multi_sgd_mom_update",
    "preloaded_multi_mp_sgd_update",
    "preloaded_multi_mp_sgd_mom_update",
    "_multi_adamw_update",
    "_multi_mp_adamw_update",
    "_multi_lamb_update",
    "_multi_mp_lamb_update",
    "multi_lars",
    "multi_sum_sq",
    "all_finite",
    "multi_all_finite",
    "reset_arrays",
)

_SAMPLERS = (
    "_random_uniform",
    "_random_normal",
    "_random_gamma",
    "_random_exponential",
    "_random_poisson",
    "_random_negative_binomial",
    "_random_generalized_negative_binomial",
    "_random_randint",
    "_random_uniform_like",
    "_random_normal_like",
    "_random_gamma_like",
    "_random_exponential_like",
    "_random_poisson_like",
    "_random_negative_binomial_like",
    "_random_generalized_negative_binomial_like",
    "_sample_uniform",
    "_sample_normal",
    "_sample_gamma",
    "_sample_exponential",
    "_sample_poisson",
    "_sample_negative_binomial",
    "_sample_generalized_negative_binomial",
    "_sample_multinomial",
    "_sample_unique_zipfian",
    "_shuffle",
)

_NO_LGAMMA = (
    "_random_pdf_gamma",
    "_random_pdf_poisson",
    "_random_pdf_negative_binomial",
    "_random_pdf_generalized_negative_binomial",
    "_random_pdf_dirichlet",
)

_LINALG = {
    "_linalg_potrf": "a Cholesky factorization",
    "_linalg_potri": "an inverse from a Cholesky factor",
    "_linalg_trsm": "a triangular solve",
    "_linalg_gelqf": "an LQ factorization",
    "_linalg_syevd": "a symmetric eigendecomposition",
    "_linalg_inverse": "a matrix inverse",
}

_INTERNAL = {
    "_NoGradient": "the placeholder gradient of an input without one",
    "_broadcast_backward": "the gradient of a broadcast",
    "_split_v2_backward": "the gradient of split",
    "_square_sum": "row-sparse storage's sum of squares for optimizers",
    "cast_storage": "a conversion between sparse and dense storage",
    "_sparse_retain": "it keeps chosen rows of a row_sparse array; ONNX has no sparse tensors",
    "_contrib_SparseEmbedding": (
        "an Embedding whose gradient is row_sparse; export a model with Embedding instead"
    ),
    "_contrib_getnnz": "it counts the stored values of a csr array; ONNX has no sparse tensors",
    "_contrib_quadratic": "a*x^2 + b*x + c; rebind does not export it yet (Mul and Add could)",
    "_scatter_elemwise_div": "row-sparse storage's elemwise_div (export the dense op)",
    "_scatter_plus_scalar": "sparse storage's _plus_scalar on stored values (use the dense op)",
    "_scatter_minus_scalar": "sparse storage's _minus_scalar on stored values (use the dense op)",
    "_scatter_set_nd": "an in-place write used by NDArray indexing assignment",
    "_set_value": "an in-place fill of an NDArray",
    "_slice_assign": "an in-place slice assignment of an NDArray",
    "_slice_assign_scalar": "an in-place slice assignment of an NDArray",
    "fill_element_0index": "a legacy in-place write used by old loss layers",
}

for _name in _OPTIMIZER_UPDATES:
    refuse(_name, "updates parameters during training; inference graphs do not contain it")

for _name in _SAMPLERS:
    refuse(
        _name,
        "a random sampler: ONNX's generators cannot reproduce rebind's random streams, so the "
        "exported graph could not match rebind's draws; feed samples in as an input instead",
    )

for _name in _NO_LGAMMA:
    refuse(_name, "the density needs the log-gamma function, which ONNX has no operator for")

for _name, _what in _LINALG.items():
    refuse(_name, f"{_what}: ONNX has no decomposition, inverse or solve operator")

for _name, _what in _INTERNAL.items():
    refuse(_name, f"{_what}, internal to training and NDArray code; no inference graph holds it")

refuse("CTCLoss", "a training loss (CTC over label sequences); ONNX has no CTC operator")
refuse(
    "_histogram",
    "ONNX has no histogram operator (bin counts of data-dependent bins)",
)
refuse(
    "Correlation",
    "ONNX has no correlation operator (FlowNet's patch comparison over displacements)",
)

# MXNet 1.9.1's own exporter converts none of these either: preprocessing belongs
# before the exported graph (mx.image / the data pipeline), not inside it
for _name in (
    "_image_to_tensor",
    "_image_normalize",
    "_image_flip_left_right",
    "_image_flip_top_bottom",
    "_image_adjust_lighting",
    "_image_crop",
    "_image_resize",
):
    refuse(
        _name,
        "an image preprocessing operator (mx.nd.image), which MXNet's ONNX exporter does not "
        "convert either; preprocess the data before the model and export the model alone",
    )
for _name in (
    "_image_random_flip_left_right",
    "_image_random_flip_top_bottom",
    "_image_random_brightness",
    "_image_random_contrast",
    "_image_random_saturation",
    "_image_random_hue",
    "_image_random_color_jitter",
    "_image_random_lighting",
):
    refuse(
        _name,
        "a random image augmenter for training; an inference graph does not augment, and ONNX's "
        "generators could not reproduce rebind's random streams",
    )
