"""Selective activation checkpointing (``create_selective_checkpoint_contexts``,
``CheckpointPolicy``, ``SelectiveCheckpointContext``), ``ember.ops.aten`` overloads, and the
rest of torch.utils.checkpoint's switches, against torch 2.13."""
import functools

import numpy as np
import pytest
from oracle import same

import ember
from ember._ops import registry

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.1, 0.2, 0.3]])
Y = np.array([[1.0, 0.5, -0.5], [0.0, 2.0, 1.0], [-1.0, 0.3, 0.7]])


def fn(lib, x, y):
    return lib.sigmoid(lib.matmul(lib.matmul(x, y), y)) * y


def _inputs(lib):
    return (lib.tensor(X, requires_grad=True), lib.tensor(Y, requires_grad=True))


def _sac(lib, policy, **kw):
    return functools.partial(lib.utils.checkpoint.create_selective_checkpoint_contexts, policy,
                             **kw)


@pytest.mark.parametrize("policy", ["list", "fn", "bool", "all_save", "all_recompute"])
def test_selective_checkpoint_gradients_and_policy_calls(policy):
    def body(lib):
        P = lib.utils.checkpoint.CheckpointPolicy
        mm = lib.ops.aten.mm.default
        calls = []

        def policy_fn(ctx, op, *args, **kwargs):
            calls.append((str(op), ctx.is_recompute, ctx.op_output.shape, len(args)))
            if policy == "bool":
                return op == mm
            if policy == "all_save":
                return P.PREFER_SAVE
            if policy == "all_recompute":
                return P.MUST_RECOMPUTE
            return P.MUST_SAVE if op in (mm,) else P.PREFER_RECOMPUTE
        x, y = _inputs(lib)
        ctx_fn = _sac(lib, [mm] if policy == "list" else policy_fn)
        out = lib.utils.checkpoint.checkpoint(lambda a, b: fn(lib, a, b), x, y,
                                              use_reentrant=False, context_fn=ctx_fn)
        forward_calls = list(calls)
        out.sum().backward()
        # (torch names the product's overload aten.mul.Tensor; ember's ops have one overload)
        forward_calls = [(name.replace("mul.Tensor", "mul.default"),) + rest
                         for name, *rest in [(c[0], *c[1:]) for c in forward_calls]]
        return out, x.grad, y.grad, forward_calls, len(calls) - len(forward_calls)
    same(body)


def test_kept_results_are_not_recomputed(monkeypatch):
    ran = []
    real = registry.dispatch

    def spy(op, args):
        ran.append(op.aten)
        return real(op, args)
    x, y = _inputs(ember)
    out = ember.utils.checkpoint.checkpoint(
        lambda a, b: fn(ember, a, b), x, y, use_reentrant=False,
        context_fn=_sac(ember, [ember.ops.aten.mm.default]))
    monkeypatch.setattr(registry, "dispatch", spy)
    out.sum().backward()
    assert "aten::mm" not in ran and "aten::sigmoid" in ran  # the recomputation's ops

    ran.clear()
    x, y = _inputs(ember)
    out = ember.utils.checkpoint.checkpoint(
        lambda a, b: fn(ember, a, b), x, y, use_reentrant=False,
        context_fn=_sac(ember, [ember.ops.aten.sigmoid.default]))
    ran.clear()
    out.sum().backward()
    assert ran.count("aten::mm") == 2 and "aten::sigmoid" not in ran


def test_kept_result_whose_inputs_are_recomputed():
    # mm's result is kept; sin before it is recomputed (its node is reached through mm's
    # stand-in node), and the nodes after it take mm's kept result
    def body(lib):
        x, y = _inputs(lib)

        def f(a, b):
            return (lib.mm(a.sin(), b).tanh() * a).sum(0)
        out = lib.utils.checkpoint.checkpoint(f, x, y, use_reentrant=False,
                                              context_fn=_sac(lib, [lib.ops.aten.mm.default]))
        out.sum().backward()
        return out, x.grad, y.grad
    same(body)


@pytest.mark.parametrize("case", ["second_backward", "mutated", "mutation_allowed",
                                  "packet_in_list", "not_a_policy", "debug_with_context",
                                  "reentrant_with_context", "determinism"])
def test_selective_checkpoint_errors(case):
    def body(lib):
        C = lib.utils.checkpoint
        x, y = _inputs(lib)
        mm = lib.ops.aten.mm.default
        if case == "second_backward":
            out = C.checkpoint(lambda a, b: fn(lib, a, b), x, y, use_reentrant=False,
                               context_fn=_sac(lib, [mm]))
            out.sum().backward(retain_graph=True)
            out.sum().backward()
        if case in ("mutated", "mutation_allowed"):
            def f(a, b):
                z = lib.mm(a, b)
                z.relu_()
                return z.sin()
            out = C.checkpoint(f, x, y, use_reentrant=False,
                               context_fn=_sac(lib, [mm], allow_cache_entry_mutation=(
                                   case == "mutation_allowed")))
            out.sum().backward()
            return x.grad, y.grad
        if case == "packet_in_list":
            return C.create_selective_checkpoint_contexts([lib.ops.aten.mm])
        if case == "not_a_policy":
            return C.create_selective_checkpoint_contexts(3)
        if case == "debug_with_context":
            return C.checkpoint(lambda a: a.sin(), x, use_reentrant=False, debug=True,
                                context_fn=_sac(lib, [mm]))
        if case == "reentrant_with_context":
            return C.checkpoint(lambda a: a.sin(), x, use_reentrant=True,
                                context_fn=_sac(lib, [mm]))
        if case == "determinism":
            return C.checkpoint(lambda a: a.sin(), x, use_reentrant=False,
                                determinism_check="strict")
        return x.grad
    if case != "packet_in_list":
        same(body)
        return
    # (the packet's type is named by its module: torch._ops, ember.ops)
    err = pytest.raises(ValueError, body, ember).value
    assert str(err).startswith("Expected op in `op_list` to be an OpOverload but got: "
                               "aten.mm of type <class 'ember.ops.OpOverloadPacket'>.")
    assert "change it to `ember.ops.aten.mm.default`" in str(err)


def test_checkpoint_switches():
    def body(lib):
        C = lib.utils.checkpoint
        x, y = _inputs(lib)
        with C.set_checkpoint_early_stop(False):
            out = C.checkpoint(lambda a, b: fn(lib, a, b), x, y, use_reentrant=False)
        out.sum().backward()
        with C.set_checkpoint_debug_enabled(False):  # overrides debug=True: no error
            out2 = C.checkpoint(lambda a: a.sin(), x, use_reentrant=False, debug=True,
                                context_fn=_sac(lib, [lib.ops.aten.mm.default]))
        with C.set_checkpoint_debug_enabled(True):
            try:
                C.checkpoint(lambda a: a.sin(), x, use_reentrant=False,
                             context_fn=_sac(lib, [lib.ops.aten.mm.default]))
            except ValueError as e:
                err = str(e)
        return (x.grad, y.grad, out2, err, C.get_device_states(x, y, 3),
                [p.name for p in C.CheckpointPolicy], C.CheckpointPolicy.MUST_SAVE.value,
                C.SelectiveCheckpointContext(is_recompute=False).op_output)
    same(body)


def test_aten_namespace():
    def body(lib):
        aten = lib.ops.aten
        a = lib.tensor([[1., 2.], [3., 4.]])
        return (str(aten.mm.default), repr(aten.mm.default), str(aten.mm),
                aten.mm.default is aten.mm.default, aten.mm.default.name(),
                type(aten.mm.default).__name__, aten.mm.default(a, a), aten.relu_.default.name(),
                aten.mm.default == aten.sin.default)
    same(body)


def test_aten_calls_bind_arguments_as_torch_schemas_do():
    # positional and keyword arguments, defaults, the overload an argument selects (the p of
    # bernoulli.p), in-place packets and ops whose registry parameters are internal (bernoulli
    # draws, set_'s storage)
    def body(lib):
        aten = lib.ops.aten
        x, y = lib.arange(6.).reshape(2, 3), lib.ones(2, 3)
        return (aten.bernoulli(lib.full((3,), 1.0)), aten.bernoulli.default(y),
                aten.bernoulli(y, 1.0), aten.bernoulli.p(y, 0.0), aten.set_(lib.zeros(2), y[0]),
                aten.mul(x, other=y), aten.mul.Tensor(x, 2), aten.add(x, y, alpha=2),
                aten.sum(x), aten.sum(x, [1], True), aten.sum.dim_IntList(x, [1]),
                aten.mean(x, [0]), aten.max(x), aten.max(x, 1), aten.clamp(x, 1.0, 4.0),
                aten.pow(x, 2), aten.div(x, 4, rounding_mode="floor"), aten.cat([x, y], 1),
                aten.gather(x, 1, lib.tensor([[0], [1]])), aten.var(x, [1]),
                aten.squeeze(lib.ones(1, 2)), aten.sort(x, 1, True), aten.relu_(x - 2),
                aten.mul_(x.clone(), 3), aten.fill_(lib.zeros(2), 3.),
                aten.copy_(lib.zeros(2, 3), x))
    same(body)


def test_aten_composite_operators_run_embers_functions():
    # torch's operators ember writes with other ops (what selective-checkpoint policies name)
    def body(lib):
        aten = lib.ops.aten
        x, w = lib.arange(6.).reshape(2, 3), lib.ones(4, 3)
        return (aten.linear(x, w, w[:, 0]), aten.linear.default(x, w), aten.matmul(x, w.t()),
                aten.dropout(x, 0.0, True), aten.dropout.default(x, 0.5, False),
                aten.zeros_like(x), aten.ones_like(x, dtype=lib.int64), aten.rand_like(x).shape,
                aten.randn_like(x).dtype, aten.full_like(x, 2.0), aten.empty_like(x).shape,
                aten.one_hot(lib.tensor([0, 2])), aten.pad(x, [1, 1]), aten.relu6(x * 2),
                aten.reshape(x, [3, 2]), aten.flatten(x), aten.softmax(x, 1),
                aten.layer_norm(x, [3]), aten.dim(x), aten.size(x, 1),
                str(aten.linear.default), str(aten.matmul), aten.linear.default.name())
    same(body)


def test_aten_names_are_torchs():
    torch = pytest.importorskip("torch")
    from ember._ops.aten_namespace import _COMPOSITE_NAMES, _FUNCTIONAL_NAMES
    for name in sorted(_COMPOSITE_NAMES | _FUNCTIONAL_NAMES):
        assert hasattr(torch.ops.aten, name), name
        assert callable(getattr(ember.ops.aten, name).default), name


@pytest.mark.parametrize("case", [
    lambda a, x: a.mm.default(x), lambda a, x: a.mm(x, x, x), lambda a, x: a.mm(x, foo=x),
    lambda a, x: a.relu(x, inplace=True), lambda a, x: a.sum(x, "a"),
    lambda a, x: a.linear(x), lambda a, x: a.matmul(x), lambda a, x: a.dropout(x),
    lambda a, x: a.zeros_like(), lambda a, x: a.rand_like(x, 3, 4, 5, 6, 7)])
def test_aten_calls_with_wrong_arguments_raise_runtime_error(case):
    # torch matches the arguments against the schema: RuntimeError, not the TypeError its
    # Python functions raise (the messages differ: ember has no schemas to print)
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            case(lib.ops.aten, lib.ones(2, 2))


def test_every_overload_name_of_an_ember_op_is_its_one_overload():
    aten = ember.ops.aten
    assert aten.mul.Tensor is aten.mul.default and aten.add.Scalar is aten.add.default
    assert aten.bernoulli.p is not aten.bernoulli.default  # (registered as an op of its own)
    with pytest.raises(AttributeError, match="'_OpNamespace' 'aten' object has no attribute"):
        aten.no_such_operator_anywhere


def test_device_states_round_trip(cuda_device):
    from ember.utils.checkpoint import get_device_states, set_device_states
    x = ember.ones(2, device=cuda_device)
    ids, states = get_device_states(x, [x.cpu()], 5)
    assert ids == [0] and states[0].tolist() == ember.cuda.get_rng_state(0).tolist()
    first = ember.rand(3, device=cuda_device).tolist()
    set_device_states(ids, states)
    assert ember.rand(3, device=cuda_device).tolist() == first  # the same draws again
    set_device_states(ids, states, device_type="meta")  # (torch: nothing for meta)
    assert ember.rand(3, device=cuda_device).tolist() != first
    assert get_device_states(x.cpu()) == ([], [])


def test_policy_sees_torch_ops_of_nn_modules():
    # the op calls of a Linear / ReLU / LayerNorm / GELU block are torch's, overload for
    # overload; keeping addmm's results gives the uncheckpointed gradients
    def body(lib):
        C = lib.utils.checkpoint
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.LayerNorm(4),
                              lib.nn.Linear(4, 2), lib.nn.GELU()).double()
        x = lib.tensor(X, requires_grad=True)
        calls = []

        def policy(ctx, op, *args, **kwargs):
            calls.append(str(op))
            return op == lib.ops.aten.addmm.default
        out = C.checkpoint(m, x, use_reentrant=False, context_fn=_sac(lib, policy))
        out.sum().backward()
        return calls, out, x.grad, [p.grad for p in m.parameters()]
    same(body)


def test_aten_packets_of_overloads_only_and_in_place_forms():
    aten = ember.ops.aten
    assert str(aten.normal.Tensor_float) == "aten.normal.Tensor_float"
    with pytest.raises(AttributeError, match="has no overload name 'default'"):
        aten.normal.default  # (ember registers only normal's named overloads)
    assert str(aten.relu_.default) == "aten.relu_.default"
    with pytest.raises(AttributeError):
        aten.mm_  # (torch has no in-place mm, nor ember a Tensor.mm_)


def test_ops_of_other_threads_are_not_the_checkpointed_functions():
    import threading
    calls, started, release = [], threading.Event(), threading.Event()

    def other():
        started.wait()
        ember.mm(ember.ones(2, 2), ember.ones(2, 2))  # while the function runs: not counted
        release.set()

    def f(a):
        started.set()
        release.wait(10)
        return ember.mm(a, a).sin()

    def policy(ctx, op, *args):
        calls.append(str(op))
        return True
    worker = threading.Thread(target=other)
    worker.start()
    x = ember.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    out = ember.utils.checkpoint.checkpoint(f, x, use_reentrant=False,
                                            context_fn=_sac(ember, policy))
    worker.join()
    out.sum().backward()
    assert calls == ["aten.mm.default", "aten.sin.default"]
    plain = x.detach().requires_grad_()
    ember.mm(plain, plain).sin().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), plain.grad.numpy())
