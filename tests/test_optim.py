"""ember.optim against torch.optim: trajectories step by step, state dicts, errors, reprs, hooks.

Most bodies are written once as ``f(lib)`` and run with ``lib`` = torch and ``lib`` = ember; the
same initial weights (drawn with NumPy) are copied into both models.
"""
from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import pytest

import ember
import ember.optim
from tests.oracle import same, torch_or_skip

RTOL, ATOL = 1e-5, 1e-6

# torch warns as ember does when LBFGS calls float() on the loss; not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")


def _torch():
    return pytest.importorskip("torch")


def _norm(text: str) -> str:
    return re.sub(r"\btorch\.(?=[A-Za-z_])", "ember.", text)


# -- a small model built the same way in both libraries --------------------------------------------
def _weights(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    shapes = [(8, 4), (8,), (3, 8), (3,)]
    w = [rng.uniform(-0.5, 0.5, s).astype(dtype) for s in shapes]
    x = rng.standard_normal((16, 4)).astype(dtype)
    y = rng.standard_normal((16, 3)).astype(dtype)
    return w, x, y


def _build(lib, weights, dtype=None):
    l1 = lib.nn.Linear(4, 8, dtype=dtype)
    l2 = lib.nn.Linear(8, 3, dtype=dtype)
    params = [l1.weight, l1.bias, l2.weight, l2.bias]
    with lib.no_grad():
        for p, a in zip(params, weights):
            p.copy_(lib.tensor(a))
    return l1, l2, params


def _loss(lib, l1, l2, x, y):
    return lib.nn.functional.mse_loss(l2(lib.tanh(l1(x))), y)


def _batch(lib, x, y, i):
    k = (i % 4) * 4
    return lib.tensor(x[k:k + 4]), lib.tensor(y[k:k + 4])


def _snapshot(params):
    return [p.detach().numpy().copy() for p in params]


def _make_opt(lib, name, params, kwargs, groups=False):
    cls = getattr(lib.optim, name)
    if groups:
        first = dict(kwargs)
        first.pop("lr", None)
        return cls([{"params": params[:2], "lr": 0.03}, {"params": params[2:]}], **kwargs)
    return cls(params, **kwargs)


def _trajectory(lib, name, kwargs, steps=20, groups=False, dtype=np.float32, seed=0,
                full_batch=False):
    w, x, y = _weights(seed, dtype)
    ldt = None if dtype == np.float32 else lib.float64
    l1, l2, params = _build(lib, w, ldt)
    opt = _make_opt(lib, name, params, kwargs, groups)
    out = []
    for i in range(steps):
        xb, yb = (lib.tensor(x), lib.tensor(y)) if full_batch else _batch(lib, x, y, i)

        def closure(xb=xb, yb=yb):
            opt.zero_grad()
            loss = _loss(lib, l1, l2, xb, yb)
            loss.backward()
            return loss

        if name == "LBFGS":
            opt.step(closure)
        else:
            closure()
            opt.step()
        out.append(_snapshot(params))
    return out, opt


def _assert_trajectories(t_traj, e_traj, rtol=RTOL, atol=ATOL):
    for step, (tp, ep) in enumerate(zip(t_traj, e_traj)):
        for k, (a, b) in enumerate(zip(tp, ep)):
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol,
                                       err_msg=f"step {step + 1}, param {k}")


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "dampening": 0.3, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.9), "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.01}),
    ("RMSprop", {"lr": 0.005, "alpha": 0.3, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1,
                 "weight_decay": 0.01}),
    ("Adadelta", {"lr": 1.0}),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "weight_decay": 0.01, "maximize": True}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.01, "betas": (0.8, 0.99)}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.01, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
]


def _case_id(case):
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_trajectory_matches_torch(case):
    torch = _torch()
    name, kwargs = case
    t_traj, _ = _trajectory(torch, name, kwargs)
    e_traj, _ = _trajectory(ember, name, kwargs)
    _assert_trajectories(t_traj, e_traj)


def _fed_gradients(lib, name, kwargs, steps=20):
    """A parameter updated with the same given gradients in both libraries (no model)."""
    rng = np.random.default_rng(1)
    w0 = rng.uniform(-1, 1, (5, 13)).astype(np.float32)
    p = lib.nn.Parameter(lib.tensor(w0))
    opt = getattr(lib.optim, name)([p], **kwargs)
    out = []
    for i in range(steps):
        p.grad = lib.tensor(rng.standard_normal((5, 13)).astype(np.float32) * 0.1 ** (i % 3))
        opt.step()
        out.append([p.detach().numpy().copy()])
    return out


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_update_matches_torch_given_the_same_gradients(case):
    # With the gradients fixed, only the update arithmetic differs: it agrees to about one
    # float32 ulp of the parameters' scale after 20 steps. (torch's CPU kernels fuse the
    # multiply-add of add(alpha=...) and lerp; ember rounds twice, see docs/optim.md.)
    torch = _torch()
    name, kwargs = case
    _assert_trajectories(_fed_gradients(torch, name, kwargs), _fed_gradients(ember, name, kwargs),
                         rtol=1e-6, atol=5e-7)


def _versions(lib, name, kwargs, steps=3):
    """The parameter's version after each step (what the user sees of the writes a step
    makes: torch's algorithms write it once, or twice with a decoupled weight decay...)."""
    p = lib.nn.Parameter(lib.tensor([0.5, -1.0, 2.0]))
    opt = getattr(lib.optim, name)([p], **kwargs)
    seen = []
    for _ in range(steps):
        p.grad = p.detach() * 2
        opt.step()
        seen.append(p._version)
    return seen


@pytest.mark.parametrize("case", CASES + [("ASGD", {}), ("ASGD", {"weight_decay": 0.1}),
                                          ("Rprop", {})], ids=_case_id)
def test_a_step_writes_the_parameter_as_often_as_torch(case):
    # AdamW (and decoupled weight decay in NAdam and RAdam) scales the parameter with mul_
    # before its update, NAdam updates it with two addcdiv_, ASGD with mul_ and add_
    torch = _torch()
    name, kwargs = case
    assert _versions(ember, name, kwargs) == _versions(torch, name, kwargs)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True}), ("Adagrad", {"lr": 0.1}),
    ("NAdam", {"lr": 0.01}), ("RAdam", {"lr": 0.01}), ("Adamax", {"lr": 0.01}),
    ("Adadelta", {"lr": 1.0})])
def test_param_groups_trajectory(name, kwargs):
    torch = _torch()
    t_traj, _ = _trajectory(torch, name, kwargs, steps=10, groups=True)
    e_traj, _ = _trajectory(ember, name, kwargs, steps=10, groups=True)
    _assert_trajectories(t_traj, e_traj)


@pytest.mark.parametrize("name,kwargs", [("Adam", {"lr": 0.01, "amsgrad": True}),
                                         ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                         ("NAdam", {"lr": 0.01})])
def test_float64_trajectory(name, kwargs):
    torch = _torch()
    t_traj, _ = _trajectory(torch, name, kwargs, steps=10, dtype=np.float64)
    e_traj, _ = _trajectory(ember, name, kwargs, steps=10, dtype=np.float64)
    assert e_traj[0][0].dtype == np.float64
    _assert_trajectories(t_traj, e_traj, rtol=1e-12, atol=1e-13)


LBFGS_CASES = [
    {"lr": 1, "max_iter": 5},
    {"lr": 0.5, "history_size": 3, "max_iter": 6},
    {"lr": 1, "line_search_fn": "strong_wolfe", "max_iter": 5},
    {"lr": 1, "line_search_fn": "strong_wolfe", "history_size": 4, "max_iter": 8},
    {"lr": 1},
    {"lr": 1, "line_search_fn": "strong_wolfe"},
]


# float32 runs with many inner iterations are left out: see the NOTE below.
LBFGS_PARAMS = [pytest.param(kw, dt, id="-".join(f"{k}={v}" for k, v in kw.items())
                             + "-" + dt.__name__)
                for kw in LBFGS_CASES for dt in (np.float32, np.float64)
                if dt == np.float64 or kw.get("max_iter", 20) <= 6]


@pytest.mark.parametrize("kwargs,dtype", LBFGS_PARAMS)
def test_lbfgs_matches_torch(kwargs, dtype):
    # NOTE: L-BFGS amplifies rounding differences (ember's float32 forward/backward differ from
    # torch's by an ulp here and there) with every inner iteration. In float64 the two agree
    # to ~1e-12, which shows the same algorithm runs; in float32 the check is looser, and
    # only the short runs are compared.
    torch = _torch()
    t_traj, t_opt = _trajectory(torch, "LBFGS", kwargs, steps=3, dtype=dtype, full_batch=True)
    e_traj, e_opt = _trajectory(ember, "LBFGS", kwargs, steps=3, dtype=dtype, full_batch=True)
    if dtype == np.float32:
        _assert_trajectories(t_traj, e_traj, rtol=1e-3, atol=1e-4)
    else:
        _assert_trajectories(t_traj, e_traj, rtol=1e-7, atol=1e-9)
    ts, es = t_opt.state_dict()["state"][0], e_opt.state_dict()["state"][0]
    assert ts.keys() == es.keys()
    assert (es["func_evals"], es["n_iter"]) == (ts["func_evals"], ts["n_iter"])
    assert len(es["old_dirs"]) == len(ts["old_dirs"])


def test_lbfgs_returns_first_loss_and_needs_one_group():
    torch = _torch()
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.tensor([1.5, -0.5]))
        opt = lib.optim.LBFGS([p])

        def closure(opt=opt, p=p):
            opt.zero_grad()
            loss = ((p - 1) ** 2).sum()
            loss.backward()
            return loss

        first = opt.step(closure)
        assert float(first.detach()) == pytest.approx(2.5)
        np.testing.assert_allclose(p.detach().numpy(), [1.0, 1.0], atol=1e-5)
    msgs = []
    for lib in (torch, ember):
        a, b = lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))
        with pytest.raises(ValueError) as e:
            lib.optim.LBFGS([{"params": [a]}, {"params": [b]}])
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


# -- state dicts ---------------------------------------------------------------------------------------
STATE_CASES = [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01, "amsgrad": True}),
               ("AdamW", {"lr": 0.01}), ("RMSprop", {"lr": 0.01, "momentum": 0.5,
                                                      "centered": True}),
               ("Adagrad", {"lr": 0.1}), ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}),
               ("RAdam", {}), ("LBFGS", {"max_iter": 3, "history_size": 2})]


def _state_summary(sd):
    """state_dict as plain data: tensors become (dtype, shape)."""
    def plain(v):
        if hasattr(v, "dtype") and hasattr(v, "shape"):
            return ("tensor", _norm(str(v.dtype)), tuple(v.shape))
        if isinstance(v, (list, tuple)):
            return type(v)(plain(x) for x in v)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return "float" if isinstance(v, float) and not v.is_integer() else v
    return plain(sd)


@pytest.mark.parametrize("name,kwargs", STATE_CASES, ids=[c[0] for c in STATE_CASES])
def test_state_dict_format_matches_torch(name, kwargs):
    torch = _torch()
    _, t_opt = _trajectory(torch, name, kwargs, steps=3)
    _, e_opt = _trajectory(ember, name, kwargs, steps=3)
    ts, es = t_opt.state_dict(), e_opt.state_dict()
    assert _state_summary(es) == _state_summary(ts)
    for k, st in ts["state"].items():
        for key, v in st.items():
            if isinstance(v, torch.Tensor):
                np.testing.assert_allclose(es["state"][k][key].numpy(), v.numpy(),
                                           rtol=1e-4, atol=1e-6, err_msg=key)
            elif not isinstance(v, list):
                assert es["state"][k][key] == pytest.approx(v, rel=1e-5), key


@pytest.mark.parametrize("name,kwargs", STATE_CASES, ids=[c[0] for c in STATE_CASES])
def test_state_dict_round_trip(name, kwargs):
    full, _ = _trajectory(ember, name, kwargs, steps=8)
    w, x, y = _weights()
    l1, l2, params = _build(ember, w)
    opt = _make_opt(ember, name, params, kwargs)

    def run(opt, l1, l2, params, steps, start):
        out = []
        for i in range(start, start + steps):
            xb, yb = _batch(ember, x, y, i)

            def closure(xb=xb, yb=yb):
                opt.zero_grad()
                loss = _loss(ember, l1, l2, xb, yb)
                loss.backward()
                return loss
            if name == "LBFGS":
                opt.step(closure)
            else:
                closure()
                opt.step()
            out.append(_snapshot(params))
        return out

    first = run(opt, l1, l2, params, 4, 0)
    saved = copy.deepcopy(opt.state_dict())
    # A fresh model at the same point and a fresh optimizer loaded from the saved state.
    l1b, l2b, params_b = _build(ember, [p.detach().numpy().copy() for p in params])
    opt_b = _make_opt(ember, name, params_b, kwargs)
    opt_b.load_state_dict(saved)
    second = run(opt_b, l1b, l2b, params_b, 4, 4)
    _assert_trajectories(full, first + second, rtol=1e-6, atol=1e-7)


def test_load_torch_state_dict_into_ember():
    torch = _torch()
    kwargs = {"lr": 0.01, "amsgrad": True}
    full, _ = _trajectory(torch, "Adam", kwargs, steps=10)
    w, x, y = _weights()
    tl1, tl2, tparams = _build(torch, w)
    topt = torch.optim.Adam(tparams, **kwargs)
    for i in range(5):
        xb, yb = _batch(torch, x, y, i)
        topt.zero_grad()
        _loss(torch, tl1, tl2, xb, yb).backward()
        topt.step()
    tsd = topt.state_dict()
    esd = {"state": {k: {n: ember.tensor(v.numpy()) for n, v in s.items()}
                     for k, s in tsd["state"].items()},
           "param_groups": copy.deepcopy(tsd["param_groups"])}
    l1, l2, params = _build(ember, [p.detach().numpy() for p in tparams])
    opt = ember.optim.Adam(params, **kwargs)
    opt.load_state_dict(esd)
    assert opt.state[params[0]]["step"].dtype == ember.float32
    for i in range(5, 10):
        xb, yb = _batch(ember, x, y, i)
        opt.zero_grad()
        _loss(ember, l1, l2, xb, yb).backward()
        opt.step()
        _assert_trajectories([full[i]], [_snapshot(params)])


def test_state_dict_layout():
    p = ember.nn.Parameter(ember.ones(3))
    q = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.Adam([{"params": [p]}, {"params": [q], "lr": 0.5}])
    p.grad = ember.ones(3)
    opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [0]
    step = sd["state"][0]["step"]
    assert isinstance(step, ember.Tensor) and step.dtype == ember.float32 and step.dim() == 0
    assert repr(step) == "tensor(1.)"
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5
    # state is keyed by the parameter itself, and is a defaultdict
    assert set(opt.state) == {p}
    assert opt.state[q] == {}


def test_load_state_dict_errors_match_torch():
    torch = _torch()

    def mismatch_groups(lib):
        a, b = lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))
        sd = lib.optim.SGD([a, b], lr=0.1).state_dict()
        lib.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)

    def mismatch_size(lib):
        a, b = lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))
        sd = lib.optim.SGD([a, b], lr=0.1).state_dict()
        lib.optim.SGD([a], lr=0.1).load_state_dict(sd)

    for body in (mismatch_groups, mismatch_size):
        _same_error(torch, body)


def test_load_state_dict_casts_state_to_param_dtype():
    p = ember.nn.Parameter(ember.ones(3, dtype=ember.float64))
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
    sd = {"state": {0: {"momentum_buffer": ember.ones(3)}},
          "param_groups": opt.state_dict()["param_groups"]}
    opt.load_state_dict(sd)
    assert opt.state[p]["momentum_buffer"].dtype == ember.float64


# -- errors, warnings, reprs ----------------------------------------------------------------------------
def _outcome(fn, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(lib)
            err = None
        except Exception as e:  # noqa: BLE001 - the error is what we compare
            err = (type(e).__name__, _norm(str(e)))
    return err, [(w.category.__name__, _norm(str(w.message))) for w in caught]


def _same_error(torch, fn, expect_error=True):
    t, e = _outcome(fn, torch), _outcome(fn, ember)
    assert e == t
    if expect_error:
        assert t[0] is not None
    return e


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax",
                                  "NAdam", "RAdam"])
def test_complex_parameters_match_torch(name):
    torch = _torch()
    rng = np.random.default_rng(0)
    w = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(w))
        opt = getattr(lib.optim, name)([p], **({"lr": 0.1, "momentum": 0.9} if name == "SGD"
                                                else {"lr": 0.05}))
        out = []
        for i in range(5):
            p.grad = lib.tensor((w * (i + 1) - 0.5j).astype(np.complex64))
            opt.step()
            out.append([p.detach().numpy().copy()])
        return out

    _assert_trajectories(run(torch), run(ember))


def _two_groups(lib):
    p = lib.nn.Parameter(lib.zeros(2))
    lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)


ERROR_BODIES = {
    "empty": lambda lib: lib.optim.SGD([], lr=0.1),
    "tensor-params": lambda lib: lib.optim.Adam(lib.zeros(2, requires_grad=True)),
    "not-a-tensor": lambda lib: lib.optim.SGD([3], lr=0.1),
    "non-leaf": lambda lib: lib.optim.SGD([lib.zeros(2, requires_grad=True) * 2], lr=0.1),
    "two-groups": lambda lib: _two_groups(lib),
    "set": lambda lib: lib.optim.SGD([{"params": {lib.nn.Parameter(lib.zeros(2))}}], lr=0.1),
    "group-not-dict": lambda lib: lib.optim.SGD(
        [lib.nn.Parameter(lib.zeros(2))], lr=0.1).add_param_group([1]),
    "names-mixed": lambda lib: lib.optim.SGD(
        [("a", lib.nn.Parameter(lib.zeros(2))), lib.nn.Parameter(lib.zeros(2))], lr=0.1),
    "sgd-lr": lambda lib: lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=-0.1),
    "sgd-momentum": lambda lib: lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], momentum=-1),
    "sgd-wd": lambda lib: lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], weight_decay=-1),
    "nesterov": lambda lib: lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=0.1,
                                          nesterov=True),
    "adam-beta0": lambda lib: lib.optim.Adam([lib.nn.Parameter(lib.zeros(2))],
                                             betas=(1.0, 0.9)),
    "adam-beta1": lambda lib: lib.optim.Adam([lib.nn.Parameter(lib.zeros(2))],
                                             betas=(0.9, -0.1)),
    "adam-eps": lambda lib: lib.optim.Adam([lib.nn.Parameter(lib.zeros(2))], eps=-1.0),
    "adam-wd": lambda lib: lib.optim.AdamW([lib.nn.Parameter(lib.zeros(2))],
                                           weight_decay=-1.0),
    "adam-betas-types": lambda lib: lib.optim.Adam([lib.nn.Parameter(lib.zeros(2))],
                                                   betas=(0, 0.9)),
    "rmsprop-alpha": lambda lib: lib.optim.RMSprop([lib.nn.Parameter(lib.zeros(2))],
                                                   alpha=-0.5),
    "adagrad-lr-decay": lambda lib: lib.optim.Adagrad([lib.nn.Parameter(lib.zeros(2))],
                                                      lr_decay=-1),
    "adagrad-init": lambda lib: lib.optim.Adagrad([lib.nn.Parameter(lib.zeros(2))],
                                                  initial_accumulator_value=-1),
    "adadelta-rho": lambda lib: lib.optim.Adadelta([lib.nn.Parameter(lib.zeros(2))], rho=1.5),
    "nadam-momentum-decay": lambda lib: lib.optim.NAdam([lib.nn.Parameter(lib.zeros(2))],
                                                        momentum_decay=-1),
    "lbfgs-lr": lambda lib: lib.optim.LBFGS([lib.nn.Parameter(lib.zeros(2))], lr=-1),
    "tensor-lr": lambda lib: lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))],
                                           lr=lib.tensor([0.1, 0.2])),
    # torch's foreach Adam takes tensor hyperparameters only when capturable
    "adam-foreach-tensor-lr": lambda lib: lib.optim.AdamW(
        [lib.nn.Parameter(lib.zeros(2))], lr=lib.tensor(0.1), foreach=True),
    "adam-foreach-tensor-betas": lambda lib: lib.optim.Adam(
        [lib.nn.Parameter(lib.zeros(2))], betas=(lib.tensor(0.9), lib.tensor(0.99)),
        foreach=True),
    "adam-foreach-tensor-lr-set-later": lambda lib: _step_after_setting_lr(
        lib, lib.optim.Adam, lib.tensor(0.1), foreach=True),
}


def _step_after_setting_lr(lib, make, lr, **kwargs):
    p = lib.nn.Parameter(lib.zeros(2))
    opt = make([p], **kwargs)
    opt.param_groups[0]["lr"] = lr
    p.grad = lib.ones(2)
    opt.step()


@pytest.mark.parametrize("case", sorted(ERROR_BODIES))
def test_errors_match_torch(case):
    torch = _torch()
    _same_error(torch, ERROR_BODIES[case])


def test_duplicate_parameter_warning_matches_torch():
    torch = _torch()

    def body(lib):
        p = lib.nn.Parameter(lib.zeros(2))
        lib.optim.SGD([p, p], lr=0.1)

    _, warns = _same_error(torch, body, expect_error=False)
    assert warns and "duplicate parameters" in warns[0][1]


def test_lbfgs_rejects_unknown_line_search():
    torch = _torch()

    def body(lib):
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        opt = lib.optim.LBFGS([p], line_search_fn="backtracking")

        def closure():
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss.detach()
        opt.step(closure)

    _same_error(torch, body)


REPR_CASES = [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {}), ("AdamW", {"amsgrad": True}),
              ("RMSprop", {}), ("Adagrad", {}), ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}),
              ("RAdam", {}), ("LBFGS", {})]


@pytest.mark.parametrize("name,kwargs", REPR_CASES, ids=[c[0] for c in REPR_CASES])
def test_repr_matches_torch(name, kwargs):
    torch = _torch()

    def make(lib):
        a, b = lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))
        groups = [a, b] if name == "LBFGS" else [{"params": [a]}, {"params": [b], "lr": 0.5}]
        return getattr(lib.optim, name)(groups, **kwargs)

    assert repr(make(ember)) == repr(make(torch))
    assert make(ember).state_dict()["param_groups"] == make(torch).state_dict()["param_groups"]


def test_sgd_repr_text():
    p = ember.nn.Parameter(ember.zeros(2))
    assert repr(ember.optim.SGD([p], lr=0.1)) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
        "    foreach: None\n    fused: None\n    lr: 0.1\n    maximize: False\n"
        "    momentum: 0\n    nesterov: False\n    weight_decay: 0\n)")


# -- behaviour -----------------------------------------------------------------------------------------
def test_param_groups_defaults_and_add_param_group():
    torch = _torch()

    def body(lib):
        a, b, c = (lib.nn.Parameter(lib.zeros(2)) for _ in range(3))
        opt = lib.optim.SGD([{"params": [a]}, {"params": (b,), "momentum": 0.5}], lr=0.1)
        opt.add_param_group({"params": c, "lr": 0.01})
        groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
        kinds = [type(g["params"]).__name__ for g in opt.param_groups]
        opt.add_param_group({"params": [a]})
        return groups, kinds

    t, e = _outcome(body, torch), _outcome(body, ember)
    assert e == t
    assert t[0] == ("ValueError", "some parameters appear in more than one parameter group")


def test_named_parameters_give_param_names():
    l1 = ember.nn.Linear(2, 2)
    opt = ember.optim.SGD(l1.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [ember.nn.Parameter(ember.zeros(1))]})


def test_zero_grad():
    p = ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and p.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_params_without_grad_are_skipped():
    torch = _torch()

    def body(lib):
        a, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        out = []
        for name in ("SGD", "Adam", "RMSprop", "Adagrad", "NAdam"):
            opt = getattr(lib.optim, name)([a, b], lr=0.1, **(
                {"momentum": 0.9} if name == "SGD" else {}))
            a.grad = lib.ones(2)
            opt.step()
            out.append((name, sorted(opt.state_dict()["state"]), b.tolist()))
        return out

    t, e = _outcome(body, torch), _outcome(body, ember)
    assert e == t


def test_step_updates_in_place_under_no_grad_and_bumps_version():
    p = ember.nn.Parameter(ember.ones(3))
    data = p._data
    opt = ember.optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    v = p._version
    assert ember.is_grad_enabled()
    opt.step()
    assert ember.is_grad_enabled()
    assert p._data is data and p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p._version > v


def test_step_invalidates_saved_tensors_like_torch():
    torch = _torch()

    def body(lib):
        p = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.SGD([p], lr=0.1)
        y = (p * p).sum()
        p.grad = lib.ones(3)
        opt.step()
        y.backward()

    _same_error(torch, body)


def test_closure_runs_with_grad_enabled_and_returns_loss():
    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = ember.optim.SGD([p], lr=0.1)
    seen = []

    def closure():
        seen.append(ember.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert opt.step() is None


def test_step_hooks():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    calls = []

    def pre(o, args, kwargs):
        calls.append(("pre", o is opt, args, kwargs))

    def post(o, args, kwargs):
        calls.append(("post", o is opt))

    h1 = opt.register_step_pre_hook(pre)
    h2 = opt.register_step_post_hook(post)
    g = ember.optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: calls.append("g"))
    p.grad = ember.ones(2)
    opt.step()
    assert calls == [("pre", True, (opt,), {}), ("post", True), "g"]
    h1.remove()
    h2.remove()
    g.remove()
    opt.step()
    assert len(calls) == 3
    # A pre hook may replace the arguments.
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: 7}))
    assert opt.step() == 7


def test_state_dict_hooks():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1
    seen = []
    opt.register_load_state_dict_post_hook(lambda o: seen.append(o))
    opt.load_state_dict(opt.state_dict())
    assert seen == [opt]


def test_deepcopy_and_pickle_keep_optimizer_usable():
    import pickle
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(2)
    opt.step()
    opt2 = pickle.loads(pickle.dumps(opt))
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    assert copy.deepcopy(opt).state_dict()["state"][0]["step"].item() == 1.0


def test_tensor_lr():
    torch = _torch()
    t_traj, _ = _trajectory(torch, "Adam", {"lr": torch.tensor(0.01)}, steps=5)
    e_traj, _ = _trajectory(ember, "Adam", {"lr": ember.tensor(0.01)}, steps=5)
    _assert_trajectories(t_traj, e_traj)


def test_training_reduces_loss():
    w, x, y = _weights(3)
    l1, l2, params = _build(ember, w)
    opt = ember.optim.Adam(params, lr=0.05)
    xt, yt = ember.tensor(x), ember.tensor(y)
    first = None
    for _ in range(100):
        opt.zero_grad()
        loss = _loss(ember, l1, l2, xt, yt)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.5 * first


def test_custom_optimizer_subclass():
    # The pattern of torch's tutorials: a subclass with its own step, using Tensor ops.
    class PlainSGD(ember.optim.Optimizer):
        def __init__(self, params, lr=ember.optim.optimizer.required):
            super().__init__(params, {"lr": lr})

        @ember.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])

    p = ember.nn.Parameter(ember.ones(2))
    with pytest.raises(ValueError, match="didn't specify a value of required optimization"):
        PlainSGD([p])
    opt = PlainSGD([p], lr=0.5)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    (p * p).sum().backward()
    opt.step()
    assert p.tolist() == [0.0, 0.0] and calls == [1]
    assert repr(opt) == "PlainSGD (\nParameter Group 0\n    lr: 0.5\n)"


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adadelta", "Adamax", "NAdam", "RAdam",
                                  "RMSprop"])
def test_capturable_on_cpu_fails_at_step_like_torch(name):
    torch = _torch()

    def body(lib):
        p = lib.nn.Parameter(lib.ones(3))
        opt = getattr(lib.optim, name)([p], lr=0.1, capturable=True)
        opt.step()  # no gradient yet: nothing is checked
        p.grad = lib.ones(3)
        opt.step()

    err, _ = _same_error(torch, body)
    assert err[0] == "AssertionError"


def test_rprop_of_a_0_dim_parameter_and_a_nan_gradient():
    # torch's sign is 0 at NaN: a NaN gradient leaves the step size and the parameter as they
    # are (NumPy's sign would spread the NaN); a 0-dim parameter steps as any other
    torch = _torch()

    def run(lib):
        a = lib.tensor(-1.31, dtype=lib.float64, requires_grad=True)
        b = lib.tensor([[1.47, -0.52], [float("nan"), 1.51], [0.5, -1.54]], requires_grad=True)
        opt = lib.optim.Rprop([a, b])
        seen = []
        for _ in range(3):
            (a * 2).backward()
            b.softmax(-1).pow(2).sum().backward()
            opt.step()
            seen.append([a.item(), b.tolist(), a._version, b._version])
        return seen
    assert repr(run(ember)) == repr(run(torch))


def _differentiable(lib, name, kwargs, leaf=False, steps=3, dtype=None):
    """``name``(differentiable=True) stepping a clone of ``w`` (or ``w`` itself) with
    gradients that require grad: the loss after the steps is differentiated back to ``w`` (and
    to tensor hyperparameters that require grad: ``tensor_lr``, ``tensor_betas``,
    ``tensor_weight_decay``), through the optimizer's state."""
    kwargs = dict(kwargs)
    steps = kwargs.pop("steps", steps)
    w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True, dtype=dtype)
    p = w if leaf else w.clone()
    hyper = []
    for key in ("lr", "weight_decay"):
        if kwargs.pop(f"tensor_{key}", False):
            kwargs[key] = lib.tensor(0.1, requires_grad=True)
            hyper.append(kwargs[key])
    if kwargs.pop("tensor_betas", False):
        kwargs["betas"] = (lib.tensor(0.8, requires_grad=True),
                           lib.tensor(0.9, requires_grad=True))
        hyper += kwargs["betas"]
    kwargs.setdefault("lr", 0.1)
    opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
    for i in range(steps):
        p.grad = lib.tensor([0.5, 1.0, -1.5], requires_grad=True, dtype=dtype) * (i + 1)
        opt.step()
    grads = lib.autograd.grad((p * p).sum(), [w, *hyper])
    return p, grads, {k: v for k, v in opt.state[p].items()}


@pytest.mark.parametrize("kwargs", [
    {}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
    {"momentum": 0.5, "dampening": 0.3, "maximize": True}, {"tensor_lr": True}],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()) or "plain")
@pytest.mark.parametrize("leaf", [False, True], ids=["clone", "leaf"])
def test_differentiable_sgd_matches_torch(kwargs, leaf):
    """torch's differentiable SGD records its update (a leaf parameter gets the in-place
    error); reading the assigned .grad of a non-leaf does not warn."""
    same(lambda lib: _differentiable(lib, "SGD", kwargs, leaf), rtol=1e-6, atol=1e-6)


_DIFFERENTIABLE = [
    ("Adam", {}), ("Adam", {"tensor_lr": True}), ("Adam", {"tensor_betas": True}),
    ("Adam", {"tensor_weight_decay": True}), ("Adam", {"weight_decay": 0.1, "maximize": True}),
    ("Adam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("Adam", {"amsgrad": True}),  # (torch's own update then refuses the backward)
    ("AdamW", {}), ("AdamW", {"tensor_lr": True, "amsgrad": False, "weight_decay": 0.3}),
    ("RMSprop", {}), ("RMSprop", {"weight_decay": 0.1, "maximize": True, "alpha": 0.9}),
    ("RMSprop", {"centered": True}), ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"tensor_lr": True}),  # (torch's TypeError from addcdiv_)
    ("Adagrad", {}), ("Adagrad", {"lr_decay": 0.1, "weight_decay": 0.1, "maximize": True}),
    ("Adagrad", {"tensor_lr": True}),
    ("NAdam", {}), ("NAdam", {"weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1, "tensor_lr": True}),
    ("RAdam", {}), ("RAdam", {"steps": 7, "betas": (0.5, 0.6)}),  # (rectified from step 6)
    ("RAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1, "maximize": True}),
    ("Adadelta", {}), ("Adadelta", {"weight_decay": 0.1, "rho": 0.5, "maximize": True}),
    ("Adadelta", {"tensor_lr": True}),  # (torch's TypeError from add_)
    ("ASGD", {}), ("ASGD", {"t0": 1, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {"steps": 1}), ("Rprop", {"steps": 1, "maximize": True}),
    ("Rprop", {}),  # (torch's own update then refuses the backward)
]


@pytest.mark.parametrize("name,kwargs", _DIFFERENTIABLE,
                         ids=[f"{n}-" + ("-".join(f"{k}={v}" for k, v in kw.items()) or "plain")
                              for n, kw in _DIFFERENTIABLE])
def test_differentiable_optimizers_match_torch(name, kwargs):
    """torch's differentiable updates: gradients flow to the initial parameters and tensor
    hyperparameters through every step (and the updates' in-place writes are refused in
    backward where torch's are)."""
    same(lambda lib: _differentiable(lib, name, kwargs), rtol=1e-5, atol=1e-6)


def test_differentiable_adamax_refuses_its_own_overwritten_state():
    """torch's differentiable Adamax writes in place into tensors its graph saved, so a second
    step's backward is refused (ember finds another of those tensors first)."""
    torch = torch_or_skip()
    prefix = ("one of the variables needed for gradient computation has been modified by an "
              "inplace operation")
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=prefix):
            _differentiable(lib, "Adamax", {})
    same(lambda lib: _differentiable(lib, "Adamax", {"steps": 1, "weight_decay": 0.1}))


@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adadelta",
                                  "ASGD"])
def test_differentiable_float64_and_leaf(name):
    same(lambda lib: _differentiable(lib, name, {}, dtype=lib.float64), rtol=1e-10, atol=1e-12)
    same(lambda lib: _differentiable(lib, name, {}, leaf=True))


def test_differentiable_adam_refuses_a_step_that_requires_grad():
    def body(torch):
        p = torch.tensor([1.0, 2.0], requires_grad=True).clone()
        opt = torch.optim.Adam([p], differentiable=True)
        p.grad = torch.ones(2)
        opt.step()
        opt.state[p]["step"].requires_grad_()
        opt.step()
    same(body)


def test_a_custom_optimizer_may_be_differentiable():
    """torch's base class takes differentiable=True from any optimizer: its step decorator
    turns grad mode on for it."""
    def body(torch):
        from torch.optim.optimizer import _use_grad_for_differentiable

        class Plain(torch.optim.Optimizer):
            def __init__(self, params, differentiable):
                super().__init__(params, {"lr": 0.5, "differentiable": differentiable})

            @_use_grad_for_differentiable
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        p.sub_(p.grad * group["lr"])
                return torch.is_grad_enabled()

        w = torch.tensor([1.0, 2.0], requires_grad=True)
        p = w.clone()
        opt = Plain([p], differentiable=True)
        p.grad = torch.tensor([1.0, -1.0])
        enabled = opt.step()
        return enabled, torch.autograd.grad(p.pow(2).sum(), w), Plain(
            [torch.nn.Parameter(torch.ones(1))], differentiable=False).step()
    same(body)


def test_sgd_plain_step_bumps_versions_and_profiles_as_torch():
    """SGD's usual update (no momentum, weight decay or hooks) writes the arrays and bumps
    each parameter's version itself; hooks added later still run, and a profiler sees the
    step's range under torch's name."""
    torch = pytest.importorskip("torch")
    seen = {}
    for lib in (torch, ember):
        w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = lib.tensor([0.5], requires_grad=True)
        opt = lib.optim.SGD([w, b], lr=0.1)
        (w * w).sum().add(b.sum() * 3).backward()
        opt.step()
        versions = [w._version, b._version]
        calls = []
        opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
        with lib.profiler.profile() as prof:
            opt.step()
        names = {e.key for e in prof.key_averages()}
        seen[lib.__name__] = (w.tolist() + b.tolist(), versions, [w._version, b._version],
                              calls, "Optimizer.step#SGD.step" in names)
    # (values to float32 rounding: torch's add_ with alpha may round p - lr * g once)
    np.testing.assert_allclose(seen["ember"][0], seen["torch"][0], rtol=1e-6)
    assert seen["ember"][1:] == seen["torch"][1:]


_BIT_EXACT = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01,
             "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.01}),
]
# (ASGD's foreach path follows another formula: docs/optim.md)
_BIT_EXACT_SINGLE = [("ASGD", {"lr": 0.01, "weight_decay": 0.01})]


def _twenty_float32_steps(lib, name, kwargs, foreach, seed, dtype=np.float32):
    """The parameter and optimizer after 20 steps on random float32 (``dtype``) gradients."""
    rng = np.random.default_rng(seed)
    start = rng.standard_normal((37, 29)).astype(dtype)
    grads = [rng.standard_normal((37, 29)).astype(dtype) for _ in range(20)]
    p = lib.nn.Parameter(lib.tensor(start))
    opt = getattr(lib.optim, name)([p], foreach=foreach, **kwargs)
    for g in grads:
        p.grad = lib.tensor(g)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,kwargs,foreach",
                         [(n, k, f) for n, k in _BIT_EXACT for f in (False, True)]
                         + [(n, k, False) for n, k in _BIT_EXACT_SINGLE])
def test_float32_trajectory_is_torchs_bits(name, kwargs, foreach):
    """20 float32 steps give torch's parameter bit for bit (its add(alpha=...) updates round
    once, a fused multiply-add)."""
    torch = torch_or_skip()
    got, _ = _twenty_float32_steps(ember, name, kwargs, foreach, 7)
    expected, _ = _twenty_float32_steps(torch, name, kwargs, foreach, 7)
    np.testing.assert_array_equal(got.detach().numpy().view(np.uint32),
                                  expected.detach().numpy().view(np.uint32))


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("name,key", [
    ("Adam", "exp_avg_sq"), ("AdamW", "exp_avg_sq"), ("NAdam", "exp_avg_sq"),
    ("RAdam", "exp_avg_sq"), ("RMSprop", "square_avg"), ("Adagrad", "sum"),
    ("Adadelta", "square_avg"), ("Adamax", "exp_inf"), ("Adam", "exp_avg")])
def test_float32_gradient_statistics_are_torchs_bits(name, key, foreach):
    """The running statistics of the gradients (torch's mul_ then addcmul_, one rounding)
    equal torch's bit for bit after 20 float32 steps. (The parameters still differ where the
    update takes a square root: torch's float32 sqrt is not IEEE's, docs/optim.md.)"""
    torch = torch_or_skip()
    p, opt = _twenty_float32_steps(ember, name, {}, foreach, 8)
    tp, topt = _twenty_float32_steps(torch, name, {}, foreach, 8)
    np.testing.assert_array_equal(opt.state[p][key].numpy().view(np.uint32),
                                  topt.state[tp][key].numpy().view(np.uint32))


@pytest.mark.parametrize("name,kwargs", _BIT_EXACT + _BIT_EXACT_SINGLE + [("RAdam", {})])
def test_float64_trajectory_is_torchs_bits(name, kwargs):
    """float64 updates are fused too (torch's double fmadd)."""
    torch = torch_or_skip()
    got, _ = _twenty_float32_steps(ember, name, kwargs, False, 9, np.float64)
    expected, _ = _twenty_float32_steps(torch, name, kwargs, False, 9, np.float64)
    np.testing.assert_array_equal(got.detach().numpy().view(np.uint64),
                                  expected.detach().numpy().view(np.uint64))
