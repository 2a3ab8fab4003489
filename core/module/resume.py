"""Resume points: what it takes to continue training exactly where it stopped (rebind).

A resume point after ``epoch`` completed epochs is the usual checkpoint plus
two files::

    prefix-symbol.json            the network
    prefix-%04d.params            parameters and auxiliary states
    prefix-%04d.states            optimizer states with the optimizer itself
                                  (update counters, learning-rate scheduler)
    prefix-%04d.resume.json       the epoch, the random streams of every backend,
                                  NumPy's global generator and Python's ``random``
                                  (MXNet's iterators shuffle with them), and the
                                  training iterator's example order

The JSON file is written last, so its presence marks a complete point.
``fit(resume_from=prefix)`` loads the newest point: parameters, optimizer
state, epoch, random streams and example order come back, then the training
data is reset as at the end of that epoch, and the run continues as the
uninterrupted one would have. Pass ``ResumeCheckpoint(module, prefix)`` as an
``epoch_end_callback`` to write points; inside ``fit`` it writes them once the
epoch is completely over (after evaluation), so evaluation's use of the random
streams is accounted for.

Limits: the example order is restored for iterators with ``order_state`` /
``restore_order_state`` (``NDArrayIter``, ``BucketSentenceIter``); another
iterator that shuffles continues from its own state. The saved optimizer wins
over the one given to the resumed ``fit``.
"""

import glob
import json
import os
import random
import re

import attrs
import numpy as np

from .. import model
from .. import random as mx_random
from ..errors import FormatError
from ..fileutil import write_atomic
from .batch_fields import reset_iterator

__all__ = ["ResumeCheckpoint", "ResumePoint", "save_resume_point", "load_point", "restore_point"]

FORMAT = "rebind-resume-point"
VERSION = 1
SUFFIX = ".resume.json"


@attrs.frozen
class ResumePoint:
    """A loaded resume point (see the module docstring)."""

    prefix: str
    epoch: int
    arg_params: dict
    aux_params: dict
    record: dict

    @property
    def states_file(self):
        return f"{self.prefix}-{self.epoch:04d}.states"


def save_resume_point(module, prefix, epoch):
    """Write a resume point of ``module`` after ``epoch`` completed epochs.

    ``epoch`` is the number the files carry and the epoch a resumed ``fit``
    starts at (MXNet's checkpoint numbering: after epoch index ``e``, pass
    ``e + 1``). The module needs an optimizer (``init_optimizer``).
    """
    epoch = int(epoch)
    module.save_checkpoint(prefix, epoch)
    module.save_optimizer_states(f"{prefix}-{epoch:04d}.states", dump_optimizer=True)
    optimizer = getattr(module, "_optimizer", None)
    record = {
        "format": FORMAT,
        "version": VERSION,
        "epoch": epoch,
        "num_update": getattr(optimizer, "num_update", None),
        "rng": mx_random.get_state(),
        "host_rng": _host_rng_state(),
        "data_state": _data_state(module),
    }
    text = json.dumps(record, separators=(",", ":")).encode("utf-8")
    write_atomic(f"{prefix}-{epoch:04d}{SUFFIX}", text)


def _data_state(module):
    """The training iterator's example order, where it can tell it (shuffling iterators)."""
    run = getattr(module, "_fit_run", None)
    data = None if run is None else run.train_data
    order_state = getattr(data, "order_state", None)
    return order_state() if callable(order_state) else None


def _host_rng_state():
    """NumPy's global generator and Python's ``random``: MXNet's iterators shuffle with them."""
    name, keys, position, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {
        "numpy": [name, [int(k) for k in keys], int(position), int(has_gauss), float(gauss)],
        "python": [version, list(internal), gauss_next],
    }


def _set_host_rng_state(state):
    name, keys, position, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), position, has_gauss, gauss))
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))


def _latest_epoch(prefix):
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"-(\d{4,})" + re.escape(SUFFIX))
    epochs = []
    for path in glob.glob(f"{glob.escape(prefix)}-*{SUFFIX}"):
        found = pattern.fullmatch(os.path.basename(path))
        if found:
            epochs.append(int(found.group(1)))
    if not epochs:
        raise FileNotFoundError(
            f"resume_from={prefix!r}: no resume point {prefix}-NNNN{SUFFIX}; "
            "write them with epoch_end_callback=ResumeCheckpoint(mod, prefix)"
        )
    return max(epochs)


def load_point(resume_from):
    """The resume point ``resume_from`` names: a prefix (its newest) or ``(prefix, epoch)``."""
    if isinstance(resume_from, (tuple, list)):
        prefix, epoch = resume_from[0], int(resume_from[1])
    else:
        prefix = os.fspath(resume_from)
        epoch = _latest_epoch(prefix)
    path = f"{prefix}-{epoch:04d}{SUFFIX}"
    with open(path, "rb") as handle:
        try:
            record = json.loads(handle.read().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise FormatError(f"{path}: not a resume point ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise FormatError(f"{path}: not a rebind resume point (format {FORMAT!r} expected)")
    if record.get("version") != VERSION or record.get("epoch") != epoch:
        raise FormatError(
            f"{path}: version {record.get('version')} / epoch "
            f"{record.get('epoch')}; this rebind reads version {VERSION}"
        )
    arg_params, aux_params = model.load_params(prefix, epoch)
    return ResumePoint(prefix, epoch, arg_params, aux_params, record)


def restore_point(module, point, train_data):
    """Restore optimizer state, random streams and example order; returns the epoch to start.

    The parameters were given to ``init_params`` before; the training data is
    reset here, drawing its next order as the uninterrupted run did.
    """
    module.load_optimizer_states(point.states_file)
    mx_random.set_state(point.record["rng"])
    if point.record.get("host_rng") is not None:
        _set_host_rng_state(point.record["host_rng"])
    data_state = point.record.get("data_state")
    if data_state is not None and callable(getattr(train_data, "restore_order_state", None)):
        train_data.restore_order_state(data_state)
    elif point.record.get("data_order") is not None:  # a point written before data_state
        train_data.restore_order_state({"rows": point.record["data_order"]})
    reset_iterator(train_data)
    module.logger.info("Resumed from %s at epoch %d", point.prefix, point.epoch)
    return point.epoch


class ResumeCheckpoint:
    """An ``epoch_end_callback`` writing a resume point every ``period`` epochs (rebind).

    After epoch index ``e`` it saves point ``e + 1`` when ``(e + 1) % period ==
    0``. Inside ``fit`` the point is written once the epoch is completely over
    (after evaluation); called elsewhere it writes at once.

    Args:
        module: the module being trained.
        prefix: the path prefix of the files.
        period: epochs between two points.
    """

    def __init__(self, module, prefix, period=1):
        self.module = module
        self.prefix = prefix
        self.period = int(max(1, period))

    def __call__(self, epoch, symbol=None, arg_params=None, aux_params=None):
        if (epoch + 1) % self.period:
            return
        run = getattr(self.module, "_fit_run", None)
        if run is None:
            save_resume_point(self.module, self.prefix, epoch + 1)
        else:
            run.at_epoch_end.append(lambda: save_resume_point(self.module, self.prefix, epoch + 1))
