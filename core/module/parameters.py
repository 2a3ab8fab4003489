"""The parameter half of ``Module``: initialize, set, get, load.

The module keeps a CPU copy of every parameter (``_arg_params``,
``_aux_params``); the executors hold the working copies on their contexts.
``update`` and training passes change the working copies and mark the CPU copy
dirty (``_params_dirty``); ``get_params`` refreshes it from the devices
(averaged over contexts) when it is.
"""

from .. import ndarray as nd
from ..errors import ShapeError
from ..initializer import InitDesc
from ..model import split_params
from .base import DEFAULT_INITIALIZER, resolve_initializer
from .inputs import check_unclaimed_inputs
from .sparse_params import pull_all_rows

__all__ = ["ParamsMixin"]


class ParamsMixin:
    """``get_params``, ``init_params``, ``set_params`` and ``load_params`` of ``Module``."""

    def get_params(self):
        """``(arg_params, aux_params)``: the module's CPU copies, refreshed from the devices."""
        self._lifecycle.require("get_params", "get_params")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(
        self,
        initializer=DEFAULT_INITIALIZER,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        """Give every parameter a value: from ``arg_params``/``aux_params``, else the initializer.

        Without ``allow_missing`` a parameter absent from given ``arg_params``
        is a RuntimeError; with it, the initializer fills it (or, with no
        initializer, it keeps its value). A name the network does not have is
        a ValueError unless ``allow_extra``. The initializer gets an
        ``InitDesc`` carrying the variable's attributes, so ``__init__``
        attributes are honoured. A second call without ``force_init`` warns and
        does nothing, as in MXNet.

        Where rebind differs: MXNet 1.9 ignores extra names here despite its
        documentation; rebind raises as documented (``fit`` still ignores them).
        """
        if not self._lifecycle.check("init_params", "init_params", force=force_init):
            return
        initializer = resolve_initializer(initializer)
        if not allow_missing:  # MXNet reports a missing value before an extra one
            self._check_missing(arg_params, aux_params)
        self._check_extra(arg_params, aux_params, allow_extra)
        filled = [n for n in self._arg_params if arg_params is None or n not in arg_params]
        check_unclaimed_inputs(
            f"{type(self).__name__}.init_params",
            self._symbol,
            self._data_names,
            self._label_names,
            filled if initializer is not None else [],
        )
        attrs = self._symbol.attr_dict()
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name in sorted(params):
                desc = InitDesc(name, attrs.get(name, None))
                self._init_one(desc, params[name], given, initializer)
        self._lifecycle.advance("init_params")
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params)

    @staticmethod
    def _init_one(desc, array, given, initializer):
        if given is None:
            initializer(desc, array)
        elif desc in given:
            value = given[desc]
            if tuple(value.shape) != array.shape:
                raise ShapeError(
                    f"Module.init_params: {desc!r} has shape {tuple(value.shape)} "
                    f"in the given parameters; the network needs {array.shape}"
                )
            if value is not array:
                value.copyto(array)
        elif initializer is not None:
            initializer(desc, array)

    def _check_missing(self, arg_params, aux_params):
        """RuntimeError for the first parameter given values do not cover, before any is set."""
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name in sorted(params):
                if given is not None and name not in given:
                    raise RuntimeError(
                        f"{name} is not presented: init_params/set_params got no value "
                        "for it; pass allow_missing=True to initialize it instead"
                    )

    def _check_extra(self, arg_params, aux_params, allow_extra):
        if allow_extra:
            return
        for given, known, kind in (
            (arg_params, self._param_names, "parameter"),
            (aux_params, self._aux_names, "auxiliary state"),
        ):
            extra = sorted(set(given or ()) - set(known))
            if extra:
                raise ValueError(
                    f"Module: {extra} are not {kind}s of the network (its "
                    f"{kind}s: {known}); pass allow_extra=True to ignore them"
                )

    def _assign_params(self, arg_params, aux_params, force_init, allow_extra):
        """``set_params(allow_missing=True)``: only the given values reach the devices."""
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def load_params(self, fname):
        """Load ``fname`` (``save_params``' format) into the module.

        On a bound module this is ``set_params``. On an unbound one (rebind)
        the values are kept, as ``Module.load`` keeps them, and copied in by
        ``bind``; then every parameter must be present and known.
        """
        if self.binded:
            super().load_params(fname)
            return
        self._lifecycle.check("load_params_unbound", "load_params")
        arg_params, aux_params = split_params(nd.load(fname), fname)
        self._check_extra(arg_params, aux_params, allow_extra=False)
        missing = sorted(set(self._param_names) - set(arg_params))
        missing += sorted(set(self._aux_names) - set(aux_params))
        if missing:
            raise RuntimeError(f"Module.load_params: {fname} has no value for {missing}")
        self._arg_params, self._aux_params = arg_params, aux_params
        self._params_dirty = False
        self._lifecycle.advance("load_params_unbound")

    def _sync_params_from_devices(self):
        """Refresh the CPU copies from the devices (after ``update`` changed them there)."""
        self._exec_group.get_params(self._arg_params, self._aux_params)
        pull_all_rows(self)  # row_sparse parameters: the kvstore holds the updated rows
        self._params_dirty = False
