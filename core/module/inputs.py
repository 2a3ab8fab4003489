"""Checking a module's input names against its symbol, and reading input descriptions.

``data_shapes``/``label_shapes`` arrive as ``DataDesc`` objects (an iterator's
``provide_data``) or as plain ``(name, shape)`` pairs; modules keep them as
DataDescs so dtype and layout ride along.
"""

import difflib
import warnings

from ..errors import InputNameError, LifecycleError
from ..io import DataDesc

__all__ = [
    "check_input_names",
    "parse_data_desc",
    "as_descs",
    "check_inputs_provided",
    "check_unclaimed_inputs",
    "check_labels_fed",
]

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
        f"({descs} vs. {list(names)})"
    )
    if throw:
        raise ValueError(message)
    warnings.warn(message, stacklevel=5)  # the caller of Module.bind or reshape


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


def check_inputs_provided(owner, arguments, needed, data_descs, label_descs):
    """Refuse data and labels that leave an input the symbol reads from batches unfed.

    Args:
        owner: ``'Module.bind'`` or the like, for the message.
        arguments: the symbol's arguments.
        needed: the module's data and label names that are arguments.
        data_descs, label_descs: what the data provides; ``label_descs`` None
            means "no labels" (prediction), which MXNet allows: the labels are
            then left unchecked.

    Raises:
        InputNameError: when labels are given, an input of the symbol that
            neither data nor labels provide (MXNet raised ``KeyError`` naming
            the provided label; rebind used to feed zeros to the missing one).
    """
    if label_descs is None:
        return
    provided = [desc.name for desc in data_descs] + [desc.name for desc in label_descs]
    missing = [name for name in needed if name not in provided]
    if not missing:
        return
    hints = []
    for name in provided:
        close = None if name in arguments else _closest(name, missing)
        if close is not None:
            hints.append(f"{name!r} looks like {close!r}.")
    example = ", ".join(f"{name!r}: ..." for name in missing)
    raise InputNameError(
        f"{owner}: the symbol's input(s) {missing} get no data: the module reads "
        f"{list(needed)} from each batch, the data provides {provided} (provide_data + "
        "provide_label). "
        + "".join(hint + " " for hint in hints)
        + f"Name the iterator's arrays after the symbol's inputs (e.g. NDArrayIter(..., "
        f"label={{{example}}})), or give the module data_names/label_names that match."
    )


def _closest(name, candidates):
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return close[0] if close else None


def check_unclaimed_inputs(owner, symbol, data_names, label_names, to_initialize):
    """Refuse to initialize a symbol input that a mistyped data or label name left a parameter.

    MXNet only warned (``Did you mean one of...``) and then failed here with
    "Unknown initialization pattern" for the input, a message about
    initialization rather than names. An input given a value (``arg_params``,
    ``set_params(..., allow_missing=True)`` without an initializer) is left
    alone, as MXNet leaves it.

    Args:
        owner: ``'Module.init_params'`` or the like, for the message.
        symbol: the module's symbol.
        data_names, label_names: the names the module was given.
        to_initialize: the parameters the initializer is about to fill.
    """
    arguments = symbol.list_arguments()
    strays = [name for name in list(data_names) + list(label_names) if name not in arguments]
    if not strays:
        return
    attributes = symbol.attr_dict()
    orphans = [
        name
        for name in arguments
        if name in to_initialize
        and not name.endswith(_PARAM_SUFFIXES)
        and "__init__" not in attributes.get(name, {})
    ]
    for stray in strays:
        orphan = _closest(stray, orphans) or next(
            (name for name in orphans if name.endswith("label")), None
        )
        if orphan is None:
            continue
        kind = "data" if stray in data_names else "label"
        names = list(data_names if kind == "data" else label_names)
        fixed = [orphan if name == stray else name for name in names]
        raise InputNameError(
            f"{owner}: the symbol's input {orphan!r} is neither data "
            f"(data_names={list(data_names)}), a label (label_names={list(label_names)}) "
            f"nor a parameter an initializer knows, and {kind} {stray!r} is not an input "
            f"of the symbol. Did you mean {kind}_names={fixed}? (the symbol's arguments: "
            f"{arguments})"
        )


def check_labels_fed(owner, group, label_names, bound_with_labels):
    """Refuse a backward whose labels no batch fed (rebind; MXNet used stale or zero labels).

    Args:
        owner: the module's class name, for the message.
        group: the module's DataParallelExecutorGroup, after a forward.
        label_names: the module's label names.
        bound_with_labels: whether ``bind`` had label shapes.
    """
    read = [name for name in label_names if name in group.arg_names]
    if not read or group.labels_fed or not group.for_training:
        return
    if not bound_with_labels:
        raise LifecycleError(
            f"{owner}.backward: the symbol reads the label(s) {read}, but the module was "
            "bound without label_shapes, so no batch feeds them and backward would train "
            "against zeros; call bind(data_shapes, label_shapes=<the iterator's "
            "provide_label>, force_rebind=True) first"
        )
    raise ValueError(
        f"{owner}.backward: the symbol reads the label(s) {read}, but the last forward's "
        "batch had none, and backward would use an earlier batch's labels; give the "
        "DataBatch its labels (DataBatch(data=[...], label=[...]))"
    )
