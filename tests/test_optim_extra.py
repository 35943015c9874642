"""ASGD, Rprop, Adafactor, Muon, SparseAdam, swa_utils and swap_in_optimizer_params_and_state
against torch: trajectories, state dicts, schedules, averaged models, errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.optim
from tests.oracle import same
from tests.test_optim import _assert_trajectories, _fed_gradients, _torch, _trajectory

CASES = [
    ("ASGD", {"lr": 0.05}),
    ("ASGD", {"lr": 0.05, "t0": 3, "lambd": 0.01, "weight_decay": 0.01}),
    ("ASGD", {"lr": 0.05, "t0": 2, "alpha": 0.5, "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.01, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.05)}),
    ("Rprop", {"lr": 0.01, "maximize": True}),
    ("Adafactor", {"lr": 0.01}),
    ("Adafactor", {"lr": 0.05, "weight_decay": 0.1, "d": 2.0, "eps": (1e-8, 1e-2)}),
    ("Adafactor", {"lr": 0.01, "beta2_decay": -0.5, "maximize": True}),
]


def _case_id(case):
    return case[0] + "-" + "-".join(f"{k}={v}" for k, v in case[1].items())


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_trajectory_matches_torch(case):
    torch = _torch()
    name, kwargs = case
    t_traj, t_opt = _trajectory(torch, name, kwargs, steps=12)
    e_traj, e_opt = _trajectory(ember, name, kwargs, steps=12)
    _assert_trajectories(t_traj, e_traj)
    # and the state each keeps (ASGD's average, Rprop's step sizes, Adafactor's factors)
    for tp, ep in zip(t_opt.state.values(), e_opt.state.values()):
        assert tp.keys() == ep.keys()
        for key in tp:
            np.testing.assert_allclose(ep[key].numpy(), tp[key].numpy(), rtol=1e-4, atol=1e-6,
                                       err_msg=key)
            assert str(ep[key].dtype)[6:] == str(tp[key].dtype)[6:], key


@pytest.mark.parametrize("case", CASES[::3], ids=_case_id)
def test_update_given_the_same_gradients(case):
    torch = _torch()
    name, kwargs = case
    _assert_trajectories(_fed_gradients(torch, name, kwargs, steps=12),
                         _fed_gradients(ember, name, kwargs, steps=12), rtol=1e-6, atol=5e-7)


@pytest.mark.parametrize("case", CASES[::3], ids=_case_id)
def test_state_dict_round_trip(case):
    """Stopping after 5 steps, saving and loading into a new optimizer continues the same
    trajectory; the state dict has torch's layout."""
    torch = _torch()
    name, kwargs = case
    full, _ = _trajectory(ember, name, kwargs, steps=8)
    _, opt = _trajectory(ember, name, kwargs, steps=5)
    saved = copy.deepcopy(opt.state_dict())
    params = [p for g in opt.param_groups for p in g["params"]]
    fresh = getattr(ember.optim, name)(params, **kwargs)
    fresh.load_state_dict(saved)
    assert fresh.state_dict()["param_groups"] == saved["param_groups"]
    from tests.test_optim import _batch, _loss, _weights
    _, x, y = _weights()
    # the model of _trajectory: rebuild its forward from the parameters
    l1 = ember.nn.Linear(4, 8)
    l2 = ember.nn.Linear(8, 3)
    l1.weight, l1.bias, l2.weight, l2.bias = params
    for i in range(5, 8):
        fresh.zero_grad()
        xb, yb = _batch(ember, x, y, i)
        _loss(ember, l1, l2, xb, yb).backward()
        fresh.step()
    for a, b in zip(full[-1], [p.detach().numpy() for p in params]):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    _, t_opt = _trajectory(torch, name, kwargs, steps=5)
    t_sd, e_sd = t_opt.state_dict(), opt.state_dict()
    assert t_sd["param_groups"] == e_sd["param_groups"]
    for k in t_sd["state"]:
        assert sorted(t_sd["state"][k]) == sorted(e_sd["state"][k])


def _muon_run(lib, kwargs, steps=8):
    rng = np.random.default_rng(1)
    p = lib.nn.Parameter(lib.tensor(rng.uniform(-1, 1, (6, 4)).astype(np.float32)))
    opt = lib.optim.Muon([p], **kwargs)
    out = []
    for _ in range(steps):
        p.grad = lib.tensor(rng.standard_normal((6, 4)).astype(np.float32))
        opt.step()
        out.append([p.detach().numpy().copy()])
    return out


@pytest.mark.parametrize("kwargs", [{"lr": 0.02}, {"lr": 0.02, "nesterov": False,
                                                   "adjust_lr_fn": "match_rms_adamw",
                                                   "weight_decay": 0.0}])
def test_muon_trajectory(kwargs):
    # torch runs the Newton-Schulz iterations in bfloat16, ember in float32: the
    # orthogonalised updates agree to bfloat16's precision (about 3 digits)
    torch = _torch()
    _assert_trajectories(_muon_run(torch, kwargs), _muon_run(ember, kwargs), rtol=0, atol=3e-3)


def _p(lib, *shape):
    return lib.nn.Parameter(lib.ones(*shape))


ERRORS = {
    "asgd_lr": lambda m: m.optim.ASGD([_p(m, 2)], lr=-1.0),
    "asgd_wd": lambda m: m.optim.ASGD([_p(m, 2)], weight_decay=-1.0),
    "rprop_etas": lambda m: m.optim.Rprop([_p(m, 2)], etas=(1.5, 1.2)),
    "rprop_lr": lambda m: m.optim.Rprop([_p(m, 2)], lr=-0.1),
    "adafactor_lr": lambda m: m.optim.Adafactor([_p(m, 2)], lr=-0.1),
    "adafactor_decay": lambda m: m.optim.Adafactor([_p(m, 2)], beta2_decay=0.5),
    "adafactor_eps1": lambda m: m.optim.Adafactor([_p(m, 2)], eps=(-1.0, 1e-3)),
    "adafactor_eps2": lambda m: m.optim.Adafactor([_p(m, 2)], eps=(None, -1.0)),
    "adafactor_d": lambda m: m.optim.Adafactor([_p(m, 2)], d=0.5),
    "adafactor_wd": lambda m: m.optim.Adafactor([_p(m, 2)], weight_decay=-1.0),
    "adafactor_complex": lambda m: _step_with_grad(m, m.optim.Adafactor, m.complex64),
    "muon_1d": lambda m: m.optim.Muon([_p(m, 3)]),
    "muon_fn": lambda m: m.optim.Muon([_p(m, 3, 2)], adjust_lr_fn="x"),
    "muon_momentum": lambda m: m.optim.Muon([_p(m, 3, 2)], momentum=-1.0),
    "muon_ns_steps": lambda m: _step_with_grad(m, lambda ps: m.optim.Muon(ps, ns_steps=100),
                                               shape=(3, 2)),
    "sparse_adam_dense": lambda m: _step_with_grad(m, m.optim.SparseAdam),
    "sparse_adam_lr": lambda m: m.optim.SparseAdam([_p(m, 2)], lr=0.0),
    "sparse_adam_eps": lambda m: m.optim.SparseAdam([_p(m, 2)], eps=0.0),
    "sparse_adam_beta": lambda m: m.optim.SparseAdam([_p(m, 2)], betas=(1.0, 0.9)),
    "sparse_adam_complex": lambda m: m.optim.SparseAdam(
        [m.nn.Parameter(m.ones(2, dtype=m.complex64))]),
    "ema_decay": lambda m: m.optim.swa_utils.get_ema_multi_avg_fn(1.5),
    "swalr_strategy": lambda m: m.optim.swa_utils.SWALR(m.optim.SGD([_p(m, 2)], lr=0.1), 0.05,
                                                        anneal_strategy="exp"),
    "swalr_epochs": lambda m: m.optim.swa_utils.SWALR(m.optim.SGD([_p(m, 2)], lr=0.1), 0.05,
                                                      anneal_epochs=-1),
    "swalr_lrs": lambda m: m.optim.swa_utils.SWALR(m.optim.SGD([_p(m, 2)], lr=0.1), [0.1, 0.2]),
    "averaged_fns": lambda m: m.optim.swa_utils.AveragedModel(
        m.nn.Linear(2, 2), avg_fn=m.optim.swa_utils.get_swa_avg_fn(),
        multi_avg_fn=m.optim.swa_utils.get_swa_multi_avg_fn()),
}


def _step_with_grad(m, make, dtype=None, shape=(2,)):
    p = m.nn.Parameter(m.ones(*shape, dtype=dtype))
    opt = make([p])
    p.grad = m.ones_like(p)
    opt.step()
    return p


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    same(lambda lib: ERRORS[name](lib))


def test_reprs_and_defaults():
    def body(torch):
        ps = [torch.nn.Parameter(torch.ones(2, 2))]
        return [repr(cls(ps)) for cls in (torch.optim.ASGD, torch.optim.Rprop,
                                           torch.optim.Adafactor, torch.optim.SparseAdam,
                                           torch.optim.Muon)]
    same(body)


# -- swa_utils ----------------------------------------------------------------------------------
def _net(lib):
    rng = np.random.default_rng(4)
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.tensor(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32)))
    return net


def _averaging(lib, make_averaged, steps=4):
    net = _net(lib)
    avg = make_averaged(lib, net)
    opt = lib.optim.SGD(net.parameters(), lr=0.1)
    x = lib.tensor(np.random.default_rng(5).standard_normal((8, 3)).astype(np.float32))
    for _ in range(steps):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
        avg.update_parameters(net)
    return ([p.detach() for p in avg.parameters()], list(avg.buffers()),
            avg(x).detach(), avg.n_averaged)


def _swa(lib):
    return lib.optim.swa_utils


AVERAGED = {
    "swa": lambda m, net: _swa(m).AveragedModel(net),
    "ema_multi": lambda m, net: _swa(m).AveragedModel(
        net, multi_avg_fn=_swa(m).get_ema_multi_avg_fn(0.9)),
    "swa_multi": lambda m, net: _swa(m).AveragedModel(
        net, multi_avg_fn=_swa(m).get_swa_multi_avg_fn()),
    "ema_avg_fn": lambda m, net: _swa(m).AveragedModel(net, avg_fn=_swa(m).get_ema_avg_fn(0.8)),
    "swa_avg_fn_buffers": lambda m, net: _swa(m).AveragedModel(
        net, avg_fn=_swa(m).get_swa_avg_fn(), use_buffers=True),
    "ema_buffers": lambda m, net: _swa(m).AveragedModel(
        net, multi_avg_fn=_swa(m).get_ema_multi_avg_fn(0.5), use_buffers=True),
}


@pytest.mark.parametrize("name", list(AVERAGED))
def test_averaged_model(name):
    same(lambda lib: _averaging(lib, AVERAGED[name]), rtol=1e-5, atol=1e-6, grad_fn=False)


def test_swalr_schedule_and_state():
    def body(torch):
        p = torch.nn.Parameter(torch.ones(2))
        opt = torch.optim.SGD([{"params": [p]}, {"params": [torch.nn.Parameter(torch.ones(1))],
                                                  "lr": 0.5}], lr=0.1)
        out = []
        for strategy, epochs in (("cos", 3), ("linear", 4), ("cos", 0)):
            sched = torch.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.02],
                                                anneal_epochs=epochs,
                                                anneal_strategy=strategy)
            for _ in range(6):
                opt.step()
                sched.step()
                out.append(sched.get_last_lr())
            state = sched.state_dict()
            out.append(sorted(k for k in state if k != "_last_lr"))
            sched.load_state_dict(state)
        return out
    same(body)


def test_update_bn():
    def body(torch):
        net = _net(torch)
        data = [torch.tensor(np.random.default_rng(6).standard_normal((5, 3)).astype(np.float32))
                for _ in range(3)]
        loader = [(x, 0) for x in data]
        net.eval()
        torch.optim.swa_utils.update_bn(loader, net)
        bn = net[1]
        torch.optim.swa_utils.update_bn(data, torch.nn.Linear(2, 2))  # no batch norm: no-op
        return bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.momentum, net.training
    same(body, rtol=1e-6, atol=1e-7)


def test_swap_in_optimizer_params_and_state():
    def body(torch):
        p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
        opt = torch.optim.Adam([p], lr=0.1)
        p.grad = torch.tensor([0.5, -0.5])
        opt.step()
        other = torch.nn.Parameter(torch.tensor([10.0, 20.0]))
        other.grad = torch.tensor([1.0, 1.0])
        swap_state = copy.deepcopy(opt.state_dict())
        swap_state["param_groups"][0]["lr"] = 1.0
        with torch.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, swap_state):
            opt.step()
            inside = (opt.param_groups[0]["lr"], opt.param_groups[0]["params"][0] is other)
        errors = []
        for bad in ({"state": [], "param_groups": []}, {"state": {}, "param_groups": {}},
                    {"state": {5: {}}, "param_groups": swap_state["param_groups"]}):
            try:
                with torch.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, bad):
                    pass
            except RuntimeError as e:
                errors.append(str(e))
        return (other, p, inside, opt.param_groups[0]["lr"], opt.param_groups[0]["params"][0] is p,
                swap_state["state"][0]["exp_avg"], errors)
    same(body, grad_fn=False)


def _sparse_adam_run(lib, kwargs, steps=5):
    """SparseAdam given sparse gradients: rows of a (6, 3) table (an embedding's gradient,
    uncoalesced, a row repeated) and single entries of a vector, some steps with none."""
    rng = np.random.default_rng(1)
    table = lib.nn.Parameter(lib.tensor(rng.standard_normal((6, 3)), dtype=lib.float32))
    vec = lib.nn.Parameter(lib.tensor(rng.standard_normal(5), dtype=lib.float32))
    opt = lib.optim.SparseAdam([table, vec], **kwargs)
    seen = []
    for i in range(steps):
        rows = lib.tensor([[i % 6, (i + 2) % 6, i % 6]])
        table.grad = lib.sparse_coo_tensor(
            rows, lib.tensor(rng.standard_normal((3, 3)), dtype=lib.float32), (6, 3))
        entries = lib.tensor([[0, 3]]) if i % 2 else lib.zeros(1, 0, dtype=lib.int64)
        vec.grad = lib.sparse_coo_tensor(
            entries, lib.tensor(rng.standard_normal(entries.shape[1]), dtype=lib.float32), (5,))
        opt.step()
        seen.append((table.detach().clone(), vec.detach().clone()))
    return seen, opt.state_dict()


@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.1, "betas": (0.5, 0.9), "maximize": True}])
def test_sparse_adam_with_sparse_gradients(kwargs):
    """The moments and parameters change at the gradients' positions only, by torch's
    masked Adam; the state keeps a Python int step."""
    import warnings
    with warnings.catch_warnings():  # (torch's note on unchecked sparse invariants)
        warnings.simplefilter("ignore")
        same(lambda lib: _sparse_adam_run(lib, kwargs), check_warnings=False, atol=1e-6)
