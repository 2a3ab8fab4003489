"""CuPy kernels of a convolution with the activation after it (``rebind.executor.fused_conv``).

A Convolution computes its output in a working layout, filters first:
(F, N, *spatial), or (F, *spatial, N) for short output rows (see
``ops/conv_utils``). On a GPU its forward then adds the bias (a CuPy
broadcast addition) and copies the result into (N, F, *spatial), and the
activation after it runs its kernel; backward, the activation's kernel and
a copy back into the working layout. Here each direction is one kernel:

- ``bias_activation_from_work``: one thread per output element, reading its
  working-layout element, adding the filter's bias and applying the
  activation (the same float operations as the bias addition and the
  activation's kernel);
- ``activation_grad_to_work``: one thread per working-layout element, the
  activation's gradient ``grad * slope(out)`` at the output element it came
  from.

Importing this module does not import CuPy.
"""

from .cupy_kernels import _kernel
from .cupy_nn_kernels import _FORWARD, _SLOPE

__all__ = ["activation_grad_to_work", "bias_activation_from_work"]

# the working layout's position of output element (item, f, p), P positions a filter
_WORK_POSITION = "last ? (f * P + p) * N + item : (f * N + item) * P + p"


def bias_activation_from_work(cupy, act_type, work, bias, shape, batch_last):
    """``act(work + bias)`` as a new (N, F, *spatial) array of ``shape``.

    ``work`` (F, ...) in the working layout, C-contiguous; ``bias`` (F,).
    """
    batch, filters = shape[0], shape[1]
    positions = 1
    for size in shape[2:]:
        positions *= size
    body = f"""
    const long long p = i % P;
    const long long f = (i / P) % F;
    const long long item = i / (P * F);
    const T x = work[{_WORK_POSITION}] + bias[f];
    {_FORWARD[act_type]}
"""
    kernel = _kernel(
        cupy,
        f"rebind_bias_{act_type}_from_work",
        "raw T work, raw T bias, int64 N, int64 F, int64 P, bool last",
        "T y",
        body,
    )
    out = cupy.empty(shape, dtype=work.dtype)
    kernel(work, bias, batch, filters, positions, batch_last, out)
    return out


def activation_grad_to_work(cupy, act_type, out, grad, batch_last):
    """``grad * slope(out)`` (both (N, F, *spatial), C-contiguous) in the working layout.

    Returns a new (F, N * positions) array, the columns ordered as the
    working layout orders them.
    """
    batch, filters = out.shape[0], out.shape[1]
    positions = out.size // max(batch * filters, 1)
    body = f"""
    long long item, p, f;
    if (last) {{
        item = i % N;
        p = (i / N) % P;
        f = i / (N * P);
    }} else {{
        p = i % P;
        item = (i / P) % N;
        f = i / (P * N);
    }}
    const long long at = (item * F + f) * P + p;
    const T y = outs[at];
    d = grads[at] * {_SLOPE[act_type]};
"""
    kernel = _kernel(
        cupy,
        f"rebind_{act_type}_grad_to_work",
        "raw T outs, raw T grads, int64 N, int64 F, int64 P, bool last",
        "T d",
        body,
    )
    work = cupy.empty((filters, batch * positions), dtype=out.dtype)
    kernel(out, grad, batch, filters, positions, batch_last, work)
    return work
