"""MkDocs hook: the operator reference page, generated from the operator registry.

rebind makes ``mx.nd.<op>`` and ``mx.sym.<op>`` on first access from the
registry, so no source file lists them for mkdocstrings to read. This hook adds
``reference/operators.md`` to the build: one entry per operator, with its other
names, the namespaces it is filed under, its inputs, its parameters and their
defaults, and its docstring. Operators that plugins add appear as well.
"""

import attrs
from mkdocs.structure.files import File

import rebind
from rebind import op_namespaces, registry

PAGE = "reference/operators.md"

INTRO = """# Operators

Every operator registered in this install (built-ins and plugins), generated from the
operator registry when the site is built. Each is callable as `mx.nd.<name>(...)` on
NDArrays and `mx.sym.<name>(...)` on symbols, with MXNet's parameters: they take MXNet's
string form too (`kernel="(3, 3)"`). The sub-namespace column says where MXNet files the
name as well (`mx.nd.op`, `mx.nd._internal`, `mx.nd.linalg`, `mx.nd.contrib`,
`mx.nd.image`, `mx.nd.random`).

"""


def _namespaces(name):
    """The sub-namespaces MXNet files operator ``name`` under."""
    found = []
    for family, test in (
        ("op", op_namespaces.is_public),
        ("_internal", op_namespaces.is_internal),
        ("linalg", op_namespaces.is_linalg),
        ("contrib", op_namespaces.is_contrib),
        ("image", op_namespaces.is_image),
    ):
        if test(name):
            found.append(family)
    return found


# stand-in values for required parameters, tried in turn, to list a default input set
PLACEHOLDERS = ("1", "(1, 1)")


def _inputs(opdef):
    """The operator's inputs with default parameters, or a note when they depend on them."""
    required = [f.name for f in attrs.fields(opdef.params) if f.default is attrs.NOTHING]
    for value in PLACEHOLDERS:
        try:  # required parameters (kernel, num_hidden) need some value to parse
            names = opdef.arguments(opdef.parse({name: value for name in required}))
        except Exception:
            continue
        return ", ".join(f"`{n}`" for n in names) or "none"
    return "depend on the parameters"


def _parameters(opdef):
    """Markdown list items: each parameter with its default."""
    if not attrs.has(opdef.params):
        return []
    items = []
    for field in attrs.fields(opdef.params):
        if field.name.startswith("_"):
            continue
        default = field.default
        if default is attrs.NOTHING:
            shown = "required"
        elif isinstance(default, attrs.Factory):
            shown = "default: computed"
        else:
            shown = f"default `{default!r}`"
        items.append(f"- `{field.name}`: {shown}")
    return items


def _entry(name, opdef, aliases):
    """The markdown of one operator."""
    lines = [f"## {name} {{#{name}}}", ""]
    lines.append(" ".join((opdef.doc or "(no description)").split()))
    lines.append("")
    if aliases:
        lines.append("Also: " + ", ".join(f"`{a}`" for a in aliases) + ".")
        lines.append("")
    filed = ", ".join(f"`mx.nd.{ns}`" for ns in _namespaces(name)) or "-"
    lines.append(f"Filed under: {filed}. Inputs (with default parameters): {_inputs(opdef)}.")
    lines.append("")
    lines += _parameters(opdef)
    lines.append("")
    return lines


def operators_markdown():
    """The whole page: every registered operator, primary names first, sorted."""
    table = registry.get_registry("operators")
    by_def = {}
    for name in table.names():
        by_def.setdefault(id(table.get(name)), (table.get(name), []))[1].append(name)
    lines = [INTRO]
    for opdef, names in sorted(by_def.values(), key=lambda item: item[0].name.lower()):
        primary = opdef.name if opdef.name in names else sorted(names)[0]
        aliases = sorted(n for n in names if n != primary)
        lines += _entry(primary, opdef, aliases)
        for alias in aliases:  # an anchor for every name, so links to aliases resolve
            lines.insert(len(lines) - 1, f'<a id="{alias}"></a>')
    return "\n".join(lines) + f"\n\nrebind {rebind.__version__}.\n"


def on_files(files, config):
    """Add the generated operator page to the site's files."""
    files.append(File.generated(config, PAGE, content=operators_markdown()))
    return files
