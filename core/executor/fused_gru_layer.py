"""An unrolled GRU layer's time steps as one plan step on a GPU (``mx.rnn.GRUCell``).

The GRU counterpart of ``fused_layer``'s LSTM layer, found by the same
``fused_layer.find_layers``: after ``fused_lstm`` an unrolled GRU layer is,
per time step, a recurrent ``FullyConnected`` (``h2h = h_prev . W^T + b``)
and a fused GRU cell step reading the same ``h_prev``. Here the chain
becomes one step. Its inputs are every step's input projection, the weight,
the bias and the begin state; its outputs the steps' outputs that something
outside the layer reads.

On a GPU (``fusable``), where ``cupy_layer_kernels.with_product`` says so
(narrow layers), it runs per time step one kernel forward and one backward
(``cupy_gru_layer_kernels``: the recurrent product worked out in the step's
threads, the bias added as the FullyConnected adds it, the cell's
arithmetic; backward the gradients from outside, from the next step's cell
and through its projection added in the kernel). The weight's gradient is
one product over all steps and the bias's one sum. With
``cupy_layer_kernels.PRODUCTS_OVER_WARPS`` each unit's products are split
over a warp (``cupy_gru_warp_kernels``). Values agree with the fused cells'
to float rounding (sums in another order).

Elsewhere (float16, NumPy arrays, wider layers) the step runs the replaced
steps themselves, in their order, with the gradients summed as the executor
sums them.
"""

from rebind.backends import cupy_gemm as gemm
from rebind.backends import cupy_gru_layer_kernels as kernels
from rebind.backends import cupy_gru_warp_kernels as warps
from rebind.backends.cupy_kernels import fusable
from rebind.backends.cupy_layer_kernels import products_kernel, with_product

from ..ops.base import OpDef
from ..ops.nn import bias_gradient
from .fused_layer import LayerParams, plus, projection_backward
from .fused_lstm import _not_for_symbols
from .fused_ops import run_replaced

__all__ = ["GRU_LAYER"]


def _layer_forward(ctx, p, inputs, aux):
    count = p.count
    steps_in, (weight, bias, h_begin) = inputs[:count], inputs[count:]
    xp = ctx.xp
    rows, hidden = h_begin.shape
    if not (fusable(weight, bias, h_begin, *steps_in) and with_product(hidden, rows, 3)):
        return _plain_forward(ctx, p, steps_in, weight, bias, h_begin)
    # every step's output, after the begin state (backward reads them all)
    outputs = xp.empty((count + 1, rows, hidden), dtype=h_begin.dtype)
    outputs[0] = h_begin
    kept = xp.empty((count, rows, 4 * hidden), dtype=h_begin.dtype)
    forward, read = products_kernel(
        xp,
        kernels.gru_layer_forward_with_product,
        warps.gru_layer_forward_over_warps,
        weight,
        forward=True,
    )
    for t in range(count):
        forward(xp, t, steps_in[t], read, bias, outputs, kept)
    values = [outputs[t + 1] for t, _ in p.outputs]
    return values, (("fused", outputs, kept, weight) if ctx.is_train else None)


def _plain_forward(ctx, p, steps_in, weight, bias, h_prev):
    """The replaced steps themselves, in their order."""
    saved, values = [], []
    for t, (projection, cell) in enumerate(p.steps):
        (h2h,), projection_state = run_replaced(ctx, projection, [h_prev, weight, bias])
        (h_prev,), cell_state = run_replaced(ctx, cell, [steps_in[t], h2h, h_prev])
        values.append(h_prev)
        saved.append((projection_state, cell_state))
    outputs = [values[t] for t, _ in p.outputs]
    return outputs, (("steps", saved) if ctx.is_train else None)


def _layer_backward(ctx, p, saved, out_grads, need_grad):
    count = p.count
    reaching = [None] * count  # per step: the gradient of its output from outside
    for (t, _), grad in zip(p.outputs, out_grads, strict=True):
        reaching[t] = grad
    if saved[0] == "steps":
        return _plain_backward(p, saved[1], reaching, need_grad)
    _, outputs, kept, weight = saved
    xp = ctx.xp
    _, rows, hidden = outputs.shape
    zeros = xp.zeros((rows, hidden), dtype=outputs.dtype)
    d_i2h = xp.empty((count, rows, 3 * hidden), dtype=outputs.dtype)
    d_h2h = xp.empty((count, rows, 3 * hidden), dtype=outputs.dtype)
    # each step's direct term for the step before, in turns (zeros before the last step)
    carried = xp.zeros((2, rows, hidden), dtype=outputs.dtype)
    backward, read = products_kernel(
        xp,
        kernels.gru_layer_backward_with_product,
        warps.gru_layer_backward_over_warps,
        weight,
        forward=False,
    )
    for t in range(count - 1, -1, -1):
        dh_out = zeros if reaching[t] is None else reaching[t]
        backward(xp, t, t == count - 1, kept, outputs, dh_out, read, d_i2h, d_h2h, carried)
    grads = [d_i2h[t] if need_grad[t] else None for t in range(count)]
    flat = d_h2h.reshape(count * rows, 3 * hidden)
    inputs = outputs[:count].reshape(count * rows, hidden)
    grads.append(gemm.matmul(xp, flat.T, inputs) if need_grad[count] else None)
    grads.append(bias_gradient(xp, flat) if need_grad[count + 1] else None)
    # the begin state: step 0's direct term and its projection's
    begin = carried[0] + gemm.matmul(xp, d_h2h[0], weight) if need_grad[count + 2] else None
    grads.append(begin)
    return grads


def _plain_backward(p, saved, reaching, need_grad):
    """The replaced steps' backward, last step first, summing as the executor sums."""
    count = p.count
    grads = [None] * (count + 3)
    dh_next = None
    for t in range(count - 1, -1, -1):
        (projection, cell), (projection_state, cell_state) = p.steps[t], saved[t]
        dh = plus(reaching[t], dh_next)
        if dh is None:
            dh_next = None
            continue
        _, cell_train, _, cell_params = cell
        d_in, d_h2h, d_direct = cell[0].backward(
            cell_train, cell_params, cell_state, [dh], [need_grad[t], True, True]
        )
        grads[t] = d_in
        d_projected = projection_backward(
            projection, projection_state, d_h2h, grads, need_grad, count
        )
        dh_next = plus(d_projected, d_direct)
    grads[count + 2] = dh_next
    return [g if needed else None for g, needed in zip(grads, need_grad, strict=True)]


GRU_LAYER = OpDef(
    name="_fused_GRULayer",
    params=LayerParams,
    arguments=lambda p: (*(f"i2h{t}" for t in range(p.count)), "h2h_weight", "h2h_bias", "h_begin"),
    outputs=lambda p: tuple(f"out{t}" for t, _ in p.outputs),
    infer_shape=_not_for_symbols,
    forward=_layer_forward,
    backward=_layer_backward,
    doc="The time steps of an unrolled GRU layer (projection and cell) as one step.",
)
