"""After fit on a GPU, one log line per device: what CuPy's memory pool holds.

CuPy keeps the device memory of freed arrays for reuse, so ``nvidia-smi``
shows the pool's size, not what the model uses. At the end of ``fit`` this
plugin logs both, through the module's logger at INFO, with the pinned
staging buffer and the device's free memory::

    gpu(0) after fit: CuPy's pool holds 812.0 MiB (640.5 MiB in arrays);
    pinned staging 4.0 MiB; device 77.1 of 79.2 GiB free

``mx.context.gpu_memory_report(i)`` gives the same figures as a dict;
``mx.gpu(i).empty_cache()`` returns the pool's cached part to the device.
Block the plugin with ``REBIND_BLOCKED_PLUGINS=rebind.plugins.gpu_memory``.
"""

import logging

from rebind.context import Context, backend_for
from rebind.hookspecs import hookimpl

__all__ = ["fit_memory_lines"]

_MIB, _GIB = 2**20, 2**30


def fit_memory_lines(module):
    """The report's lines for each device context the module trains on (none on the CPU).

    A host backend's ``memory_report`` is None, so host contexts give no line.
    """
    lines = []
    for ctx in _contexts(module):
        report = backend_for(ctx.device_type).memory_report(ctx.device_id)
        if report is not None:
            lines.append(_line(ctx, report))
    return lines


def _contexts(module):
    contexts = getattr(module, "_context", None) or []
    if isinstance(contexts, Context):
        contexts = [contexts]
    unique = []
    for ctx in contexts:
        if isinstance(ctx, Context) and ctx not in unique:
            unique.append(ctx)
    return unique


def _line(ctx, report):
    parts = []
    if "pool_held" in report:
        parts.append(
            f"CuPy's pool holds {report['pool_held'] / _MIB:.1f} MiB "
            f"({report.get('pool_used', 0) / _MIB:.1f} MiB in arrays)"
        )
    if report.get("pinned_staging"):
        parts.append(f"pinned staging {report['pinned_staging'] / _MIB:.1f} MiB")
    parts.append(
        f"device {report['device_free'] / _GIB:.1f} of {report['device_total'] / _GIB:.1f} GiB free"
    )
    return f"{ctx} after fit: " + "; ".join(parts)


@hookimpl
def rebind_fit_end(module, num_epoch, eval_metric):
    """Log each device's memory once training is over."""
    logger = getattr(module, "logger", None) or logging.getLogger("rebind")
    try:
        lines = fit_memory_lines(module)
    except Exception as exc:  # a report must not turn a finished fit into a failure
        logger.warning("GPU memory report unavailable: %r", exc)
        return
    for line in lines:
        logger.info("%s", line)
