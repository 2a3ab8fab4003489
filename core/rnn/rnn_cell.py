"""``mx.rnn.rnn_cell``: MXNet keeps every cell in this one module; rebind groups them by family."""

from .base import BaseRNNCell, RNNParams
from .cells import GRUCell, LSTMCell, RNNCell
from .combinators import BidirectionalCell, DropoutCell, SequentialRNNCell
from .conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused import FusedRNNCell
from .modifiers import ModifierCell, ResidualCell, ZoneoutCell

__all__ = [
    "BaseConvRNNCell",
    "BaseRNNCell",
    "BidirectionalCell",
    "ConvGRUCell",
    "ConvLSTMCell",
    "ConvRNNCell",
    "DropoutCell",
    "FusedRNNCell",
    "GRUCell",
    "LSTMCell",
    "ModifierCell",
    "RNNCell",
    "RNNParams",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
]
