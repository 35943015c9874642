"""nn.Module against torch 2.13: registration, traversal, state_dict, hooks, reprs, errors."""
from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest
from nn_helpers import close, copy_weights, repr_norm, to_ember, torch_mod
from oracle import error_of, same

import ember


def _net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(3, 4)
            self.act = nn.ReLU()
            self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
            self.shared = self.fc1
            self.register_buffer("running", lib.zeros(4))
            self.register_buffer("scratch", lib.ones(2), persistent=False)
            self.scale = nn.Parameter(lib.ones(1))

        def forward(self, x):
            return self.block(self.act(self.fc1(x))) * self.scale

    return Net()


def test_traversal_names_match_torch():
    def body(lib):
        m = _net(lib)
        return (
            [n for n, _ in m.named_parameters()],
            [n for n, _ in m.named_parameters(remove_duplicate=False)],
            [n for n, _ in m.named_parameters(prefix="net", recurse=False)],
            [n for n, _ in m.named_buffers()],
            [n for n, _ in m.named_children()],
            [n for n, _ in m.named_modules()],
            [n for n, _ in m.named_modules(remove_duplicate=False)],
            list(m.state_dict().keys()),
            list(m.state_dict(prefix="p.").keys()),
            len(list(m.parameters())), len(list(m.modules())),
            type(m.state_dict()).__name__,
        )
    same(body)


def test_repr_matches_torch():
    def body(lib):
        nn = lib.nn
        m = nn.Sequential(OrderedDict(conv=nn.Linear(2, 3, bias=False), act=nn.LeakyReLU(0.2),
                                      inner=nn.ModuleList([nn.Linear(3, 3)] * 3 + [nn.ReLU()]),
                                      d=nn.ModuleDict({"a": nn.Dropout(0.1), "b": nn.Identity()})))
        return repr(m), repr(_net(lib)), repr(nn.ModuleList()), repr(nn.Sequential())
    same(body)


def test_getattr_setattr_errors():
    def body(lib):
        nn = lib.nn
        m = nn.Linear(2, 2)
        out = []
        for action in (lambda: m.foo, lambda: setattr(m, "weight", lib.ones(2)),
                       lambda: m.register_parameter("a.b", None),
                       lambda: m.register_parameter("", None),
                       lambda: m.register_buffer("weight", lib.ones(1)),
                       lambda: m.register_buffer("buf", 3),
                       lambda: m.register_parameter("p", lib.ones(1)),
                       lambda: m.add_module("bad", 3), lambda: m.add_module("x.y", nn.ReLU()),
                       lambda: m.get_submodule("nope"), lambda: m.get_parameter("bias.x"),
                       lambda: m.get_parameter("in_features"), lambda: m.train("yes")):
            out.append(error_of(action))
        return out
    same(body)


def test_assignment_moves_between_stores():
    def body(lib):
        nn = lib.nn
        m = nn.Module()
        m.a = nn.Parameter(lib.ones(2))
        m.register_buffer("b", lib.zeros(1))
        m.b = lib.ones(3)
        m.c = nn.Linear(1, 1)
        m.c = None
        m.a = None
        del m.b
        return (list(m._parameters), list(m._buffers), list(m._modules), m.c, m.a,
                sorted(k for k in dir(m) if k in ("a", "b", "c", "training")))
    same(body)


def test_state_dict_load_and_errors():
    def body(lib):
        nn = lib.nn
        m = _net(lib)
        sd = m.state_dict()
        keys = list(sd)
        ok = m.load_state_dict(sd)
        missing = dict(sd)
        missing.pop("fc1.bias")
        missing["extra"] = lib.zeros(1)
        res = m.load_state_dict(missing, strict=False)
        errors = []
        for bad in (missing, {**sd, "fc1.weight": lib.zeros(2, 2)}, [1]):
            try:
                m.load_state_dict(bad)
            except (RuntimeError, TypeError) as e:
                errors.append((type(e).__name__, str(e)))
        detached = [v.requires_grad for v in m.state_dict().values()]
        kept = [v.requires_grad for v in m.state_dict(keep_vars=True).values()]
        lin = nn.Linear(2, 2)
        lin.load_state_dict({"weight": lib.ones(2, 2), "bias": lib.zeros(2)})
        return keys, repr(ok), repr(res), errors, detached, kept, lin.weight, lin.bias
    same(body)


def test_load_state_dict_copies_into_the_same_parameters():
    m = ember.nn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": ember.ones(2, 2), "bias": ember.zeros(2)})
    assert m.weight is w and w.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    m.load_state_dict({"weight": ember.zeros(2, 2), "bias": ember.zeros(2)}, assign=True)
    assert m.weight is not w and isinstance(m.weight, ember.nn.Parameter)


def test_train_eval_requires_grad_zero_grad_apply():
    def body(lib):
        m = _net(lib)
        m.eval()
        modes = [x.training for x in m.modules()]
        m.train()
        m.block.eval()
        modes2 = [x.training for x in m.modules()]
        m.requires_grad_(False)
        rg = [p.requires_grad for p in m.parameters()]
        m.requires_grad_()
        m(lib.ones(2, 3)).sum().backward()
        m.zero_grad(set_to_none=False)
        zeroed = [p.grad for p in m.parameters()]
        m.zero_grad()
        nones = [p.grad is None for p in m.parameters()]
        seen = []
        m.apply(lambda mod: seen.append(type(mod).__name__))
        return modes, modes2, rg, zeroed, nones, seen
    same(body)


def test_dtype_conversions():
    def body(lib):
        m = _net(lib)
        p = m.fc1.weight
        m.double()
        a = [str(t.dtype) for t in m.state_dict().values()]
        same_obj = m.fc1.weight is p
        m.to(lib.float16)
        b = [str(t.dtype) for t in m.state_dict().values()]
        m.to(dtype=lib.float32).float()
        c = [str(t.dtype) for t in m.state_dict().values()]
        try:
            m.to(lib.int64)
        except TypeError as e:
            err = str(e)
        return a, b, c, same_obj, err, m.cpu() is m
    same(body)


def test_forward_hooks_order_and_arguments():
    def body(lib):
        nn = lib.nn
        log = []
        m = nn.Linear(2, 2)
        with lib.no_grad():
            m.weight.fill_(1.0)
            m.bias.fill_(0.5)
        h1 = m.register_forward_pre_hook(lambda mod, args: log.append(("pre", len(args))))
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,), prepend=True)
        m.register_forward_pre_hook(
            lambda mod, args, kwargs: log.append(("prekw", sorted(kwargs))) or None,
            with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: out + 1)
        h2 = m.register_forward_hook(lambda mod, args, out: log.append(("fwd", out.tolist())))
        m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("fwdkw", kwargs)),
                                with_kwargs=True, prepend=True)
        y = m(lib.ones(1, 2))
        h1.remove()
        h2.remove()
        y2 = m(lib.ones(1, 2))
        return log, y, y2
    same(body)


def test_always_call_forward_hook_on_error():
    def body(lib):
        nn = lib.nn
        log = []

        class Bad(nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Bad()
        m.register_forward_hook(lambda mod, a, out: log.append(out), always_call=True)
        try:
            m(lib.ones(1))
        except ValueError as e:
            log.append(str(e))
        return log
    same(body)


def test_full_backward_hooks_match_torch():
    def body(lib):
        nn = lib.nn
        log = []

        class Two(nn.Module):
            def forward(self, x, y, k):
                return x * y * k, x + 1, 7

        m = Two()

        def pre(mod, grad_out):
            log.append(("pre", [None if g is None else g.tolist() for g in grad_out]))
            return (grad_out[0] * 10, grad_out[1], grad_out[2])

        def full(mod, grad_in, grad_out):
            log.append(("full", [None if g is None else g.tolist() for g in grad_in],
                        [None if g is None else g.tolist() for g in grad_out]))
            return (grad_in[0] + 1, grad_in[1], None)

        m.register_full_backward_pre_hook(pre)
        m.register_full_backward_hook(full)
        m.register_full_backward_hook(lambda mod, gi, go: log.append("second"), prepend=True)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0], requires_grad=True)
        a, b, k = m(x, y, 2.0)
        (a.sum() + (b * b).sum()).backward()
        try:
            m.register_backward_hook(lambda *a: None)
        except RuntimeError as e:
            log.append(str(e))
        return log, x.grad, y.grad, k, type(a.grad_fn).__name__
    same(body)


def test_backward_hook_with_no_input_requiring_grad_warns():
    def body(lib):
        nn = lib.nn
        lin = nn.Linear(2, 1)
        log = []
        lin.register_full_backward_hook(lambda m, gi, go: log.append((gi, len(go))))
        lin(lib.ones(1, 2)).sum().backward()
        return [(gi, n) for gi, n in log]
    out = same(body, check_warnings=False)
    assert len(out.warnings) == 1 and "Full backward hook is firing" in out.warnings[0][1]


def test_full_backward_hook_on_a_layer_gets_its_input_gradient():
    torch = torch_mod()
    tl = torch.nn.Linear(3, 2)
    el = copy_weights(tl, ember.nn.Linear(3, 2))
    got = {}
    for lib, layer in (("t", tl), ("e", el)):
        layer.register_full_backward_hook(
            lambda m, gi, go, lib=lib: got.update({lib: gi[0]}))
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    (tl(xt) ** 2).sum().backward()
    xe = ember.tensor(x, requires_grad=True)
    (el(xe) ** 2).sum().backward()
    close(got["e"], got["t"], what="grad_input")
    close(xe.grad, xt.grad, what="x.grad")


def test_parameter_and_buffer():
    def body(lib):
        nn = lib.nn
        p = nn.Parameter(lib.tensor([1.0, 2.0]))
        q = nn.Parameter(lib.ones(2), requires_grad=False)
        m = nn.Module()
        m.b = nn.Buffer(lib.ones(2), persistent=False)
        m.c = nn.Buffer(lib.zeros(1))
        return (repr(p), repr(q), p.is_leaf, isinstance(p, lib.Tensor), list(m._buffers),
                list(m.state_dict()), repr(copy.deepcopy(p)), (p * 2).grad_fn is not None)
    same(body, grad_fn=False)


def test_sequential_and_lists():
    def body(lib):
        nn = lib.nn
        s = nn.Sequential(nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 1))
        s.append(nn.Tanh())
        s.insert(1, nn.Sigmoid())
        s.extend([nn.Identity()])
        sub = s[1:3]
        last = s[-1]
        del s[0]
        popped = s.pop(0)
        lst = nn.ModuleList([nn.ReLU(), nn.ReLU()])
        lst += [nn.Tanh()]
        lst.insert(0, nn.Sigmoid())
        d = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
        d["c"] = nn.Identity()
        pl = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(3, 2)])
        pd = nn.ParameterDict({"w": nn.Parameter(lib.ones(1)), "v": lib.zeros(2)})
        errors = []
        for bad in (lambda: s[10], lambda: lst[-9], lambda: s * 0, lambda: pl(1)):
            try:
                bad()
            except Exception as e:  # noqa: BLE001
                errors.append((type(e).__name__, str(e)))
        return (repr(s), repr(sub), repr(last), repr(popped), len(s), repr(lst), list(d.keys()),
                repr(d), repr(pl), repr(pd), [n for n, _ in pl.named_parameters()],
                list(pd.keys()), repr(s + s), repr(lst[1:]), errors,
                [type(x).__name__ for x in s])
    same(body)


def test_sequential_forward_matches_torch():
    torch = torch_mod()
    tm = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(6, 4), torch.nn.GELU(),
                             torch.nn.Linear(4, 2))
    em = ember.nn.Sequential(ember.nn.Flatten(), ember.nn.Linear(6, 4), ember.nn.GELU(),
                             ember.nn.Linear(4, 2))
    copy_weights(tm, em)
    x = np.random.default_rng(1).standard_normal((3, 2, 3)).astype(np.float32)
    yt, ye = tm(torch.tensor(x)), em(ember.tensor(x))
    close(ye, yt)
    yt.sum().backward()
    ye.sum().backward()
    for (n, pt), (_, pe) in zip(tm.named_parameters(), em.named_parameters()):
        close(pe.grad, pt.grad, what=n)
    assert repr_norm(repr(tm)) == repr(em)
    assert to_ember(torch.ones(1)).dtype == ember.float32


def test_state_dict_hook_apis_and_to_empty_match_torch():
    def body(lib):
        out = []
        m = lib.nn.Linear(2, 2)

        def public(mod, sd, prefix, meta):
            return {"x": 1}
        m.register_state_dict_post_hook(public)
        for bad in (lambda: m.state_dict(), lambda: m._register_state_dict_hook(public)):
            try:
                bad()
            except RuntimeError as e:
                out.append(str(e))
        n = lib.nn.Linear(2, 2)
        n._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
        out.append(n.state_dict())
        k = lib.nn.Linear(2, 2)
        log = []
        k._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: log.append(sorted(sd)))
        k._register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, *rest: log.append(type(mod).__name__), with_module=True)
        k.load_state_dict({"weight": lib.ones(2, 2), "bias": lib.ones(2)})
        out.append(log)
        e = lib.nn.Sequential(lib.nn.Linear(2, 3)).double().to_empty(device="cpu")
        out.append([(tuple(p.shape), str(p.dtype), type(p).__name__) for p in e.parameters()])
        return out
    assert same(body).error is None


_NON_FULL_HOOK_CASES = {
    # a layer with parameters: its node has inputs (weight, bias) the module was not given
    "conv": "torch.nn.Conv2d(2, 3, 3)",
    "linear_on_a_leaf": "torch.nn.Linear(4, 2)",
    # one op on the module's input: the hook sees every gradient, no warning
    "relu": "torch.nn.ReLU()",
    "two_ops": "Seq(torch.nn.Tanh(), torch.nn.Sigmoid())",
    "tuple_of_two_nodes": "Split()",
    "dict_out": "DictOut()",
    "list_in": "ListIn()",
}


@pytest.mark.parametrize("case", sorted(_NON_FULL_HOOK_CASES))
def test_non_full_backward_hook_warns_as_torchs(case):
    def body(torch):
        class Seq(torch.nn.Sequential):
            pass

        class Split(torch.nn.Module):
            def forward(self, x):
                return x * 2, x + 1

        class DictOut(torch.nn.Module):
            def forward(self, x):
                return {"y": x * 2}

        class ListIn(torch.nn.Module):
            def forward(self, xs):
                return xs[0] * 3
        torch.manual_seed(0)
        module = eval(_NON_FULL_HOOK_CASES[case], {"torch": torch, "Seq": Seq, "Split": Split,
                                                   "DictOut": DictOut, "ListIn": ListIn})
        seen = []
        module.register_backward_hook(
            lambda m, gi, go: seen.append([None if g is None else g.shape for g in gi]))
        shape = (1, 2, 5, 5) if case == "conv" else (3, 4)
        x = torch.randn(*shape, requires_grad=True)
        y = module([x * 1] if case == "list_in" else x * 1)
        out = y["y"] if case == "dict_out" else (y[0] if isinstance(y, tuple) else y)
        out.sum().backward()
        return seen
    same(body)
