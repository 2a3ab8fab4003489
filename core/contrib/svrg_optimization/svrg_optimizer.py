"""The two optimizers behind ``SVRGModule``: ``_SVRGOptimizer`` and ``_AssignmentOptimizer``.

``SVRGModule`` gives its module one optimizer, ``_SVRGOptimizer``, which routes
each key to one of two optimizers inside it: a parameter goes to the
optimizer the user asked for (``'sgd'``, an Optimizer instance, ...), and the
key ``<parameter>_full`` that carries a full gradient through the kvstore goes
to ``_AssignmentOptimizer``, which stores what was pushed. Both are registered
as MXNet registers them, under their lower-cased class names
(``mx.optimizer.create('_SVRGOptimizer', default_optimizer='sgd', ...)``).

Where rebind differs: MXNet sends every name that merely contains ``"full"``
to the assignment optimizer, so the weights of a layer auto-named
``fullyconnected0`` were replaced by their gradient instead of trained. Here a
key is a full-gradient key only when it is ``<name>_full`` for a parameter
``<name>`` the optimizer knows.
"""

from ...optimizer import Optimizer, create

__all__ = ["_AssignmentOptimizer", "_SVRGOptimizer"]

FULL_SUFFIX = "_full"

# the constructor arguments of the Optimizer base class, as MXNet lists them
_BASE_PARAMS = (
    "rescale_grad",
    "param_idx2name",
    "wd",
    "clip_gradient",
    "learning_rate",
    "lr_scheduler",
    "sym",
    "begin_num_update",
    "multi_precision",
    "param_dict",
)


@Optimizer.register
class _AssignmentOptimizer(Optimizer):
    """Stores the pushed value as the weight: how full gradients are summed in a kvstore."""

    def update(self, index, weight, grad, state):
        """Set ``weight`` to ``grad`` (no learning rate, no rescaling, no state)."""
        weight[:] = grad


@Optimizer.register
class _SVRGOptimizer(Optimizer):
    """Routes parameters to ``default_optimizer`` and ``<name>_full`` keys to assignment.

    Args:
        default_optimizer: the optimizer for the parameters, a name (created
            with every other keyword argument) or an Optimizer instance (used
            as it is).
        **kwargs: the Optimizer base arguments (``rescale_grad``,
            ``param_idx2name``, ...) configure this wrapper too; the rest
            (``momentum``, ...) reach only a default optimizer given by name.
    """

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = create(default_optimizer, **kwargs)
        elif isinstance(default_optimizer, Optimizer):
            self.default_opt = default_optimizer
        else:
            raise TypeError(
                "_SVRGOptimizer: default_optimizer must be an optimizer name such as 'sgd' "
                f"or an mx.optimizer.Optimizer, got {default_optimizer!r}"
            )
        self.aux_opt = create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs):
        """The keyword arguments that the Optimizer base class takes."""
        return {key: value for key, value in kwargs.items() if key in _BASE_PARAMS}

    def _check_index(self, index):
        """The name of ``index``: an int through ``param_idx2name``, or a name itself."""
        if isinstance(index, str):
            return index
        if index not in self.idx2name:
            raise KeyError(
                f"_SVRGOptimizer: index {index!r} is not in param_idx2name "
                f"({self.idx2name}); SVRGModule.init_optimizer numbers every parameter"
            )
        return self.idx2name[index]

    def _is_full_key(self, name):
        """Whether ``name`` is ``<parameter>_full``, a full-gradient key."""
        if not name.endswith(FULL_SUFFIX):
            return False
        return name[: -len(FULL_SUFFIX)] in self.idx2name.values()

    def _route(self, index):
        return self.aux_opt if self._is_full_key(self._check_index(index)) else self.default_opt

    def update(self, index, weight, grad, state):
        """Assign a full-gradient key; update a parameter with the default optimizer."""
        self._route(index).update(index, weight, grad, state)

    def create_state(self, index, weight):
        """The state of ``index`` from the optimizer that will update it."""
        return self._route(index).create_state(index, weight)

    def _set_current_context(self, device_id):
        """Count updates per device in the wrapped optimizers too."""
        super()._set_current_context(device_id)
        for inner in (self.default_opt, self.aux_opt):
            inner._set_current_context(device_id)
