"""``mx.rnn``: recurrent cells, their unrolling, and sentence bucketing data."""

from ..io import DataBatch, DataDesc, DataIter
from ..model import load_checkpoint, save_checkpoint
from . import checkpoint as rnn
from . import io, rnn_cell
from .base import BaseRNNCell, ModifiedCellError, RNNParams
from .cells import GRUCell, LSTMCell, RNNCell
from .checkpoint import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint
from .combinators import BidirectionalCell, DropoutCell, SequentialRNNCell
from .conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused import FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .modifiers import ModifierCell, ResidualCell, ZoneoutCell

__all__ = [
    "BaseConvRNNCell",
    "BaseRNNCell",
    "BidirectionalCell",
    "ConvGRUCell",
    "ConvLSTMCell",
    "ConvRNNCell",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "BucketSentenceIter",
    "DropoutCell",
    "FusedRNNCell",
    "GRUCell",
    "LSTMCell",
    "ModifiedCellError",
    "ModifierCell",
    "RNNCell",
    "RNNParams",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
    "do_rnn_checkpoint",
    "encode_sentences",
    "io",
    "load_checkpoint",
    "load_rnn_checkpoint",
    "rnn",
    "rnn_cell",
    "rnn_unroll",
    "save_checkpoint",
    "save_rnn_checkpoint",
]
