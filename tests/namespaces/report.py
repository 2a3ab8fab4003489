"""Print, per recorded MXNet namespace, the in-scope names rebind lacks.

Run: ``python -m tests.namespaces.report``. Names listed in not_implemented.json
count as present (they raise NotImplementedError with their reason).
"""

from .names import RECORDED, in_scope_names, missing, out_of_scope_reason


def report():
    """Lines of the report: one per namespace, then its missing names."""
    lines = []
    for namespace in sorted(RECORDED):
        reason = out_of_scope_reason(namespace)
        if reason is not None:
            lines.append(f"{namespace}: out of scope ({reason})")
            continue
        absent = missing(namespace)
        total = len(in_scope_names(namespace))
        lines.append(f"{namespace}: {total - len(absent)}/{total} present")
        if absent:
            lines.append("    missing: " + ", ".join(absent))
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
