"""The module lifecycle as data: stages, actions, and one table of transitions.

A module is unbound, bound, has its parameters, and has an optimizer. MXNet
lets parameters exist before binding (``Module.load``) and keeps them, and
the optimizer, across ``bind(force_rebind=True)``; so a stage is the three
facts together, and only the six combinations below can occur.

Every public module method names its action; ``Lifecycle.check`` looks the
action up in ``TRANSITIONS`` and either allows it, says it is a repeat (which
MXNet tolerates with a warning, or with a line in the module's log), or
raises ``LifecycleError`` naming the module, the method, the stage and the
call that is missing. ``advance`` moves to the stage after the action.
"""

import enum
import logging
import warnings

import attrs

from ..errors import LifecycleError

__all__ = ["Stage", "Rule", "TRANSITIONS", "Lifecycle"]


class Stage(enum.Enum):
    """(bound, params initialized, optimizer installed)."""

    UNBOUND = (False, False, False)
    PARAMS_ONLY = (False, True, False)  # Module.load, or force_rebind of an initialized module
    UNBOUND_OPTIMIZED = (False, True, True)  # force_rebind of a module with an optimizer
    BOUND = (True, False, False)
    INITIALIZED = (True, True, False)
    OPTIMIZED = (True, True, True)

    @property
    def bound(self):
        return self.value[0]

    @property
    def params_initialized(self):
        return self.value[1]

    @property
    def optimizer_initialized(self):
        return self.value[2]

    def describe(self):
        return self.name.lower().replace("_", " ")


S = Stage
_READY = (S.INITIALIZED, S.OPTIMIZED)
_BOUND = (S.BOUND, S.INITIALIZED, S.OPTIMIZED)
_HAS_PARAMS = (S.PARAMS_ONLY, S.UNBOUND_OPTIMIZED, S.INITIALIZED, S.OPTIMIZED)


@attrs.frozen
class Rule:
    """How one action treats each stage.

    Attributes:
        allowed: stage -> the stage after the action.
        repeats: stages where the action was already done: MXNet warns and
            ignores it unless forced (``force_rebind``/``force_init``).
        warning: the warning for such a repeat.
        logged: MXNet logs that repeat through the module's logger
            (``logger.warning``) rather than ``warnings.warn``.
    """

    allowed: dict
    repeats: tuple = ()
    warning: str = ""
    logged: bool = False


# MXNet's words, then how to do it anyway
_ALREADY_BOUND = "Already bound, ignoring bind() (pass force_rebind=True to bind again)"


def _stay(*stages):
    return {stage: stage for stage in stages}


TRANSITIONS = {
    "bind": Rule(
        {S.UNBOUND: S.BOUND, S.PARAMS_ONLY: S.INITIALIZED, S.UNBOUND_OPTIMIZED: S.OPTIMIZED},
        repeats=_BOUND,
        warning=_ALREADY_BOUND,
        logged=True,
    ),
    "bind_shared": Rule(  # bind(shared_module=...): parameters come from the shared module
        {S.UNBOUND: S.INITIALIZED, S.PARAMS_ONLY: S.INITIALIZED, S.UNBOUND_OPTIMIZED: S.OPTIMIZED},
        repeats=_BOUND,
        warning=_ALREADY_BOUND,
        logged=True,
    ),
    "unbind": Rule(
        {
            S.BOUND: S.UNBOUND,
            S.INITIALIZED: S.PARAMS_ONLY,
            S.OPTIMIZED: S.UNBOUND_OPTIMIZED,
            **_stay(S.UNBOUND, S.PARAMS_ONLY, S.UNBOUND_OPTIMIZED),
        }
    ),
    "load_params_unbound": Rule(
        {S.UNBOUND: S.PARAMS_ONLY, **_stay(S.PARAMS_ONLY, S.UNBOUND_OPTIMIZED)}
    ),
    "init_params": Rule(
        {S.BOUND: S.INITIALIZED, **_stay(*_READY)},
        repeats=_READY,
        warning="parameters already initialized and force_init=False; init_params call ignored",
    ),
    "init_optimizer": Rule(
        {S.INITIALIZED: S.OPTIMIZED, S.OPTIMIZED: S.OPTIMIZED},
        repeats=(S.OPTIMIZED,),
        warning="optimizer already initialized, ignoring... (pass force_init=True to replace it)",
        logged=True,
    ),
    "borrow_optimizer": Rule({S.INITIALIZED: S.OPTIMIZED, S.OPTIMIZED: S.OPTIMIZED}),
    # actions that need a stage and leave it as it is
    "forward": Rule(_stay(*_READY)),
    "backward": Rule(_stay(*_READY)),
    "update": Rule(_stay(S.OPTIMIZED)),
    "outputs": Rule(_stay(*_READY)),
    "get_params": Rule(_stay(*_HAS_PARAMS)),
    "bound_only": Rule(_stay(*_BOUND)),
    "optimizer_states": Rule(_stay(S.OPTIMIZED, S.UNBOUND_OPTIMIZED)),
}

# The call that gets a module out of a stage towards what an action needs.
_NEXT_CALL = {
    S.UNBOUND: "bind()",
    S.PARAMS_ONLY: "bind()",
    S.UNBOUND_OPTIMIZED: "bind()",
    S.BOUND: "init_params()",
    S.INITIALIZED: "init_optimizer()",
}


@attrs.define
class Lifecycle:
    """The stage of one module and the checks of its transitions.

    Attributes:
        owner: the module's class name, for messages.
        stage: where the module is.
        logger: the module's logger, for the repeats MXNet logs (``logging``
            itself by default, as MXNet's modules).
    """

    owner: str
    stage: Stage = Stage.UNBOUND
    logger: object = logging

    def check(self, action, method, force=False):
        """Whether ``method`` (doing ``action``) should run now.

        Returns False for a tolerated repeat (after warning or logging it, as
        MXNet does); raises LifecycleError when the stage does not allow the action.
        """
        rule = TRANSITIONS[action]
        if self.stage in rule.repeats and not force:
            if rule.logged:
                self.logger.warning(rule.warning)
            else:
                warnings.warn(f"{self.owner}.{method}: {rule.warning}", stacklevel=3)
            return False
        if self.stage not in rule.allowed:
            raise LifecycleError(self._refusal(method, rule))
        return True

    def _refusal(self, method, rule):
        missing = _NEXT_CALL.get(self.stage)
        if self.stage.bound and not any(s.bound for s in rule.allowed):
            missing = "a module that is not bound (bind(force_rebind=True) replaces the binding)"
        return (
            f"{self.owner}.{method}() is not allowed while the module is "
            f"{self.stage.describe()}; call {missing} first"
        )

    def advance(self, action):
        """Move to the stage after ``action`` (which ``check`` allowed)."""
        self.stage = TRANSITIONS[action].allowed[self.stage]

    def require(self, action, method):
        """Raise LifecycleError unless ``action`` is allowed now (no stage change)."""
        rule = TRANSITIONS[action]
        if self.stage not in rule.allowed:
            raise LifecycleError(self._refusal(method, rule))

    @property
    def binded(self):
        return self.stage.bound

    @property
    def params_initialized(self):
        return self.stage.params_initialized

    @property
    def optimizer_initialized(self):
        return self.stage.optimizer_initialized
