"""Differences the random programs of tests/difftest found in ember.compile (their
``compiled_function`` steps), shrunk, each checked against torch's eager mode (skipped
without torch): a compiled function gives what the function gives eagerly, at every call.
The docstring of each test names the program that found it."""
from __future__ import annotations

import pytest

import ember
from oracle import same


def _compile(lib):
    """ember.compile, or on torch's side the function itself (torch.compile's contract is
    eager's values; its tracing is not what is compared)."""
    return lib.compile if lib is ember else (lambda f: f)


def test_a_global_passed_as_the_argument_does_not_stand_for_it_at_later_calls():
    """44000284, 44000198: recorded with ``f(w)``, the argument and the global ``w`` the
    function reads were one slot, so ``f(x)`` read ``x`` for ``w`` (a stale replay)."""
    def body(t):
        w = t.tensor([1.0, 2.0])
        cf = _compile(t)(lambda a: a * 10 + w)
        first = cf(w)
        return first, cf(t.tensor([5.0, 6.0])), cf(w), cf(t.tensor([7.0, 8.0]))
    same(body, grad_fn=False)


def test_a_global_passed_as_the_argument_after_other_arguments():
    """The other order: recorded with separate slots, a call passing the global reads (and
    writes into) the one array through both, as eager."""
    def body(t):
        w = t.tensor([1.0, 2.0])

        def f(a):
            a.mul_(2)
            return a + w
        cf = _compile(t)(f)
        x = t.tensor([5.0, 6.0])
        out = [cf(x), cf(w), cf(w), cf(x)]
        return out, x, w, w._version
    same(body, grad_fn=False)


def test_index_reduce_of_the_global_it_reduces_into_another_argument():
    """44000284 itself: ``a.index_reduce(0, i, t3, 'prod', include_self=False)``, first
    called on ``t3``."""
    def body(t):
        t3 = t.tensor([1.0, 1.46], requires_grad=True)
        cf = _compile(t)(lambda a: a.index_reduce(0, t.tensor([0, 1]), t3, "prod",
                                                  include_self=False))
        return cf(t3), cf(t.tensor([0.0, -0.96], requires_grad=True))
    same(body, grad_fn=False, check_warnings=False)


@pytest.mark.parametrize("how", ["sum", "cumsum", "leaky_relu", "rrelu"])
def test_bfloat16_calls_compute_as_eager_at_every_call(how):
    """44000194: ``F.rrelu(a, training=False)`` of a bfloat16 tensor raised at the replay (the
    kernel called bare refuses bfloat16; eager widens to float32), and a replayed sum of
    1000 bfloat16 values accumulated in bfloat16: 256 where eager gives 500."""
    def body(t):
        F = t.nn.functional
        fn = {"sum": lambda a: a.sum(), "cumsum": lambda a: (a * 3).cumsum(0)[-1],
              "leaky_relu": lambda a: F.leaky_relu(a[:5], 0.3),
              "rrelu": lambda a: F.rrelu(a[:5] - 0.5, training=False)}[how]
        x = t.linspace(0, 1, 1000).to(t.bfloat16)
        cf = _compile(t)(fn)
        return cf(x), cf(x), cf(x * 2)
    same(body, grad_fn=False, check_warnings=False)


def test_create_graph_through_a_captured_tensor_made_from_the_input():
    """44000242: a compiled function reading a global made from its own input (``w =
    t1.max()``, ``f(t1)``): ``backward(create_graph=True)`` gave t1 the gradient through ``w``
    twice (7 where eager gives 5); without create_graph it is right."""
    def body(t):
        t1 = t.tensor([1.0, 2.0], requires_grad=True)
        w = t1.max()
        cf = _compile(t)(lambda a: a * 3 + w)
        cf(t1).sum().backward(create_graph=True)
        return t1.grad.detach()
    same(body, grad_fn=False, check_warnings=False)


@pytest.mark.parametrize("how", ["mul", "div", "mul_", "div_"])
def test_float16_times_a_number_computes_as_eager_at_every_call(how):
    """44000168: ``r4 * k9[0]`` of a float16 ``r4`` gave float32 at the replay (the kernel
    called as its ufunc, the number a float32 array), and ``b.mul_(-0.37)`` rounded the number
    to float16 first: eager meets it in float32 and rounds the result once."""
    def body(t):
        k = [-0.37]

        def f(a):
            if how in ("mul", "div"):
                return a * k[0] if how == "mul" else a / k[0]
            b = a.clone()
            getattr(b, how)(k[0])
            return b
        x = t.tensor([[1.0, 1.0], [-0.32, 1.76]], dtype=t.float16)
        cf = _compile(t)(f)
        return cf(x), cf(x), cf(x * 3)
    same(body, grad_fn=False, check_warnings=False, rtol=0, atol=0)


def test_replays_after_an_in_place_float16_product_with_a_number_are_eager():
    """44000168's in-place half: after the recording call, calls give eager's values."""
    def body(t):
        def f(a):
            b = a.clone()
            b.mul_(-0.37)
            return b
        x = t.tensor([[1.0, 1.0], [-0.32, 1.76]], dtype=t.float16)
        cf = _compile(t)(f)
        cf(x)
        return cf(x), cf(x * 3)
    same(body, grad_fn=False, check_warnings=False, rtol=0, atol=0)


def test_a_write_into_an_empty_view_of_the_input_bumps_its_version_at_every_call():
    """45000197: ``a.select(1, 0).masked_fill_(...)`` of an empty ``a``: eager bumps the
    version ``a`` shares with the view, but the write touches no memory, so the replay did not
    count it (version 2 where eager and torch give 3)."""
    def body(t):
        def f(a):
            a.select(1, 0).masked_fill_(t.zeros(0, dtype=t.bool), 1.22)
            a[1:1].add_(1)
            return a * 2
        x = t.zeros(0, 2)
        cf = _compile(t)(f)
        versions = []
        for _ in range(3):
            cf(x)
            versions.append(x._version)
        return versions
    same(body, grad_fn=False, check_warnings=False)


def test_create_graph_through_a_compiled_call_on_a_custom_functions_output():
    """44000226: ``autograd.grad(cf(t3).sum(), [t3], create_graph=True)`` where ``t3`` is a
    custom Function's output whose backward returns a 0-dim gradient: eager never runs that
    backward; the compiled function's create_graph pass did, and its check raised."""
    def body(t):
        class Fn(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g.sum()
        t1 = t.tensor([-0.54, 1.0, -0.88, 0.72], requires_grad=True)
        t3 = Fn.apply(t1)
        cf = _compile(t)(lambda a: t.nn.functional.mse_loss(a, t1, reduction="none"))
        g, = t.autograd.grad(cf(t3).sum(), [t3], allow_unused=True, create_graph=True)
        return g.detach()
    same(body, grad_fn=False, check_warnings=False)


def test_create_graph_through_a_compiled_call_warns_only_at_the_call():
    """44000430: ``var`` over a dimension of one element warns at the call, as eager; the
    create_graph backward warned again, where eager's does not."""
    def body(t):
        cf = _compile(t)(lambda a: a.var(2) * -1.58)
        out = cf(t.tensor([[[-1.34]], [[0.87]]], dtype=t.float64, requires_grad=True))
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out.sum().backward(create_graph=True)
        return [str(w.message)[:40] for w in caught if "degrees of freedom" in str(w.message)]
    same(body, grad_fn=False, check_warnings=False)


def test_float16_times_a_0_dim_tensor_replays_eagers_single_rounding():
    """52000373's root in compiled calls: a float16 tensor times or divided by a 0-dim
    float32 tensor reads it in float32 and rounds once (torch's scalar operand); a replay's
    ufunc would round the 0-dim tensor to float16 first, so such a call is not replayed."""
    import warnings

    def body(t):
        c = t.tensor(0.157978)

        def f(x):
            y = x * c / c
            y.mul_(c)
            return y
        cf = _compile(t)(f)
        a = t.tensor([5.25, 1234.0, -3.3], dtype=t.float16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [cf(a), cf(a), cf(a * 2)]
    same(body, rtol=0, atol=0, grad_fn=False)


def test_create_graph_gradients_through_a_compiled_call_lead_to_the_sources():
    """49000337, 52000232: the gradients a create_graph pass through a compiled call builds
    led to an alias of each source (the pass's stand-in: AliasBackward0 in next_functions),
    where eager's lead to the source's own node or AccumulateGrad."""
    import warnings

    def body(t):
        def tree(fn, depth=4):
            if fn is None or depth == 0:
                return None if fn is None else fn.name()
            return fn.name(), tuple(tree(f, depth - 1) for f, _ in fn.next_functions)
        out = []
        t2 = t.tensor([[-0.8, 0.3, 0.5]], requires_grad=True)
        cf = _compile(t)(lambda a: t.nn.functional.hardshrink(a, 0.3) * 1.41)
        t1 = t.tensor([0.5, -1.27, 1.0], requires_grad=True)
        t3 = t.stack([t1, t1], 0)
        t10 = t3 * 2
        cf2 = _compile(t)(lambda a: t.div(a, t3).clamp(max=0.37) * 0.61)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(2):
                g, = t.autograd.grad(cf(t2).sum(), [t2], create_graph=True)
                out += [tree(g.grad_fn), g, t.autograd.grad((g * t2).sum(), t2)]
                g, = t.autograd.grad(cf2(t10).sum(), [t10], create_graph=True,
                                     retain_graph=True)
                out += [tree(g.grad_fn), g, t.autograd.grad((g * t10).sum(), [t10, t1],
                                                            retain_graph=True)]
        return out
    same(body, grad_fn=False)


def test_an_empty_view_of_the_argument_is_returned_as_a_view():
    """56000289: ``a.unbind(0)[1]`` of a (2, 0) argument: an empty view shares no memory with
    its base, so the recording took it for a tensor of its own, and each call returned a
    tensor that was no view (eager's is a view of the argument, as torch.compile's)."""
    def body(t):
        out = []
        for f in (lambda a: a.unbind(0)[1], lambda a: a[1:, :0],
                  lambda a: a.transpose(0, 1)[..., 0]):
            cf = _compile(t)(f)
            for x in (t.zeros(2, 0), t.zeros(2, 0, 3), t.zeros(2, 0, requires_grad=True)):
                for _ in range(3):
                    r = cf(x)
                    out.append((r, r._base is not None, r._version, x._version))
        return out
    same(body)
