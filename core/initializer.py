"""``mx.init`` (alias ``mx.initializer``): how parameters get their first values.

This module owns the ``Initializer`` base class, ``InitDesc``, and the
name-based ``register`` / ``alias`` / ``create`` functions that consult the
plugin registry (family "initializers"). The built-in initializers (Xavier,
Uniform, FusedRNN, ...) are plugins under ``rebind.plugins.initializers_*``;
they are reached here by name, as ``mx.init.Xavier``, through the registry,
exactly as a third-party initializer is.

Dispatch follows MXNet 1.9.1. Called with an ``InitDesc``, an initializer
first honours the variable's ``__init__`` attribute (an initializer dumped as
JSON, ``'["normal", {"sigma": 0.01}]'``), then the end of the name: weight,
bias, gamma, beta, min, max, weight_quantize, bias_quantize; anything else is
an error, because in MXNet the operators mark their other inputs (BatchNorm's
moving statistics, PReLU's gamma) with ``__init__`` when a symbol is composed.
Called with a plain string, the deprecated path also knows upsampling, the
spatial-transformer localisation and the moving statistics by name.
"""

import json
import logging
import math
import warnings

import numpy as np

from . import registry
from .errors import ShapeError, UnknownNameError
from .ndarray import NDArray

__all__ = [
    "InitDesc",
    "Initializer",
    "register",
    "alias",
    "create",
    "bilinear_weights",
]

FAMILY = "initializers"
NICKNAME = "initializer"

_log = logging.getLogger(__name__)

# (name suffix, method) in the order MXNet tries them for an InitDesc
_DESC_PATTERNS = (
    ("weight", "_init_weight"),
    ("bias", "_init_bias"),
    ("gamma", "_init_gamma"),
    ("beta", "_init_beta"),
    ("min", "_init_zero"),
    ("max", "_init_one"),
    ("weight_quantize", "_init_quantized_weight"),
    ("bias_quantize", "_init_quantized_bias"),
)

# (name prefix or None, name suffix or None, method) for the deprecated string path
_LEGACY_PATTERNS = (
    ("upsampling", None, "_init_bilinear"),
    ("stn_loc", "weight", "_init_zero"),
    ("stn_loc", "bias", "_init_loc_bias"),
    (None, "bias", "_init_bias"),
    (None, "gamma", "_init_gamma"),
    (None, "beta", "_init_beta"),
    (None, "weight", "_init_weight"),
    (None, "moving_mean", "_init_zero"),
    (None, "moving_var", "_init_one"),
    (None, "moving_inv_var", "_init_zero"),
    (None, "moving_avg", "_init_zero"),
    (None, "min", "_init_zero"),
    (None, "max", "_init_one"),
)


class InitDesc(str):
    """A parameter name that also carries the variable's attributes.

    Args:
        name: the parameter's name.
        attrs: the variable's attributes (``symbol.attr_dict()[name]``);
            ``attrs['__init__']`` overrides dispatch on the name.
        global_init: the initializer the whole model is initialized with;
            set by the first initializer called on this description when None.
    """

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


def _rms_text(arr):
    """MXNet's default verbose statistic: the L2 norm over the square root of the size."""
    host = np.asarray(arr.asnumpy(), dtype=np.float32).ravel()
    return str(np.float32(np.linalg.norm(host) / math.sqrt(max(host.size, 1))))


class Initializer:
    """Base class of initializers: call it with ``(InitDesc, NDArray)`` to fill the array.

    Subclasses override ``_init_weight`` (and, where they differ from MXNet's
    defaults, ``_init_bias`` zeros, ``_init_gamma`` ones, ``_init_beta``
    zeros). The keyword arguments given to ``__init__`` are what ``dumps``
    writes, so a subclass passes its constructor arguments up.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log every initialized array with a statistic (default: norm / sqrt(size)).

        Args:
            verbose: whether to log.
            print_func: maps an NDArray to the text logged; by default the
                root-mean-square of its values.
        Returns:
            ``self``, so calls chain.
        """
        self._verbose = verbose
        self._print_func = _rms_text if print_func is None else print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            _log.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """This initializer as MXNet's JSON text: ``'["xavier", {"magnitude": 3, ...}]'``."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        """Fill ``arr`` in place, choosing how from ``desc`` (an InitDesc or a name)."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _DESC_PATTERNS:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        """MXNet's deprecated ``init(str, NDArray)``: dispatch on the name alone."""
        warnings.warn(
            "Calling initializer with init(str, NDArray) has been deprecated. "
            "please use init(mx.init.InitDesc(...), NDArray) instead.",
            DeprecationWarning,
            stacklevel=3,
        )
        if not isinstance(name, str):
            raise TypeError(f"initializer: name must be a string, got {type(name).__name__}")
        if not isinstance(arr, NDArray):
            raise TypeError(f"initializer: arr must be an NDArray, got {type(arr).__name__}")
        for prefix, suffix, method in _LEGACY_PATTERNS:
            if (prefix is None or name.startswith(prefix)) and (
                suffix is None or name.endswith(suffix)
            ):
                getattr(self, method)(name, arr)
                return
        self._init_default(name, arr)

    # -- the fillers dispatch chooses from ------------------------------------------
    def _init_weight(self, name, arr):
        raise NotImplementedError(
            f"{type(self).__name__} does not override _init_weight, so it cannot "
            f"initialize {name!r}"
        )

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bilinear(self, name, arr):
        ctx = arr.context
        with ctx.backend.device(ctx.device_id):
            arr[:] = NDArray(bilinear_weights(ctx.backend.xp, arr.shape, name), ctx)

    def _init_loc_bias(self, name, arr):
        if arr.shape[0] != 6:
            raise ShapeError(
                f"{name}: the localisation bias of a spatial transformer needs 6 values "
                f"(an affine transform), got shape {arr.shape}"
            )
        arr[:] = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]

    def _init_quantized_weight(self, _, arr):
        # As MXNet 1.9.1: ONE integer in [-127, 127) is drawn and fills the whole array.
        ctx = arr.context
        value = ctx.backend.randint(-127, 127, (1,), np.int32, ctx.device_id)
        arr[:] = NDArray(value.astype(np.int8), ctx)

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_default(self, name, _):
        raise ValueError(
            f"Unknown initialization pattern for {name}. Default initialization is now "
            'limited to "weight", "bias", "gamma" (1.0), and "beta" (0.0). Please use '
            "mx.sym.Variable(init=mx.init.*) to set initialization pattern"
        )

    # -- comparison and display ------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    def __hash__(self):
        return hash((type(self), self.dumps()))

    def __repr__(self):
        args = ", ".join(f"{key}={value!r}" for key, value in self._kwargs.items())
        return f"{type(self).__name__}({args})"


def bilinear_weights(xp, shape, name="weight"):
    """MXNet's bilinear upsampling kernel for a weight of ``shape`` (at least 4-D), as float32.

    Element ``i`` of the flattened weight gets
    ``(1 - |x/f - c|) * (1 - |y/f - c|)`` with ``x = i % shape[3]``,
    ``y = (i // shape[3]) % shape[2]``, ``f = ceil(shape[3] / 2)`` and
    ``c = (2f - 1 - f % 2) / (2f)``; note that ``f`` comes from the width for
    both axes, as in MXNet.
    """
    if len(shape) < 4:
        raise ShapeError(
            f"{name}: the bilinear initializer needs a weight of at least 4 dimensions "
            f"(channels, channels, height, width), got shape {tuple(shape)}"
        )
    width, height = shape[3], shape[2]
    f = math.ceil(width / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    index = xp.arange(math.prod(shape))
    x = (index % width).astype(xp.float64)
    y = ((index // width) % height).astype(xp.float64)
    values = (1 - xp.abs(x / f - c)) * (1 - xp.abs(y / f - c))
    return values.astype(xp.float32).reshape(shape)


# -- names: register, alias, create -------------------------------------------------


def _register(klass, name):
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError(f"Can only register subclass of Initializer, got {klass!r}")
    registry.add_runtime(FAMILY, name.lower(), klass, owner=klass.__module__)
    return klass


def register(klass):
    """Register an Initializer subclass under its lower-cased class name (a decorator).

    Example::

        @mx.init.register
        class MyInit(mx.init.Initializer):
            def _init_weight(self, _, arr):
                arr[:] = 0.5

        mx.init.create("myinit")
    """
    return _register(klass, klass.__name__)


def alias(*aliases):
    """A decorator registering an Initializer subclass under extra names."""

    def decorate(klass):
        for name in aliases:
            _register(klass, name)
        return klass

    return decorate


def create(*args, **kwargs):
    """An initializer from a name, its JSON dump, a dict, or an instance (returned as is).

    ``create("xavier", magnitude=2)``, ``create('["normal", {"sigma": 0.1}]')``,
    ``create({"initializer": "uniform", "scale": 0.1})`` and ``create(Xavier())``
    all work; names are case-insensitive. An unknown name raises
    ``UnknownNameError`` listing the registered ones.
    """
    if args:
        name, args = args[0], args[1:]
    elif NICKNAME in kwargs:
        name = kwargs.pop(NICKNAME)
    else:
        raise TypeError("create() needs an initializer: a name, a JSON text or an instance")
    if isinstance(name, Initializer):
        if args or kwargs:
            raise ValueError(
                f"create(): {name!r} is already an instance; additional arguments are invalid"
            )
        return name
    if isinstance(name, dict):
        return create(*args, **name, **kwargs)
    if not isinstance(name, str):
        raise TypeError(f"create(): initializer must be a string, got {type(name).__name__}")
    if name.startswith(("[", "{")):
        return _create_from_json(name, args, kwargs)
    return registry.lookup(FAMILY, name)(*args, **kwargs)


def _create_from_json(text, args, kwargs):
    if args or kwargs:
        raise ValueError(f"create(): extra arguments are invalid with the JSON text {text!r}")
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"create(): {text!r} is not valid JSON: {exc}") from exc
    if isinstance(loaded, dict):
        return create(**loaded)
    if not (isinstance(loaded, list) and len(loaded) == 2 and isinstance(loaded[1], dict)):
        raise ValueError(f'create(): expected JSON of the form ["name", {{kwargs}}], got {text!r}')
    return create(loaded[0], **loaded[1])


def __getattr__(name):
    """``mx.init.Xavier`` and friends: the registered initializer classes, by class name."""
    if name.startswith("_"):
        raise AttributeError(name)
    found = registry.get_registry(FAMILY)
    try:
        return found.get(name)
    except UnknownNameError as exc:
        for _, implementation in found.items():
            if getattr(implementation, "__name__", None) == name:
                return implementation
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} ({exc})") from None


def __dir__():
    classes = {
        impl.__name__ for _, impl in registry.get_registry(FAMILY).items() if isinstance(impl, type)
    }
    return sorted(set(globals()) | classes)
