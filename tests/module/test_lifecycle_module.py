"""The lifecycle table walked on a real Module, and random call sequences (Hypothesis)."""

import functools
import re
import shutil
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import rebind as mx
from rebind.errors import LifecycleError
from rebind.module.lifecycle import _NEXT_CALL, TRANSITIONS, Stage

from .core_nets import mlp, random_params, separable, to_nd
from .log_capture import logs_warning

SHAPES = ([("data", (8, 6))], [("softmax_label", (8,))])
BAD_SHAPES = ([("image", (8, 6))], [("softmax_label", (8,))])
X, Y = separable(8)
BATCH = mx.io.DataBatch([mx.nd.array(X)], [mx.nd.array(Y)])


@pytest.fixture(scope="module")
def params_file():
    folder = tempfile.mkdtemp()
    mod = mx.mod.Module(mlp())
    mod.bind(*SHAPES)
    mod.init_params(arg_params=to_nd(random_params()))
    mod.save_params(f"{folder}/p.params")
    yield f"{folder}/p.params"
    shutil.rmtree(folder)


def _initialized():
    mod = mx.mod.Module(mlp())
    mod.bind(*SHAPES)
    mod.init_params()
    return mod


def _optimized():
    mod = _initialized()
    mod.init_optimizer()
    return mod


def _failed_rebind(mod):
    with pytest.raises(ValueError, match="data_names"):
        mod.bind(*BAD_SHAPES, force_rebind=True)


def _module_at(stage, params_file):
    """A real Module brought to ``stage`` through public calls only."""
    if stage is Stage.UNBOUND:
        return mx.mod.Module(mlp())
    if stage is Stage.PARAMS_ONLY:
        mod = mx.mod.Module(mlp())
        mod.load_params(params_file)
        return mod
    if stage is Stage.BOUND:
        mod = mx.mod.Module(mlp())
        mod.bind(*SHAPES)
        return mod
    if stage is Stage.INITIALIZED:
        return _initialized()
    mod = _optimized()
    if stage is Stage.UNBOUND_OPTIMIZED:
        _failed_rebind(mod)
    return mod


def _backward(mod):
    if mod._lifecycle.stage in TRANSITIONS["forward"].allowed:
        mod.forward(BATCH)
    mod.backward()


# action -> (method name in messages, the public call attempting it); None: no public
# method attempts it at that stage (the module dispatches elsewhere), checked on the table
ACTIONS = {
    "bind": ("bind", lambda mod, f: mod.bind(*SHAPES)),
    "bind_shared": ("bind", lambda mod, f: mod.bind(*SHAPES, shared_module=_initialized())),
    "unbind": ("bind", lambda mod, f: _failed_rebind(mod)),
    "load_params_unbound": ("load_params", lambda mod, f: mod.load_params(f)),
    "init_params": ("init_params", lambda mod, f: mod.init_params()),
    "init_optimizer": ("init_optimizer", lambda mod, f: mod.init_optimizer()),
    "borrow_optimizer": ("borrow_optimizer", lambda mod, f: mod.borrow_optimizer(_optimized())),
    "forward": ("forward", lambda mod, f: mod.forward(BATCH)),
    "backward": ("backward", lambda mod, f: _backward(mod)),
    "update": ("update", lambda mod, f: mod.update()),
    "outputs": ("get_outputs", lambda mod, f: mod.get_outputs()),
    "get_params": ("get_params", lambda mod, f: mod.get_params()),
    "bound_only": ("install_monitor", lambda mod, f: mod.install_monitor(_NoMonitor())),
    "optimizer_states": (
        "save_optimizer_states",
        lambda mod, f: mod.save_optimizer_states(f + ".states"),
    ),
}


class _NoMonitor:
    def install(self, exe):
        pass


PAIRS = [(stage, action) for stage in Stage for action in TRANSITIONS]


@pytest.mark.parametrize(("stage", "action"), PAIRS, ids=[f"{s.name}-{a}" for s, a in PAIRS])
def test_every_stage_and_action(stage, action, params_file):
    mod = _module_at(stage, params_file)
    assert mod._lifecycle.stage is stage
    rule_ = TRANSITIONS[action]
    method, call = ACTIONS[action]
    if action == "load_params_unbound" and stage.bound:
        # load_params on a bound module is set_params (action init_params); only the
        # table can be asked about this pair
        with pytest.raises(LifecycleError):
            mod._lifecycle.check(action, method)
        return
    if stage in rule_.repeats:
        # MXNet logs a repeated bind/init_optimizer, and warns of a repeated init_params
        expected = logs_warning(re.escape(rule_.warning)) if rule_.logged else None
        with expected or pytest.warns(UserWarning, match=method):
            call(mod, params_file)
        assert mod._lifecycle.stage is stage
    elif stage in rule_.allowed:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            call(mod, params_file)
        assert mod._lifecycle.stage is rule_.allowed[stage]
    else:
        with pytest.raises(LifecycleError) as refused:
            call(mod, params_file)
        message = str(refused.value)
        assert f"{method}()" in message and stage.describe() in message
        if not (stage.bound and not any(s.bound for s in rule_.allowed)):
            assert f"call {_NEXT_CALL[stage]} first" in message
        assert mod._lifecycle.stage is stage
    assert (
        mod.binded,
        mod.params_initialized,
        mod.optimizer_initialized,
    ) == mod._lifecycle.stage.value


class ModuleCalls(RuleBasedStateMachine):
    """Random call sequences against an independent model of MXNet's rules."""

    def __init__(self):
        super().__init__()
        self.folder = tempfile.mkdtemp()
        self.mod = mx.mod.Module(mlp())
        self.bound = self.params = self.optimizer = self.forwarded = self.saved = False

    def teardown(self):
        shutil.rmtree(self.folder)

    def _expect(self, outcome, call, match=None):
        """Run ``call``: 'ok' must pass silently, 'warn' must warn (or log ``match``),
        'error' must refuse."""
        if outcome == "error":
            with pytest.raises(LifecycleError):
                call()
        elif outcome == "warn":
            with logs_warning(match) if match else pytest.warns(UserWarning):
                call()
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                call()

    @rule(force=st.booleans())
    def bind(self, force):
        outcome = "warn" if self.bound and not force else "ok"
        bind = functools.partial(self.mod.bind, *SHAPES, force_rebind=force)
        self._expect(outcome, bind, match=r"^Already bound, ignoring bind\(\)")
        if outcome == "ok":
            self.bound, self.forwarded = True, False

    @rule()
    def failed_rebind(self):
        with pytest.raises(ValueError):
            self.mod.bind(*BAD_SHAPES, force_rebind=True)
        self.bound = self.forwarded = False

    @rule(force=st.booleans())
    def init_params(self, force):
        outcome = "error" if not self.bound else "warn" if self.params and not force else "ok"
        self._expect(outcome, lambda: self.mod.init_params(force_init=force))
        self.params = self.params or outcome == "ok"

    @rule(force=st.booleans())
    def init_optimizer(self, force):
        if not (self.bound and self.params):
            outcome = "error"
        else:
            outcome = "warn" if self.optimizer and not force else "ok"
        init = functools.partial(self.mod.init_optimizer, force_init=force)
        self._expect(outcome, init, match=r"^optimizer already initialized, ignoring\.\.\.")
        self.optimizer = self.optimizer or outcome == "ok"

    @rule()
    def forward(self):
        ready = self.bound and self.params
        self._expect("ok" if ready else "error", lambda: self.mod.forward(BATCH))
        self.forwarded = self.forwarded or ready

    @rule()
    def backward(self):
        ready = self.bound and self.params
        if ready and not self.forwarded:
            self.forward()
        self._expect("ok" if ready else "error", self.mod.backward)

    @rule()
    def update(self):
        ready = self.bound and self.params and self.optimizer
        self._expect("ok" if ready else "error", self.mod.update)

    @rule()
    def get_params(self):
        self._expect("ok" if self.params else "error", self.mod.get_params)

    @rule()
    def save_params(self):
        self._expect(
            "ok" if self.params else "error",
            lambda: self.mod.save_params(f"{self.folder}/p.params"),
        )
        self.saved = self.saved or self.params

    @rule()
    def load_params(self):
        if not self.saved:
            return
        self._expect("ok", lambda: self.mod.load_params(f"{self.folder}/p.params"))
        self.params = True

    @invariant()
    def flags_match_the_model(self):
        assert self.mod.binded == self.bound
        assert self.mod.params_initialized == self.params
        assert self.mod.optimizer_initialized == self.optimizer


ModuleCalls.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_random_call_sequences = ModuleCalls.TestCase
