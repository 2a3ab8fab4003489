"""The test_utils draws recorded from MXNet 1.9.1 and replayed on rebind (no mxnet import here).

``calls(tu, np)`` takes the ``test_utils`` module of either side.
"""


def calls(tu, np):
    """Name -> a call returning plain lists, for the ``test_utils`` module ``tu``."""
    return {
        "rand_shape_2d": lambda: list(tu.rand_shape_2d()),
        "rand_shape_2d_zero": lambda: list(tu.rand_shape_2d(3, 4, allow_zero_size=True)),
        "rand_shape_3d": lambda: list(tu.rand_shape_3d(5, 6, 7)),
        "rand_shape_nd": lambda: [int(s) for s in tu.rand_shape_nd(4, dim=6)],
        "random_arrays": lambda: [a.tolist() for a in tu.random_arrays((2, 3), (), (1,))],
        "random_uniform_arrays": lambda: [
            a.tolist() for a in tu.random_uniform_arrays((2, 2), low=-1.0, high=2.0)
        ],
        "random_sample": lambda: tu.random_sample(list(range(10)), 4),
        "rand_coord_2d": lambda: [int(v) for v in tu.rand_coord_2d(0, 10, 5, 50)],
        "rand_ndarray": lambda: tu.rand_ndarray((3, 2)).asnumpy().tolist(),
        "new_matrix_with_real_eigvals_2d": lambda: tu.new_matrix_with_real_eigvals_2d(3).tolist(),
        "new_orthonormal_matrix_2d": lambda: tu.new_orthonormal_matrix_2d(3).tolist(),
        "new_sym_matrix_with_real_eigvals_nd": lambda: tu.new_sym_matrix_with_real_eigvals_nd(
            (2, 3, 3)
        ).tolist(),
        "assign_each": lambda: tu.assign_each(
            np.array([[1.0, 2.0], [3.0, 4.0]]), lambda x: x * x + 1
        ).tolist(),
        "assign_each2": lambda: tu.assign_each2(
            np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]), lambda a, b: a * b
        ).tolist(),
        "create_2d_tensor": lambda: tu.create_2d_tensor(3, 2).asnumpy().tolist(),
        "get_identity_mat_batch": lambda: tu.get_identity_mat_batch(2).asnumpy().tolist(),
        "buckets": lambda: tu.gen_buckets_probs_with_ppf(lambda p: 2 * p - 1, 4)[0],
    }
