"""Checkpoints of networks built from RNN cells: weights unpacked on save, packed on load.

MXNet's convention: the saved ``.params`` hold every cell's weights in
unpacked form (per-gate arrays; a FusedRNNCell's flat vector cut into
``<prefix>l0_i2h_i_weight``, ...), so a checkpoint of a fused network loads
into the unfused one and back. Loading packs them again for ``cells``.
"""

from .. import model
from .base import BaseRNNCell

__all__ = ["save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint", "rnn_unroll"]


def _as_list(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """Unpack the weights of ``cells`` in ``arg_params``, then ``mx.model.save_checkpoint``.

    Args:
        cells: a cell or a list of cells used by ``symbol``.
        prefix, epoch, symbol, arg_params, aux_params: as ``save_checkpoint``;
            writes ``prefix-symbol.json`` and ``prefix-%04d.params``.
    """
    for cell in _as_list(cells):
        arg_params = cell.unpack_weights(arg_params)
    model.save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """``mx.model.load_checkpoint``, then pack the weights of ``cells``.

    Returns:
        (symbol, arg_params, aux_params), with ``arg_params`` in the packed
        form the cells' graph takes.
    """
    symbol, arg_params, aux_params = model.load_checkpoint(prefix, epoch)
    for cell in _as_list(cells):
        arg_params = cell.pack_weights(arg_params)
    return symbol, arg_params, aux_params


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback: ``save_rnn_checkpoint`` every ``period`` epochs.

    After epoch index ``e`` (0-based) it saves under the number ``e + 1`` when
    ``(e + 1) % period == 0``; a ``period`` below 1 counts as 1.
    """
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)

    return _callback


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix="", layout="NTC"):
    """Deprecated in MXNet: ``cell.unroll(length, inputs, begin_state, layout)``.

    ``input_prefix`` is ignored (MXNet passes it on to ``unroll``, which
    rejects it).
    """
    import warnings

    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.", stacklevel=2)
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)
