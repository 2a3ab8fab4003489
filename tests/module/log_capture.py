"""Expecting a line in a module's log: MXNet logs some warnings instead of raising them."""

import contextlib
import logging
import re


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@contextlib.contextmanager
def logs_warning(match, logger=None):
    """Expect a WARNING record matching ``match`` on ``logger`` (default: the root logger).

    A module's default logger is the ``logging`` module, whose records go to the
    root logger, as in MXNet.
    """
    target = logger or logging.getLogger()
    handler = _Records()
    target.addHandler(handler)
    try:
        yield handler.records
    finally:
        target.removeHandler(handler)
    found = [r.getMessage() for r in handler.records if r.levelno == logging.WARNING]
    assert any(re.search(match, message) for message in found), (
        f"expected a logged warning matching {match!r}, got {found}"
    )
