"""Command-line tools of MXNet's tools/ folder: ``python -m rebind.tools.im2rec``."""
