"""Built-in plugin: training progress on ``fit``'s events, a bar on a terminal, else a log line.

When stderr is a terminal, each epoch gets a progress bar (tqdm's when tqdm is
installed, from the ``progress`` extra; otherwise a plain carriage-return bar)
showing batches done, throughput in samples/s and the running training
metric. Otherwise each epoch ends with one line on the logger
``rebind.progress``, for example::

    epoch 3: train accuracy=0.9712, validation accuracy=0.9650, 1.2 s (53,000 samples/s)

No logging configuration is needed: when neither that logger nor its
ancestors have a handler, the plugin gives it one writing to stderr (and
stops propagation, so a later ``basicConfig`` does not print lines twice).
Configure logging before ``fit`` to route the lines elsewhere.

When the module's own logger already shows MXNet's per-epoch lines
(``Epoch[0] Train-accuracy=...``, ``Time cost``, ``Validation-...``: its INFO
records reach a handler, as after ``logging.basicConfig(level=logging.INFO)``),
the plugin stays quiet for that ``fit``: it would report every epoch a second
time, and a bar would be torn by the log lines written under it.

``REBIND_PROGRESS=0`` (or ``false``/``off``/``no``) silences the plugin; it is
read at the start of every ``fit``. ``REBIND_BLOCKED_PLUGINS=rebind.plugins.progress``
removes it altogether. A display error never fails training: the display is
turned off for the rest of that ``fit`` with one warning on the logger.

The number of batches per epoch comes from ``len(train_data)`` when the
iterator has one (or from an ``NDArrayIter``'s sizes), else it is learned
during the first epoch.
"""

import contextlib
import logging
import math
import os
import sys
import time

from rebind.hookspecs import hookimpl
from rebind.io import NDArrayIter

__all__ = ["ProgressReporter", "progress_enabled"]

LOGGER_NAME = "rebind.progress"
ENV_SWITCH = "REBIND_PROGRESS"
OFF_VALUES = frozenset({"0", "false", "off", "no"})
REFRESH_SECONDS = 0.1  # a terminal bar is redrawn at most this often


def progress_enabled():
    """False when ``REBIND_PROGRESS`` is 0, false, off or no."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in OFF_VALUES


class _StderrHandler(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record arrives."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _):
        pass  # always the current sys.stderr


def _default_logger():
    logger = logging.getLogger(LOGGER_NAME)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if not logger.hasHandlers():
        logger.addHandler(_StderrHandler())
        logger.propagate = False
    return logger


def _known_batches(train_data):
    """Batches per epoch when the iterator tells; None when it must be learned."""
    try:
        return int(len(train_data))
    except Exception:  # no __len__, or one that refuses: learn it instead
        pass
    if isinstance(train_data, NDArrayIter) and train_data.last_batch_handle != "roll_over":
        whole = train_data.num_data / train_data.batch_size
        return math.floor(whole) if train_data.last_batch_handle == "discard" else math.ceil(whole)
    return None


def _is_terminal(stream):
    try:
        return bool(stream.isatty())
    except Exception:  # a closed or odd stream is not a terminal
        return False


def _metric_text(metric, prefix="", use_global=True):
    """``'name=value, ...'`` of a metric, global statistics where it keeps them."""
    if metric is None:
        return ""
    pairs = metric.get_global_name_value() if use_global else metric.get_name_value()
    return ", ".join(f"{prefix}{name}={float(value):.4f}" for name, value in pairs)


class _LogView:
    """Non-terminal output: nothing per batch, one log line per epoch."""

    per_batch = False

    def __init__(self, logger):
        self._logger = logger

    def start(self, epoch, total):
        pass

    def update(self, done, text):
        pass

    def finish(self, epoch, summary):
        self._logger.info("epoch %d: %s", epoch, summary)


class _TqdmView:
    """A tqdm bar per epoch; our samples/s and metric go in its postfix, not tqdm's rate."""

    per_batch = True
    RUNNING = (
        "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"
    )
    FINISHED = "{desc}: {n_fmt}/{total_fmt} [{elapsed}{postfix}]"

    def __init__(self, stream, tqdm_class):
        self._stream, self._tqdm, self._bar = stream, tqdm_class, None

    def start(self, epoch, total):
        # a pseudo-terminal may report a 0x0 size, which tqdm turns into empty
        # lines: give it a fixed size there
        zero_width = _columns(self._stream) == 0
        self._bar = self._tqdm(
            total=total,
            file=self._stream,
            desc=f"epoch {epoch}",
            unit="batch",
            leave=True,
            dynamic_ncols=not zero_width,
            ncols=80 if zero_width else None,
            nrows=24 if zero_width else None,
            mininterval=0,
            bar_format=self.RUNNING if total else None,
        )

    def update(self, done, text):
        self._bar.set_postfix_str(text, refresh=False)
        self._bar.update(done - self._bar.n)

    def finish(self, epoch, summary):
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.total = bar.n  # an epoch shorter than announced (or of unknown length) ends full
            bar.bar_format = self.FINISHED
            bar.set_postfix_str(summary, refresh=False)
            bar.close()


class _LineView:
    """A carriage-return bar for terminals without tqdm: ``epoch 2 [=====>    ] 12/40 ...``."""

    per_batch = True
    WIDTH = 30

    def __init__(self, stream):
        self._stream, self._epoch, self._total, self._width = stream, 0, None, 0

    def start(self, epoch, total):
        self._epoch, self._total, self._width = epoch, total, 0

    def _draw(self, line, end=""):
        self._width = max(self._width, len(line))
        self._stream.write("\r" + line.ljust(self._width) + end)
        self._stream.flush()

    def update(self, done, text):
        if self._total:
            filled = min(self.WIDTH, int(self.WIDTH * done / self._total))
            arrow = ">" if filled < self.WIDTH else ""
            bar = "[" + ("=" * filled + arrow).ljust(self.WIDTH) + "]"
            self._draw(f"epoch {self._epoch} {bar} {done}/{self._total} {text}")
        else:
            self._draw(f"epoch {self._epoch} {done} batches {text}")

    def finish(self, epoch, summary):
        self._draw(f"epoch {epoch}: {summary}", end="\n")


def _columns(stream):
    """The terminal width of ``stream``; None when it cannot be asked."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None


def _terminal_view(stream, use_tqdm):
    if use_tqdm is not False:
        try:
            from tqdm import tqdm
        except ImportError:
            if use_tqdm:
                raise
        else:
            return _TqdmView(stream, tqdm)
    return _LineView(stream)


class _Run:
    """The display of one ``fit``: counts batches and samples, times the epoch."""

    def __init__(self, view, total):
        self.view, self.total = view, total
        self.epoch = None
        self.epoch_start = time.perf_counter()
        self.batches = self.samples = 0
        self.last_draw = 0.0

    def batch(self, epoch, batch_size, metric):
        if epoch != self.epoch:
            self.epoch, self.batches, self.samples = epoch, 0, 0
            self.view.start(epoch, self.total)
        self.batches += 1
        self.samples += batch_size
        if not self.view.per_batch:
            return
        now = time.perf_counter()
        if now - self.last_draw >= REFRESH_SECONDS or self.batches == self.total:
            self.last_draw = now
            rate = self.samples / max(now - self.epoch_start, 1e-9)
            status = _metric_text(metric)
            self.view.update(
                self.batches, f"{rate:,.0f} samples/s" + (f", {status}" if status else "")
            )

    def epoch_end(self, epoch, metric, validation_metric, seconds):
        if self.epoch != epoch:  # an epoch without batches still gets its line
            self.epoch, self.batches, self.samples = epoch, 0, 0
            self.view.start(epoch, self.total)
        if self.total is None:
            self.total = self.batches
        parts = [
            _metric_text(metric, "train "),
            _metric_text(validation_metric, "validation ", False),
        ]
        timing = f"{seconds:.1f} s" if seconds >= 1 else f"{seconds:.2g} s"
        if seconds > 0 and self.samples:
            timing += f" ({self.samples / seconds:,.0f} samples/s)"
        self.view.finish(epoch, ", ".join([p for p in parts if p] + [timing]))
        self.epoch, self.epoch_start = None, time.perf_counter()

    def close(self, metric):
        if self.epoch is not None:  # fit ended inside an epoch (an early stop)
            parts = [_metric_text(metric, "train "), f"stopped after {self.batches} batches"]
            self.view.finish(self.epoch, ", ".join(p for p in parts if p))
            self.epoch = None


def _as_logger(logger):
    """The ``logging.Logger`` behind a module's logger; None when it is something else."""
    if logger is logging:  # MXNet's default: the module-level functions, the root logger
        return logging.getLogger()
    if isinstance(logger, logging.LoggerAdapter):
        return _as_logger(logger.logger)
    return logger if isinstance(logger, logging.Logger) else None


def _shows_epoch_lines(module):
    """Whether ``module.logger`` prints fit's INFO lines (a handler at INFO receives them).

    Python's last-resort handler, used when there is none, shows only warnings.
    """
    logger = _as_logger(getattr(module, "logger", None))
    if logger is None or not logger.isEnabledFor(logging.INFO):
        return False
    node = logger
    while node is not None:
        if any(handler.level <= logging.INFO for handler in node.handlers):
            return True
        node = node.parent if node.propagate else None
    return False


class ProgressReporter:
    """Turns ``fit``'s training events into a progress display, one per module being trained.

    Args:
        stream: where a terminal bar goes, and whose ``isatty()`` picks the
            mode; None means ``sys.stderr`` at the start of each ``fit``.
        logger: the logger of the per-epoch lines; None means
            ``rebind.progress``, given a stderr handler if nothing handles it.
        use_tqdm: True requires tqdm, False never uses it, None uses it when
            it is installed.
    """

    def __init__(self, stream=None, logger=None, use_tqdm=None):
        self._stream, self._logger, self._use_tqdm = stream, logger, use_tqdm
        self._runs = {}  # id(module) -> _Run

    def _logger_now(self):
        return self._logger if self._logger is not None else _default_logger()

    def _guarded(self, module, action):
        """Run a display step; on any error, drop this fit's display and warn once."""
        run = self._runs.get(id(module))
        if run is None:
            return
        try:
            action(run)
        except Exception as exc:
            self._runs.pop(id(module), None)
            with contextlib.suppress(Exception):
                self._logger_now().warning("progress display turned off for this fit: %r", exc)

    def fit_begin(self, module, begin_epoch, num_epoch, train_data, eval_metric):
        """Start a display for ``module``, unless ``REBIND_PROGRESS`` silences it or
        the module's logger already shows each epoch."""
        self._runs.pop(id(module), None)
        if not progress_enabled() or _shows_epoch_lines(module):
            return
        try:
            stream = self._stream if self._stream is not None else sys.stderr
            if _is_terminal(stream):
                view = _terminal_view(stream, self._use_tqdm)
            else:
                view = _LogView(self._logger_now())
            self._runs[id(module)] = _Run(view, _known_batches(train_data))
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._logger_now().warning("progress display unavailable: %r", exc)

    def batch_end(self, module, epoch, nbatch, batch_size, eval_metric):
        """Count the batch; redraw a terminal bar at most every ``REFRESH_SECONDS``."""
        self._guarded(module, lambda run: run.batch(epoch, batch_size, eval_metric))

    def epoch_end(self, module, epoch, eval_metric, validation_metric, seconds):
        """Close the epoch's bar, or log its line."""
        self._guarded(
            module, lambda run: run.epoch_end(epoch, eval_metric, validation_metric, seconds)
        )

    def fit_end(self, module, num_epoch, eval_metric):
        """Close a bar left open by an early stop and forget the fit."""
        self._guarded(module, lambda run: run.close(eval_metric))
        self._runs.pop(id(module), None)


_REPORTER = ProgressReporter()


@hookimpl
def rebind_fit_begin(module, begin_epoch, num_epoch, train_data, eval_metric):
    """Start the progress display of this fit."""
    _REPORTER.fit_begin(module, begin_epoch, num_epoch, train_data, eval_metric)


@hookimpl
def rebind_batch_end(module, epoch, nbatch, batch_size, eval_metric):
    """Advance the progress display."""
    _REPORTER.batch_end(module, epoch, nbatch, batch_size, eval_metric)


@hookimpl
def rebind_epoch_end(module, epoch, eval_metric, validation_metric, seconds):
    """Finish the epoch's bar or log its line."""
    _REPORTER.epoch_end(module, epoch, eval_metric, validation_metric, seconds)


@hookimpl
def rebind_fit_end(module, num_epoch, eval_metric):
    """End the progress display of this fit."""
    _REPORTER.fit_end(module, num_epoch, eval_metric)
