"""Registers the metrics ``rebind.metric`` defines itself, so they are created by name too.

``CompositeEvalMetric`` (also ``composite``) and ``CustomMetric`` live in
``rebind.metric`` because ``create`` builds them from lists and functions; this
plugin gives them MXNet 1.9's registered names.
"""

from rebind.hookspecs import hookimpl
from rebind.metric import CompositeEvalMetric, CustomMetric


@hookimpl
def rebind_add_metrics(registry):
    """Register CompositeEvalMetric ('composite') and CustomMetric by name."""
    registry.add("CompositeEvalMetric", CompositeEvalMetric)
    registry.add("composite", CompositeEvalMetric)
    registry.add("CustomMetric", CustomMetric)
