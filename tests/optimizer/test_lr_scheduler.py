"""Learning-rate schedulers: closed forms, warmup, state, validation, MXNet's quirks."""

import logging
import math

import pytest

import rebind as mx
from rebind.lr_scheduler import (
    CosineScheduler,
    FactorScheduler,
    LRScheduler,
    MultiFactorScheduler,
    PolyScheduler,
)


def test_module_is_exposed_as_mx_lr_scheduler():
    assert mx.lr_scheduler.FactorScheduler is FactorScheduler


def test_base_class_requires_call():
    with pytest.raises(NotImplementedError, match="LRScheduler must override __call__"):
        LRScheduler()(3)


def test_factor_closed_form():
    scheduler = FactorScheduler(step=3, factor=0.5, base_lr=1.0)
    got = [scheduler(n) for n in range(1, 11)]
    expected = [0.5 ** ((n - 1) // 3) for n in range(1, 11)]
    assert got == expected


def test_factor_floors_at_stop_factor_lr(caplog):
    scheduler = FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0)
    with caplog.at_level(logging.INFO, logger="rebind.lr_scheduler"):
        rates = [scheduler(n) for n in range(1, 8)]
    assert rates[-1] == 1e-3 and min(rates) == 1e-3
    assert "will not change in the future" in caplog.text
    assert "Change learning rate to" in caplog.text


def test_factor_jumps_several_steps_at_once():
    # resuming at a later update applies every missed step (MXNet's while loop)
    scheduler = FactorScheduler(step=2, factor=0.5, base_lr=0.8)
    assert scheduler(7) == pytest.approx(0.8 * 0.5**3)
    assert scheduler.count == 6


def test_multifactor_closed_form():
    scheduler = MultiFactorScheduler(step=[2, 5, 6], factor=0.1, base_lr=1.0)
    got = [scheduler(n) for n in range(0, 9)]
    powers = [sum(n > s for s in (2, 5, 6)) for n in range(0, 9)]
    assert got == pytest.approx([0.1**p for p in powers])
    assert scheduler.cur_step_ind == 3


def test_poly_closed_form_and_hold_after_max_update():
    scheduler = PolyScheduler(max_update=10, base_lr=0.5, pwr=3, final_lr=0.05)
    for n in range(0, 11):
        assert scheduler(n) == pytest.approx(0.05 + 0.45 * (1 - n / 10) ** 3)
    assert scheduler(25) == pytest.approx(0.05)


def test_cosine_closed_form_with_linear_warmup():
    scheduler = CosineScheduler(
        max_update=12, base_lr=0.4, final_lr=0.0, warmup_steps=4, warmup_begin_lr=0.1
    )
    for n in range(4):
        assert scheduler(n) == pytest.approx(0.1 + 0.3 * n / 4)
    for n in range(4, 13):
        assert scheduler(n) == pytest.approx(0.2 * (1 + math.cos(math.pi * (n - 4) / 8)))
    assert scheduler(40) == pytest.approx(0.0, abs=1e-15)


def test_constant_warmup():
    scheduler = PolyScheduler(
        max_update=6, base_lr=1.0, warmup_steps=3, warmup_begin_lr=0.25, warmup_mode="constant"
    )
    assert [scheduler(n) for n in range(3)] == [0.25, 0.25, 0.25]
    assert scheduler(3) == 1.0


def test_optimizer_overwrites_base_lr_but_not_warmup_target():
    # MXNet keeps warmup_final_lr (and Poly/Cosine's base_lr_orig) from construction
    scheduler = FactorScheduler(step=10, base_lr=0.01, warmup_steps=2)
    with pytest.warns(UserWarning, match="overwritten by learning_rate"):
        mx.optimizer.create("sgd", learning_rate=0.5, lr_scheduler=scheduler)
    assert scheduler.base_lr == 0.5
    assert scheduler.warmup_final_lr == 0.01
    assert scheduler(1) == pytest.approx(0.005)
    assert scheduler(2) == 0.5


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: FactorScheduler(step=0), "step must be at least 1"),
        (lambda: FactorScheduler(step=2, factor=1.5), "factor must be no more than 1"),
        (lambda: MultiFactorScheduler(step=[3, 3]), "must be increasing"),
        (lambda: MultiFactorScheduler(step=[0, 3]), "steps must be at least 1"),
        (lambda: PolyScheduler(max_update=0), "max_update must be strictly positive"),
        (lambda: CosineScheduler(max_update=5, warmup_mode="cubic"), "warmup_mode must be one"),
        (lambda: CosineScheduler(max_update=5, warmup_steps=-1), "positive or 0"),
        (lambda: CosineScheduler(max_update=5, base_lr=0.1, warmup_begin_lr=0.2), "higher than"),
    ],
)
def test_invalid_arguments_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "make",
    [
        lambda: MultiFactorScheduler(step=3),
        lambda: PolyScheduler(max_update=5.0),
        lambda: FactorScheduler(step=2, warmup_steps=1.5),
    ],
)
def test_wrong_types_are_refused(make):
    with pytest.raises(TypeError):
        make()


def test_warmup_lr_past_warmup_is_an_error():
    scheduler = FactorScheduler(step=2, warmup_steps=2)
    with pytest.raises(ValueError, match="past warmup"):
        scheduler.get_warmup_lr(2)
