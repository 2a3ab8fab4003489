"""The recurrences of the fused RNN operator: one cell class per mode.

A cell runs one (layer, direction) over the whole sequence. ``rnn.py`` has
already computed the input projection of every time step in one matrix
product, so a step here does only the recurrent product ``h . W_h^T`` and the
gate arithmetic. Arrays are kept in time order whatever the direction;
``reverse`` changes only the order in which the steps run.

``forward(xp, xg, wh, bh, h0, c0, y, reverse, clip)``
    ``xg`` (T, N, G*H): input projections with the biases the cell wants
    folded in (``fold_hidden_bias``); it is overwritten with the activated
    gates, which backward reads. ``h_t`` is written to ``y[t]`` (T, N, H).
    Returns ``(h_last, c_last, saved)`` (``c_last`` is None but for LSTM).
``backward(xp, saved, wh, h0, c0, y, dy, dh, dc, reverse, dxg)``
    Runs the steps backwards from the final-state gradients ``dh``/``dc``
    with ``dy`` (T, N, H) the gradient of every ``h_t``. Writes the gradient
    of the input-side pre-activations into ``dxg`` (T, N, G*H) and returns
    ``(dhg, dh0, dc0)``, where ``dhg`` is the gradient of the hidden-side
    pre-activations ``h . W_h^T + b_h`` (``dxg`` itself except for GRU, whose
    reset gate multiplies the hidden-side candidate term).

Gate orders are MXNet's (and cuDNN's): LSTM [i, f, g, o], GRU [r, z, n].
"""

from rebind.backends import cupy_gemm as gemm
from rebind.backends import cupy_gru_layer_kernels as gru_layer_kernels
from rebind.backends import cupy_gru_warp_kernels as gru_warp_kernels
from rebind.backends import cupy_layer_kernels as layer_kernels
from rebind.backends import cupy_layer_warp_kernels as layer_warp_kernels
from rebind.backends.cupy_kernels import fusable

__all__ = ["CELLS"]


def _steps(length, reverse):
    return range(length - 1, -1, -1) if reverse else range(length)


def _previous(t, length, reverse):
    """The index of the step run before ``t``, or None for the first one."""
    prev = t + 1 if reverse else t - 1
    return prev if 0 <= prev < length else None


def _kernel_steps(length, reverse):
    """The steps in the order forward runs them, as the step kernels number them:
    ``(t, prev)``, ``prev`` the step whose state ``t`` reads (-1: the begin state)."""
    for t in _steps(length, reverse):
        prev = _previous(t, length, reverse)
        yield t, -1 if prev is None else prev


def _kernel_steps_backward(length, reverse):
    """The steps in the order backward runs them: ``(t, prev, later, slots)``.

    ``later`` is the step run just before (-1 for the first: the gradients
    given reach it); ``slots`` ``(from, to)``, the halves of the buffer that
    carries a gradient between the steps, in turns (``from`` -1 for the first).
    """
    order = list(_steps(length, not reverse))
    for k, t in enumerate(order):
        prev = _previous(t, length, reverse)
        later, slots = (order[k - 1], ((k - 1) % 2, k % 2)) if k else (-1, (-1, 0))
        yield t, -1 if prev is None else prev, later, slots


def _sigmoid_(xp, a):
    """Sigmoid in place, through tanh so that large inputs cannot overflow."""
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5
    return a


def _clip_cell(xp, c, clip):
    """``c`` clipped to [lo, hi], and where the clip let the gradient through.

    With ``nan_to_min`` (MXNet's lstm_state_clip_nan) a NaN becomes ``lo``:
    the clip is taken as max-then-min with NaN-dropping comparisons.
    """
    lo, hi, nan_to_min = clip
    inside = (c >= lo) & (c <= hi)
    clipped = xp.clip(c, lo, hi)
    if nan_to_min:
        clipped = xp.where(xp.isnan(c), c.dtype.type(lo), clipped)
    return clipped, inside


def _with_product(wh, h0):
    """Whether a step's kernel works out its recurrent product (a narrow layer's)."""
    rows, hidden = h0.shape
    narrow = layer_kernels.with_product(hidden, rows, wh.shape[0] // max(hidden, 1))
    return narrow and wh.flags.c_contiguous and h0.flags.c_contiguous  # read by raw pointers


def _fused_gpu(clip, *arrays):
    """Whether a step runs as one CuPy kernel: no clip, every array there and fusable."""
    if clip or any(a is None for a in arrays):
        return False
    return fusable(*arrays, contiguous=True)


def _strided_only(clip, *arrays):
    """Whether only the layout keeps these arrays (None: absent) from one kernel a step.

    A bidirectional layer's projections and outputs are views of every
    direction's: each direction then runs on contiguous copies (``_Cell``),
    one copy each way, instead of the array operations.
    """
    present = [a for a in arrays if a is not None]
    if clip or not present:
        return False
    return fusable(*present) and not fusable(*present, contiguous=True)


def _dense(xp, array):
    return None if array is None else xp.ascontiguousarray(array)


class _Cell:
    """``forward``/``backward`` of a cell over contiguous copies where views stand in the way.

    Subclasses define ``_forward`` and ``_backward`` (the module's interface);
    ``_saved_clip`` says from its saved state whether forward clipped.
    """

    @classmethod
    def forward(cls, xp, xg, wh, bh, h0, c0, y, reverse, clip):
        if not _strided_only(clip, xg, y, h0, c0):
            return cls._forward(xp, xg, wh, bh, h0, c0, y, reverse, clip)
        out = xp.empty(y.shape, dtype=y.dtype)
        h0_, c0_ = _dense(xp, h0), _dense(xp, c0)
        h, c, saved = cls._forward(xp, _dense(xp, xg), wh, bh, h0_, c0_, out, reverse, clip)
        y[...] = out
        return h, c, saved

    @classmethod
    def backward(cls, xp, saved, wh, h0, c0, y, dy, dh, dc, reverse, dxg):
        arrays = (saved[0], dxg, dy, y, h0, c0, dh, dc)
        if not _strided_only(cls._saved_clip(saved), *arrays):
            return cls._backward(xp, saved, wh, h0, c0, y, dy, dh, dc, reverse, dxg)
        out = xp.empty(dxg.shape, dtype=dxg.dtype)
        h0_, c0_, y_, dy_, dh_, dc_ = (_dense(xp, a) for a in (h0, c0, y, dy, dh, dc))
        dhg, dh0, dc0 = cls._backward(xp, saved, wh, h0_, c0_, y_, dy_, dh_, dc_, reverse, out)
        dxg[...] = out
        return (dxg if dhg is out else dhg), dh0, dc0

    @staticmethod
    def _saved_clip(saved):
        return False


class LSTMCell(_Cell):
    gates = 4
    fold_hidden_bias = True

    @staticmethod
    def _saved_clip(saved):
        return saved[3] is not None  # where the clip let the gradient through

    @staticmethod
    def _forward(xp, xg, wh, bh, h0, c0, y, reverse, clip):
        length, hidden = xg.shape[0], h0.shape[1]
        whT = wh.T
        cells = xp.empty(y.shape, dtype=y.dtype)
        tanh_cells = xp.empty(y.shape, dtype=y.dtype)
        inside = xp.empty(y.shape, dtype=bool) if clip else None
        h, c = h0, c0
        fused = _fused_gpu(clip, xg, y, c0)
        if fused and length and _with_product(wh, h0):
            # each step one kernel, its recurrent product inside (cupy_layer_kernels)
            step, read = layer_kernels.products_kernel(
                xp,
                layer_kernels.rnn_lstm_forward_with_product,
                layer_warp_kernels.rnn_lstm_forward_over_warps,
                wh,
                forward=True,
            )
            for t, prev in _kernel_steps(length, reverse):
                step(xp, t, prev, read, h0, c0, xg, cells, tanh_cells, y)
            return y[t], cells[t], (xg, cells, tanh_cells, inside)
        for t in _steps(length, reverse):
            g = xg[t]
            gemm.matmul(xp, h, whT, out=g, accumulate=True)  # one GEMM into g on a GPU
            if fused:  # the gate arithmetic below as one kernel
                from rebind.backends import cupy_rnn_kernels as cupy_kernels

                cupy_kernels.lstm_step_forward(xp, g, c, cells[t], tanh_cells[t], y[t])
                h, c = y[t], cells[t]
                continue
            _sigmoid_(xp, g[:, : 2 * hidden])
            xp.tanh(g[:, 2 * hidden : 3 * hidden], out=g[:, 2 * hidden : 3 * hidden])
            _sigmoid_(xp, g[:, 3 * hidden :])
            c = g[:, hidden : 2 * hidden] * c
            c += g[:, :hidden] * g[:, 2 * hidden : 3 * hidden]
            if clip:
                c, inside[t] = _clip_cell(xp, c, clip)
            cells[t] = c
            xp.multiply(g[:, 3 * hidden :], xp.tanh(c, out=tanh_cells[t]), out=y[t])
            h = y[t]
        return h, c, (xg, cells, tanh_cells, inside)

    @staticmethod
    def _backward(xp, saved, wh, h0, c0, y, dy, dh, dc, reverse, dxg):
        gates, cells, tanh_cells, inside = saved
        length, hidden = gates.shape[0], h0.shape[1]
        fused = inside is None and _fused_gpu(None, gates, dxg, dy, c0, dh, dc)
        if fused and length and _with_product(wh, h0):
            carried = xp.empty((2, *c0.shape), dtype=c0.dtype)  # dc between steps, in turns
            step, read = layer_kernels.products_kernel(
                xp,
                layer_kernels.rnn_lstm_backward_with_product,
                layer_warp_kernels.rnn_lstm_backward_over_warps,
                wh,
                forward=False,
            )
            for t, prev, later, slots in _kernel_steps_backward(length, reverse):
                saved = (gates, cells, tanh_cells)
                step(xp, t, prev, later, saved, c0, dy, dh, dc, read, dxg, carried, slots)
            # the begin states' gradients: the last step's product, and its dc
            return dxg, gemm.matmul(xp, dxg[t], wh), carried[slots[1]]
        for t in _steps(length, not reverse):
            prev = _previous(t, length, reverse)
            c_prev = c0 if prev is None else cells[prev]
            g, tanh_c, d = gates[t], tanh_cells[t], dxg[t]
            if fused:  # the gate gradients below as one kernel
                from rebind.backends import cupy_rnn_kernels as cupy_kernels

                dc = cupy_kernels.lstm_step_backward(xp, g, tanh_c, c_prev, dy[t], dh, dc, d)
                dh = gemm.matmul(xp, d, wh)
                continue
            i, f = g[:, :hidden], g[:, hidden : 2 * hidden]
            cand, o = g[:, 2 * hidden : 3 * hidden], g[:, 3 * hidden :]
            dh = dy[t] + dh
            d_cell = dh * o * (1 - tanh_c * tanh_c)
            d_cell += dc
            if inside is not None:
                d_cell *= inside[t]
            xp.multiply(d_cell * cand, i * (1 - i), out=d[:, :hidden])
            xp.multiply(d_cell * c_prev, f * (1 - f), out=d[:, hidden : 2 * hidden])
            xp.multiply(d_cell * i, 1 - cand * cand, out=d[:, 2 * hidden : 3 * hidden])
            xp.multiply(dh * tanh_c, o * (1 - o), out=d[:, 3 * hidden :])
            dc = d_cell * f
            dh = gemm.matmul(xp, d, wh)
        return dxg, dh, dc


class GRUCell(_Cell):
    gates = 3
    # b_hn sits inside the reset gate's product, so the hidden bias stays apart
    fold_hidden_bias = False

    @staticmethod
    def _forward(xp, xg, wh, bh, h0, c0, y, reverse, clip):
        length, hidden = xg.shape[0], h0.shape[1]
        whT = wh.T
        hidden_n = xp.empty(y.shape, dtype=y.dtype)
        h = h0
        fused = _fused_gpu(None, xg, y, h0)
        if fused and length and _with_product(wh, h0) and bh.flags.c_contiguous:
            # each step one kernel, its recurrent product inside (cupy_gru_layer_kernels)
            step, read = layer_kernels.products_kernel(
                xp,
                gru_layer_kernels.rnn_gru_forward_with_product,
                gru_warp_kernels.rnn_gru_forward_over_warps,
                wh,
                forward=True,
            )
            for t, prev in _kernel_steps(length, reverse):
                step(xp, t, prev, read, bh, h0, xg, hidden_n, y)
            return y[t], None, (xg, hidden_n)
        for t in _steps(length, reverse):
            hh = gemm.matmul(xp, h, whT)
            hh += bh
            g = xg[t]
            if fused:  # the gate arithmetic below as one kernel
                from rebind.backends import cupy_rnn_kernels as cupy_kernels

                cupy_kernels.gru_step_forward(xp, g, hh, h, hidden_n[t], y[t])
                h = y[t]
                continue
            rz, n = g[:, : 2 * hidden], g[:, 2 * hidden :]
            rz += hh[:, : 2 * hidden]
            _sigmoid_(xp, rz)
            n += g[:, :hidden] * hh[:, 2 * hidden :]
            xp.tanh(n, out=n)
            hidden_n[t] = hh[:, 2 * hidden :]
            # h' = (1 - z) n + z h
            out = y[t]
            xp.subtract(h, n, out=out)
            out *= g[:, hidden : 2 * hidden]
            out += n
            h = out
        return h, None, (xg, hidden_n)

    @staticmethod
    def _backward(xp, saved, wh, h0, c0, y, dy, dh, dc, reverse, dxg):
        gates, hidden_n = saved
        length, hidden = gates.shape[0], h0.shape[1]
        dhg = xp.empty(dxg.shape, dtype=dxg.dtype)
        fused = _fused_gpu(None, gates, dxg, dy, y, h0, dh)
        if fused and length and _with_product(wh, h0):
            carried = xp.empty((2, *h0.shape), dtype=h0.dtype)  # dh * z between steps, in turns
            step, read = layer_kernels.products_kernel(
                xp,
                gru_layer_kernels.rnn_gru_backward_with_product,
                gru_warp_kernels.rnn_gru_backward_over_warps,
                wh,
                forward=False,
            )
            for t, prev, later, slots in _kernel_steps_backward(length, reverse):
                saved = (gates, hidden_n)
                step(xp, t, prev, later, saved, h0, y, dy, dh, read, dxg, dhg, carried, slots)
            # the begin state's gradient: the last step's direct term and its product
            last = carried[slots[1]]
            return dhg, gemm.matmul(xp, dhg[t], wh, out=last, accumulate=True), None
        for t in _steps(length, not reverse):
            prev = _previous(t, length, reverse)
            h_prev = h0 if prev is None else y[prev]
            g, d, dH = gates[t], dxg[t], dhg[t]
            if fused:  # the gate gradients below as one kernel
                from rebind.backends import cupy_rnn_kernels as cupy_kernels

                carry = cupy_kernels.gru_step_backward(xp, g, hidden_n[t], h_prev, dy[t], dh, d, dH)
                dh = gemm.matmul(xp, dH, wh, out=carry, accumulate=True)
                continue
            r, z, n = g[:, :hidden], g[:, hidden : 2 * hidden], g[:, 2 * hidden :]
            dh = dy[t] + dh
            d_n = dh * (1 - z)
            d_n *= 1 - n * n
            d[:, 2 * hidden :] = d_n
            xp.multiply(d_n, r, out=dH[:, 2 * hidden :])
            xp.multiply(d_n * hidden_n[t], r * (1 - r), out=d[:, :hidden])
            xp.multiply(dh * (h_prev - n), z * (1 - z), out=d[:, hidden : 2 * hidden])
            dH[:, : 2 * hidden] = d[:, : 2 * hidden]
            dh_next = gemm.matmul(xp, dH, wh)
            dh_next += dh * z
            dh = dh_next
        return dhg, dh, None


class _SimpleCell:
    """h' = act(W_x x + b_x + W_h h + b_h) with act tanh or relu."""

    gates = 1
    fold_hidden_bias = True

    @classmethod
    def forward(cls, xp, xg, wh, bh, h0, c0, y, reverse, clip):
        whT = wh.T
        h = h0
        for t in _steps(xg.shape[0], reverse):
            g = xg[t]
            gemm.matmul(xp, h, whT, out=g, accumulate=True)  # one GEMM into g on a GPU
            cls.activate(xp, g, y[t])
            h = y[t]
        return h, None, ()

    @classmethod
    def backward(cls, xp, saved, wh, h0, c0, y, dy, dh, dc, reverse, dxg):
        for t in _steps(y.shape[0], not reverse):
            dh = dy[t] + dh
            xp.multiply(dh, cls.slope(xp, y[t]), out=dxg[t])
            dh = gemm.matmul(xp, dxg[t], wh)
        return dxg, dh, None


class TanhCell(_SimpleCell):
    @staticmethod
    def activate(xp, pre, out):
        xp.tanh(pre, out=out)

    @staticmethod
    def slope(xp, out):
        return 1 - out * out


class ReluCell(_SimpleCell):
    @staticmethod
    def activate(xp, pre, out):
        xp.maximum(pre, 0, out=out)

    @staticmethod
    def slope(xp, out):
        return out > 0


CELLS = {"lstm": LSTMCell, "gru": GRUCell, "rnn_tanh": TanhCell, "rnn_relu": ReluCell}
