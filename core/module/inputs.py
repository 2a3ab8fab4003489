"""Checking a module's input names against its symbol, and reading input descriptions.

``data_shapes``/``label_shapes`` arrive as ``DataDesc`` objects (an iterator's
``provide_data``) or as plain ``(name, shape)`` pairs; modules keep them as
DataDescs so dtype and layout ride along.
"""

import warnings

from ..io import DataDesc

__all__ = ["check_input_names", "parse_data_desc", "as_descs"]

# argument names that are parameters, not inputs, by MXNet's naming
_PARAM_SUFFIXES = ("_weight", "_bias", "_gamma", "_beta")


def check_input_names(symbol, names, typename, throw):
    """Check that each of ``names`` is an argument of ``symbol``.

    Args:
        symbol: the module's symbol.
        names: the names given for one kind of input.
        typename: ``'data'``, ``'label'``, ``'state'`` or ``'fixed_param'``.
        throw: raise ValueError when True, else warn (MXNet warns for labels,
            since a module without a loss takes none).
    """
    arguments = symbol.list_arguments()
    for name in names:
        if name in arguments:
            continue
        candidates = [a for a in arguments if not a.endswith(_PARAM_SUFFIXES)]
        message = (
            f"You created Module with Module(..., {typename}_names={list(names)}) but input "
            f"with name {name!r} is not found in symbol.list_arguments(). Did you mean one "
            f"of: {', '.join(candidates) or '(no inputs)'}?"
        )
        if throw:
            raise ValueError(message)
        warnings.warn(message, stacklevel=3)


def as_descs(shapes):
    """``shapes`` as a list of DataDescs (``(name, shape)`` pairs are converted)."""
    return [s if isinstance(s, DataDesc) else DataDesc(*s) for s in shapes]


def _check_names_match(names, descs, kind, throw):
    given = [desc.name for desc in descs]
    if sorted(names) == sorted(given):
        return
    message = (
        f"Data provided by {kind}_shapes don't match names specified by {kind}_names "
        f"({[(d.name, d.shape) for d in descs]} vs. {list(names)})"
    )
    if throw:
        raise ValueError(message)
    warnings.warn(message, stacklevel=4)


def parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """``(data descs, label descs or None)``, checked against the module's input names.

    Data names must match exactly (ValueError); label names only warn, as in
    MXNet, because a module bound for prediction is usually given no labels.
    """
    data_descs = as_descs(data_shapes)
    _check_names_match(data_names, data_descs, "data", True)
    if label_shapes is None:
        _check_names_match(label_names, [], "label", False)
        return data_descs, None
    label_descs = as_descs(label_shapes)
    _check_names_match(label_names, label_descs, "label", False)
    return data_descs, label_descs
