"""Golden cases of CTCLoss at its edges: empty labels, short data, all-blank activations.

Only edges where MXNet 1.9.1 (warp-ctc's CPU code) gives a defined answer are
recorded: an empty label next to a non-empty one in the batch, label lengths
0, an empty label on one frame, a label too long for its data (loss only: the
gradient of that sequence is left unset there), activations that put nearly
all the mass on the blank. The undefined edges (every label of the batch
empty, data length 0, label values outside the alphabet, lengths past their
axis) are pinned by definition in tests/ops/test_ctc.py.
"""

from tests.ops.cases import arg, case


def _ints(rows, dtype="float32"):
    """A label or length input given exactly (never differentiated)."""
    shape = (len(rows), len(rows[0])) if isinstance(rows[0], list) else (len(rows),)
    return arg(shape, dtype, kind="values", values=rows, grad=False)


def _blank_heavy(steps, batch, alphabet, blank, height):
    """Activations 0 but ``height`` on the blank channel, at every frame and sequence."""
    frame = [height if k == blank else 0.0 for k in range(alphabet)]
    values = [[list(frame) for _ in range(batch)] for _ in range(steps)]
    return arg((steps, batch, alphabet), kind="values", values=values)


def _data(shape):
    return arg(shape, kind="normal")


CASES = [
    case(
        "edges_ctc_empty_label_first",
        "CTCLoss",
        {"data": _data((4, 3, 5)), "label": _ints([[0, 0], [1, 2], [0, 0]])},
    ),
    case(
        "edges_ctc_empty_label_last",
        "CTCLoss",
        {"data": _data((4, 3, 5)), "label": _ints([[-1, -1], [1, 2], [-1, -1]])},
        {"blank_label": "last"},
    ),
    case(
        "edges_ctc_zero_label_lengths",
        "CTCLoss",
        {
            "data": _data((4, 3, 5)),
            "label": _ints([[1, 2], [1, 2], [3, 3]]),
            "label_lengths": _ints([0, 2, 0]),
        },
        {"use_label_lengths": True},
    ),
    case(
        "edges_ctc_empty_label_one_frame",
        "CTCLoss",
        {
            "data": _data((4, 3, 5)),
            "label": _ints([[-1, -1], [3, -1], [-1, -1]]),
            "data_lengths": _ints([1, 4, 2]),
        },
        {"use_data_lengths": True, "blank_label": "last"},
    ),
    case(
        "edges_ctc_label_longer_than_data",
        "CTCLoss",
        {
            "data": _data((3, 3, 4)),
            "label": _ints([[1, 1, 2], [1, 2, 0], [3, 0, 0]]),
            "data_lengths": _ints([3, 1, 3]),
        },
        {"use_data_lengths": True},
        backward=False,
    ),
    case(
        "edges_ctc_all_blank_data_first",
        "CTCLoss",
        {"data": _blank_heavy(3, 2, 4, 0, 12.0), "label": _ints([[0, 0], [1, 0]])},
    ),
    case(
        "edges_ctc_all_blank_data_last",
        "CTCLoss",
        {"data": _blank_heavy(3, 2, 4, 3, 8.0), "label": _ints([[2, 1], [-1, -1]])},
        {"blank_label": "last"},
    ),
]
