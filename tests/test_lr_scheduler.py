"""ember.optim.lr_scheduler against torch's: learning rates over 50 steps, warnings, state dicts.

Each schedule is written once as ``make(lib, opt)`` and run on torch and on ember; the learning
rates (and cycled momentum / beta1) are plain Python floats, so they must agree exactly.
"""
from __future__ import annotations

import copy
import math
import re
import warnings

import pytest

import ember
import ember.optim.lr_scheduler as ember_lrs  # noqa: F401  (the submodule imports on its own)

STEPS = 50


def _torch():
    return pytest.importorskip("torch")


def _norm(text: str) -> str:
    return re.sub(r"\btorch\.(?=[A-Za-z_])", "ember.", text)


def _optimizer(lib, kind="SGD"):
    a = lib.nn.Parameter(lib.zeros(2))
    b = lib.nn.Parameter(lib.zeros(3))
    groups = [{"params": [a]}, {"params": [b], "lr": 0.5}]
    if kind == "Adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _run(lib, make, kind="SGD", steps=STEPS, metrics=None):
    opt = _optimizer(lib, kind)
    sched = make(lib, opt)
    lrs = [list(sched.get_last_lr())]
    extra = []
    for i in range(steps):
        opt.step()
        if metrics is not None:
            sched.step(metrics[i])
        else:
            sched.step()
        lrs.append(list(sched.get_last_lr()))
        extra.append([(g.get("momentum"), g.get("betas")) for g in opt.param_groups])
    return lrs, extra, [g["lr"] for g in opt.param_groups]


LRS = lambda lib: lib.optim.lr_scheduler

SCHEDULES = {
    "StepLR": lambda lib, o: LRS(lib).StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda lib, o: LRS(lib).MultiStepLR(o, milestones=[5, 12, 12, 30],
                                                       gamma=0.3),
    "ExponentialLR": lambda lib, o: LRS(lib).ExponentialLR(o, gamma=0.93),
    "CosineAnnealingLR": lambda lib, o: LRS(lib).CosineAnnealingLR(o, T_max=13, eta_min=0.001),
    "LambdaLR": lambda lib, o: LRS(lib).LambdaLR(o, lambda e: 1.0 / (1 + e)),
    "LambdaLR-list": lambda lib, o: LRS(lib).LambdaLR(
        o, [lambda e: 0.95 ** e, lambda e: 1 + math.sin(e)]),
    "MultiplicativeLR": lambda lib, o: LRS(lib).MultiplicativeLR(o, lambda e: 0.97),
    "LinearLR": lambda lib, o: LRS(lib).LinearLR(o, start_factor=0.2, end_factor=0.9,
                                                 total_iters=17),
    "ConstantLR": lambda lib, o: LRS(lib).ConstantLR(o, factor=0.4, total_iters=9),
    "PolynomialLR": lambda lib, o: LRS(lib).PolynomialLR(o, total_iters=30, power=2.0),
    "CosineAnnealingWarmRestarts": lambda lib, o: LRS(lib).CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=0.01),
    "OneCycleLR": lambda lib, o: LRS(lib).OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=STEPS),
    "OneCycleLR-linear-3phase": lambda lib, o: LRS(lib).OneCycleLR(
        o, max_lr=0.8, epochs=5, steps_per_epoch=10, anneal_strategy="linear",
        three_phase=True, pct_start=0.25),
    "CyclicLR": lambda lib, o: LRS(lib).CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                 step_size_up=6, mode="triangular2"),
    "CyclicLR-exp": lambda lib, o: LRS(lib).CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1,
                                                     step_size_up=4, step_size_down=9,
                                                     mode="exp_range", gamma=0.98),
    "SequentialLR": lambda lib, o: LRS(lib).SequentialLR(
        o, schedulers=[LRS(lib).LinearLR(o, start_factor=0.1, total_iters=10),
                       LRS(lib).CosineAnnealingLR(o, T_max=20, eta_min=1e-4),
                       LRS(lib).ExponentialLR(o, gamma=0.9)],
        milestones=[10, 30]),
    "ChainedScheduler": lambda lib, o: LRS(lib).ChainedScheduler(
        [LRS(lib).ConstantLR(o, factor=0.1, total_iters=4),
         LRS(lib).ExponentialLR(o, gamma=0.9)]),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_matches_torch(name):
    torch = _torch()
    t = _run(torch, SCHEDULES[name])
    e = _run(ember, SCHEDULES[name])
    for step, (a, b) in enumerate(zip(t[0], e[0])):
        assert b == a, f"step {step}"  # the same float formulas: exactly the same numbers
    assert e[1] == t[1]  # momentum per step (cycled by OneCycleLR / CyclicLR)
    assert e[2] == t[2]


@pytest.mark.parametrize("name", ["OneCycleLR", "CyclicLR"])
def test_beta1_cycling_matches_torch(name):
    torch = _torch()
    t = _run(torch, SCHEDULES[name], kind="Adam")
    e = _run(ember, SCHEDULES[name], kind="Adam")
    assert e[0] == t[0]
    assert e[1] == t[1]


METRICS = [1.0, 0.9, 0.8, 0.8, 0.8, 0.81, 0.8, 0.79, 0.79, 0.79, 0.79, 0.79, 0.5, 0.5, 0.5,
           0.5, 0.5, 0.5, 0.5, 0.5] * 3


@pytest.mark.parametrize("kwargs", [
    {"patience": 2}, {"patience": 1, "factor": 0.5, "cooldown": 2, "min_lr": [0.01, 0.05]},
    {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "patience": 0},
    {"patience": 0, "factor": 0.2, "threshold": 0.0, "eps": 0.02},
], ids=["default", "cooldown-minlr", "max-abs", "eps"])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    torch = _torch()

    def make(lib, o):
        return LRS(lib).ReduceLROnPlateau(o, **kwargs)

    t = _run(torch, make, steps=len(METRICS), metrics=METRICS)
    e = _run(ember, make, steps=len(METRICS), metrics=METRICS)
    assert e[0] == t[0]


def _outcome(fn, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn(lib)
            err = None
        except Exception as e:  # noqa: BLE001 - the error is what we compare
            value, err = None, (type(e).__name__, _norm(str(e)))
    return value, err, [(w.category.__name__, _norm(str(w.message))) for w in caught]


def _same(fn):
    torch = _torch()
    t, e = _outcome(fn, torch), _outcome(fn, ember)
    assert e == t
    return t


def test_warns_when_scheduler_steps_before_optimizer():
    def body(lib):
        opt = _optimizer(lib)
        sched = LRS(lib).StepLR(opt, step_size=2)
        sched.step()
        return sched.get_last_lr()

    _, _, warns = _same(body)
    assert len(warns) == 1 and "before `optimizer.step()`" in warns[0][1]


def test_no_warning_in_the_right_order():
    def body(lib):
        opt = _optimizer(lib)
        sched = LRS(lib).ExponentialLR(opt, gamma=0.5)
        opt.step()
        sched.step()
        return sched.get_last_lr()

    _, _, warns = _same(body)
    assert warns == []


def test_warns_when_optimizer_step_is_overridden():
    def body(lib):
        opt = _optimizer(lib)
        sched = LRS(lib).ExponentialLR(opt, gamma=0.5)
        opt.step = lambda closure=None: None
        opt.step()
        sched.step()

    _, _, warns = _same(body)
    assert len(warns) == 1 and "overridden" in warns[0][1]


def test_get_lr_outside_step_warns_and_epoch_is_deprecated():
    def body(lib):
        opt = _optimizer(lib)
        sched = LRS(lib).StepLR(opt, step_size=3, gamma=0.1)
        opt.step()
        sched.get_lr()
        sched.step(7)  # closed form, deprecated
        return sched.get_last_lr(), sched.last_epoch

    value, _, warns = _same(body)
    assert [w[1][:20] for w in warns] == ["To get the last lear", "The epoch parameter "]
    assert value[0] == pytest.approx([0.001, 0.005])


def _step_n(sched, n):
    for _ in range(n):
        sched.step()


def _sequential(lib, second, milestones):
    o = _optimizer(lib)
    other = LRS(lib).StepLR(o, 3) if second == "StepLR" else LRS(lib).ReduceLROnPlateau(o)
    return LRS(lib).SequentialLR(o, [LRS(lib).StepLR(o, 2), other], milestones=milestones)


SCHED_ERRORS = {
    "not-optimizer": lambda lib: LRS(lib).StepLR(object(), step_size=1),
    "no-initial-lr": lambda lib: LRS(lib).StepLR(_optimizer(lib), step_size=1, last_epoch=3),
    "lambda-count": lambda lib: LRS(lib).LambdaLR(_optimizer(lib), [lambda e: 1.0]),
    "multiplicative-type": lambda lib: LRS(lib).MultiplicativeLR(_optimizer(lib), 0.9),
    "constant-factor": lambda lib: LRS(lib).ConstantLR(_optimizer(lib), factor=2.0),
    "linear-start": lambda lib: LRS(lib).LinearLR(_optimizer(lib), start_factor=0),
    "linear-end": lambda lib: LRS(lib).LinearLR(_optimizer(lib), end_factor=1.5),
    "plateau-factor": lambda lib: LRS(lib).ReduceLROnPlateau(_optimizer(lib), factor=1.0),
    "plateau-mode": lambda lib: LRS(lib).ReduceLROnPlateau(_optimizer(lib), mode="up"),
    "plateau-min-lrs": lambda lib: LRS(lib).ReduceLROnPlateau(_optimizer(lib),
                                                              min_lr=[0.1]),
    "onecycle-steps": lambda lib: LRS(lib).OneCycleLR(_optimizer(lib), max_lr=1.0),
    "onecycle-pct": lambda lib: LRS(lib).OneCycleLR(_optimizer(lib), max_lr=1.0,
                                                    total_steps=10, pct_start=1),
    "onecycle-over": lambda lib: _step_n(
        LRS(lib).OneCycleLR(_optimizer(lib), max_lr=1.0, total_steps=3), 5),
    "warm-restarts-T0": lambda lib: LRS(lib).CosineAnnealingWarmRestarts(_optimizer(lib),
                                                                         T_0=0),
    "sequential-milestones": lambda lib: _sequential(lib, "StepLR", [1, 2]),
    "sequential-plateau": lambda lib: _sequential(lib, "ReduceLROnPlateau", [1]),
    "chained-empty": lambda lib: LRS(lib).ChainedScheduler([]),
    "cyclic-no-momentum": lambda lib: LRS(lib).CyclicLR(
        lib.optim.Adagrad([lib.nn.Parameter(lib.zeros(2))]), base_lr=0.1, max_lr=1.0),
}


@pytest.mark.parametrize("case", sorted(SCHED_ERRORS))
def test_scheduler_errors_match_torch(case):
    _, err, _ = _same(SCHED_ERRORS[case])
    assert err is not None


STATE_SCHEDULES = ["StepLR", "MultiStepLR", "CosineAnnealingLR", "OneCycleLR", "CyclicLR",
                   "CosineAnnealingWarmRestarts", "SequentialLR", "ChainedScheduler",
                   "LinearLR", "PolynomialLR", "LambdaLR"]


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items() if k != "_scale_fn_ref"}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "items") and not isinstance(v, dict):  # Counter
        return dict(v)
    return v


@pytest.mark.parametrize("name", STATE_SCHEDULES)
def test_scheduler_state_dict_matches_torch(name):
    torch = _torch()

    def body(lib):
        opt = _optimizer(lib)
        sched = SCHEDULES[name](lib, opt)
        for _ in range(7):
            opt.step()
            sched.step()
        return _plain(sched.state_dict())

    t, e = _outcome(body, torch), _outcome(body, ember)
    assert e[1] is None and t[1] is None
    assert e[0].keys() == t[0].keys()
    for k in t[0]:
        if isinstance(t[0][k], float):
            assert e[0][k] == pytest.approx(t[0][k], rel=1e-12), k
        elif k != "_schedulers":
            assert e[0][k] == t[0][k], k


@pytest.mark.parametrize("name", STATE_SCHEDULES + ["ReduceLROnPlateau"])
def test_scheduler_state_dict_round_trip(name):
    make = SCHEDULES.get(name, lambda lib, o: LRS(lib).ReduceLROnPlateau(o, patience=1))
    metrics = METRICS if name == "ReduceLROnPlateau" else None
    full = _run(ember, make, steps=30, metrics=metrics)[0]

    opt = _optimizer(ember)
    sched = make(ember, opt)
    lrs = [list(sched.get_last_lr())]
    for i in range(12):
        opt.step()
        sched.step(*([metrics[i]] if metrics else []))
        lrs.append(list(sched.get_last_lr()))
    saved_opt = copy.deepcopy(opt.state_dict())
    saved_sched = copy.deepcopy(sched.state_dict())

    opt2 = _optimizer(ember)
    sched2 = make(ember, opt2)
    sched2.load_state_dict(saved_sched)
    opt2.load_state_dict(saved_opt)
    for i in range(12, 30):
        opt2.step()
        sched2.step(*([metrics[i]] if metrics else []))
        lrs.append(list(sched2.get_last_lr()))
    assert lrs == full


def test_scheduler_sets_initial_lr_and_resumes_with_last_epoch():
    def body(lib):
        opt = _optimizer(lib)
        LRS(lib).StepLR(opt, step_size=2)
        initial = [g["initial_lr"] for g in opt.param_groups]
        resumed = LRS(lib).StepLR(opt, step_size=2, gamma=0.5, last_epoch=3)
        return initial, resumed.last_epoch, resumed.get_last_lr()

    value, err, _ = _same(body)
    assert err is None and value[0] == [0.1, 0.5]


def test_tensor_lr_is_filled_in_place():
    def body(lib):
        p = lib.nn.Parameter(lib.zeros(2))
        opt = lib.optim.SGD([p], lr=lib.tensor(0.1))
        lr = opt.param_groups[0]["lr"]
        sched = LRS(lib).ExponentialLR(opt, gamma=0.5)
        for _ in range(3):
            opt.step()
            sched.step()
        return opt.param_groups[0]["lr"] is lr, float(lr), [float(x) for x in sched.get_last_lr()]

    value, err, _ = _same(body)
    assert err is None and value[0] is True
