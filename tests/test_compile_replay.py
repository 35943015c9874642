"""ember.compile's generated programs against torch's eager mode: the engine's steps a
backward program writes out (a gradient summed down to a broadcast input's shape, two
gradients of one input added) give torch's gradients and their versions at every replay,
not only at the recording call."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

import ember

_SHAPES = ((4,), (3, 1), (1, 4), (3, 4), ())


def _params(torch):
    g = torch.Generator().manual_seed(0)
    x = torch.randn((2, 3, 4), generator=g)
    return x, [torch.randn(shape, generator=g).requires_grad_() for shape in _SHAPES]


def test_broadcast_gradients_summed_down_at_each_replay():
    # summed over leading dimensions only (a new array where torch makes a view), over size-1
    # dimensions (keeping them), both, and down to 0-d; two backward passes accumulate into
    # each .grad (in place: its version shows whether torch's gradient was a view)
    def body(torch):
        x, params = _params(torch)

        def loss(x):
            return sum(((x * p).tanh() * (k + 1)).sum() for k, p in enumerate(params))
        if torch is ember:
            loss = ember.compile(loss)  # (torch eager is the reference)
        seen = []
        for _ in range(3):  # the recording call, then two replays
            loss(x).backward()
            loss(x).backward()
            seen.append([(p.grad.clone(), p.grad._version) for p in params])
            for p in params:
                p.grad = None
        return seen
    same(body, rtol=1e-5, atol=1e-6)


def test_a_sum_down_to_0d_is_its_own_tensor():
    # torch's sum_to of a gradient down to 0-d is sum(), not a view: a second gradient of the
    # same input is added into it in place, which the .grad's version shows
    def body(torch):
        x, params = _params(torch)
        s = params[-1]
        ((x * s).tanh().sum() + (x * s).sum()).backward()
        return s.grad, s.grad._version
    same(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("compiled_first", [True, False])
def test_a_bias_gradient_summed_down_is_a_view_in_a_second_gradients_buffer(compiled_first):
    # the program's sum over leading dimensions is, in torch, a view of another tensor's
    # storage: where a non-leaf input gets a second gradient besides the program's, the
    # engine sums the two out of place, and the leaf that takes the sum over shows torch's
    # version, at the recording call and at each replay
    def body(torch):
        g = torch.Generator().manual_seed(0)
        x = torch.randn((2, 3, 4), generator=g)
        p = torch.randn((4,), generator=g).requires_grad_()

        def inner(x, q):
            return (x * q).tanh().sum()
        f = ember.compile(inner) if torch is ember else inner
        seen = []
        for _ in range(3):
            q = p.clone()  # (a non-leaf: its buffer gets both gradients)
            if compiled_first:
                loss = f(x, q) + (q * 2).sum()
            else:
                other = (q * 2).sum()
                loss = other + f(x, q)
            loss.backward()
            seen.append((p.grad.clone(), p.grad._version))
            p.grad = None
        return seen
    same(body, rtol=1e-5, atol=1e-6)


def _twice(y):
    return (y + y).tanh().sum()


_USED_TWICE = {
    "three times": lambda x, W, p: (x * p).sum() + (x * p).tanh().sum() + (x * p).exp().sum(),
    "six times": lambda x, W, p: sum((x * p * k).tanh().sum() for k in range(1, 7)),
    "matrix product": lambda x, W, p: (x @ W).sum() + (x @ W).tanh().sum(),
    "through views": lambda x, W, p: (x @ W.t().t()).sum() + (x @ W).tanh().sum(),
    "sum of two": lambda x, W, p: ((x * p) + (x * p)).sum(),
    "one value twice": lambda x, W, p: _twice(x * p),
    "leaf plus itself": lambda x, W, p: (p + p).tanh().sum(),
    "leaf times itself": lambda x, W, p: (p * p * x).sum(),
}


@pytest.mark.parametrize("case", sorted(_USED_TWICE))
def test_gradients_summed_inside_a_backward_program_keep_torch_versions(case):
    # an input reached twice: eager (and torch) sums its second gradient into the first in
    # place where the first is a formula's own array, and the .grad's version shows it; the
    # program adds out of place and notes that write
    def body(torch):
        g = torch.Generator().manual_seed(0)
        x = torch.randn((3, 4), generator=g)
        W = torch.randn((4, 4), generator=g).requires_grad_()
        p = torch.randn((3, 4), generator=g).requires_grad_()

        def loss(x):
            return _USED_TWICE[case](x, W, p)
        if torch is ember:
            loss = ember.compile(loss)
        seen = []
        for _ in range(3):
            loss(x).backward()
            seen.append([(t.grad, t.grad._version) for t in (W, p) if t.grad is not None])
            W.grad = p.grad = None
        return seen
    same(body, rtol=1e-5, atol=1e-6)


def _mlp_training(compiled, steps=20, lr=0.01):
    """W2's training step (benchmarks/workloads.py: MLP 784-256-10, ReLU, cross-entropy,
    batch 64, plain SGD outside the compiled loss): each step's loss, gradients and
    parameters, as bytes."""
    rs = np.random.RandomState(2)
    x = ember.tensor(rs.randn(64, 784).astype(np.float32))
    y = ember.tensor(rs.randint(0, 10, 64))
    params = [ember.tensor((rs.randn(*s) * 0.05).astype(np.float32), requires_grad=True)
              for s in ((784, 256), (256,), (256, 10), (10,))]
    W0, b0, W1, b1 = params

    def loss_of(x, y):
        return ember.nn.functional.cross_entropy((x @ W0 + b0).relu() @ W1 + b1, y)
    if compiled:
        loss_of = ember.compile(loss_of)
    seen, kept = [], []
    for _ in range(steps):
        loss = loss_of(x, y)
        loss.backward()
        grads = [p.grad for p in params]
        seen.append([t.detach().numpy().tobytes() for t in [loss] + grads])
        with ember.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        seen[-1] += [p.detach().numpy().tobytes() for p in params]
        # the loss and gradients a step handed out stay as they were: no later step writes
        # into them
        kept.append((loss, grads))
        for k, (old_loss, old_grads) in enumerate(kept):
            assert [t.detach().numpy().tobytes() for t in [old_loss] + old_grads] \
                == seen[k][:5]
    if compiled:
        assert len(loss_of.entries) == 1  # one recording, then replays
    return seen


def test_training_steps_replay_eager_bit_for_bit():
    # the compiled loss's replays give eager mode's losses, gradients and updated parameters
    # to the last bit, step after step
    compiled, eager = _mlp_training(True), _mlp_training(False)
    for step, (c, e) in enumerate(zip(compiled, eager)):
        assert c == e, f"step {step} differs"


def test_pass_through_gradients_named_again_at_each_replay():
    """add's, sub's and clone's gradients for ``self`` (``return grad``) are not called in a
    backward program, the gradient is named again: the leaves get torch's values, versions
    and shared or copied gradients at every replay, also where one gradient reaches two
    leaves or is summed with another."""
    def body(torch):
        g = torch.Generator().manual_seed(1)
        a, b, c = (torch.randn(3, 4, generator=g).requires_grad_() for _ in range(3))
        bias = torch.randn(4, generator=g).requires_grad_()

        def loss(x):
            h = (x * a + b).clone() - c + bias
            return (h + h.clone()).sum()
        if torch is ember:
            loss = ember.compile(loss)
        x = torch.randn(3, 4, generator=g)
        seen = []
        for _ in range(3):  # the recording call, then two replays
            loss(x).backward()
            seen.append([(p.grad.clone(), p.grad._version) for p in (a, b, c, bias)])
            seen.append(b.grad.data_ptr() == c.grad.data_ptr())
            for p in (a, b, c, bias):
                p.grad = None
        return seen
    same(body)


def test_passes_gradient_only_for_return_grad():
    from ember._compile.program import passes_gradient
    from ember._ops.pointwise import add, mul

    def formula(op, name):
        k = op.index[name]
        return next(f for idx, f, _ in op.formulas if idx == (k,))
    assert passes_gradient(formula(add, "self"))
    assert not passes_gradient(formula(add, "other"))  # (alpha: a call)
    assert not passes_gradient(formula(mul, "self"))
    assert not passes_gradient(lambda grad, alpha: grad)
    assert not passes_gradient(lambda grad: -grad)
    assert not passes_gradient(len)


def test_an_outside_leafs_edge_is_its_accumulator_at_every_replay():
    # the output node's edges to outside leaves are kept from call to call: each replay's
    # edge is the accumulator an eager graph of the same leaf reaches at that moment
    W = ember.randn(3, 4, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    x = ember.randn(2, 3, requires_grad=True)
    f = ember.compile(lambda x: (x @ W + b).sum())
    for _ in range(3):
        out = f(x)
        eager = x @ W + b  # (the eager graph, alive beside it: the same accumulators)
        accs = [e[0] for e in out.grad_fn.next_functions]
        mm = eager.grad_fn.next_functions[0][0]
        assert [type(a).__name__ for a in accs] == ["AccumulateGrad"] * 3
        assert accs == [mm.next_functions[0][0], mm.next_functions[1][0],
                        eager.grad_fn.next_functions[1][0]]
        assert [a.variable for a in accs] == [x, W, b]
        out.backward()
    assert len(f.entries) == 1


def test_a_leaf_swapped_between_replays_gets_its_gradient():
    # swap_tensors gives a captured parameter another accumulator (the other tensor's): the
    # next replay's edge is that one, and the gradient reaches the parameter as in torch
    def body(torch):
        g = torch.Generator().manual_seed(3)
        W = torch.randn(3, 4, generator=g).requires_grad_()
        x = torch.randn(2, 3, generator=g)

        def loss(x):
            return (x @ W).tanh().sum()
        if torch is ember:
            loss = ember.compile(loss)
        seen = []
        for _ in range(3):  # (the accumulator a swap poisons must not be reached again)
            loss(x).backward()
            seen.append(W.grad.clone())
            W.grad = None
            torch.utils.swap_tensors(W, torch.randn(3, 4, generator=g).requires_grad_())
        return seen
    same(body, rtol=1e-6, atol=1e-6)


def _scaled(grad, scale):
    return grad * scale


def test_formulas_that_pass_their_arguments_on_are_resolved():
    # ``return op(grad, result, 0)``: the backward program calls the op's kernel (or the
    # function) itself; a formula that computes, branches or takes keywords is called
    from ember._compile.backward import _one_call
    from ember._ops.pointwise import add, relu

    def formula(op, name):
        k = op.index[name]
        return next(f for idx, f, _ in op.formulas if idx == (k,))
    assert _one_call(formula(relu, "self")) == ("threshold_backward", (0, 1, (0,)))
    assert _one_call(formula(add, "other")) is None  # (alpha == 1 decides)
    assert _one_call(lambda grad, x: grad * x) is None
    assert _one_call(lambda grad, x: ember.mul(grad, other=x)) is None
    assert _one_call(lambda grad, *xs: ember.mul(grad, *xs)) is None
    scale = 2.0
    assert _one_call(lambda grad: ember.mul(grad, scale)) is None  # (a closure cell)
    assert _one_call(lambda grad, x: ember.mul(x, grad)) is None  # (an attribute's call)
    assert _one_call(lambda grad, x: max(x, grad)) == ("max", (1, 0))
    # a plain function is called itself, unless a parameter was left to its default
    from ember._compile.backward import resolve
    from ember._compile.recorder import SLOT, VALUE
    a = np.ones(2)
    formula = lambda grad, x, scale=2.0: _scaled(grad, scale)  # noqa: E731
    assert resolve(formula, ((SLOT, 0, None), (SLOT, 1, None)), (a, a), a) is None
    assert resolve(formula, ((SLOT, 0, None), (SLOT, 1, None), (VALUE, 3.0)), (a, a, 3.0),
                   a) == (_scaled, ((SLOT, 0, None), (VALUE, 3.0)), None)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_a_resolved_backward_program_takes_gradients_of_another_dtype(dtype):
    # the program calls relu's, log_softmax's and nll_loss's gradient kernels itself, for
    # the gradient dtype it recorded; a gradient of another dtype runs eager's pass (whose
    # first formula computes in that dtype): every call gives torch's gradients
    def body(torch):
        g = torch.Generator().manual_seed(4)
        W = torch.randn(5, 4, generator=g).requires_grad_()
        x = torch.randn(3, 5, generator=g)
        y = torch.tensor([0, 3, 1])

        def loss(x):
            h = (x @ W).relu()
            return torch.nn.functional.cross_entropy(h, y, reduction="none") * 2
        if torch is ember:
            loss = ember.compile(loss)
        seen = []
        for k in range(4):  # (recorded with float32, then the dtype asked for, then float32)
            gdt = getattr(torch, dtype) if k == 2 else torch.float32
            loss(x).backward(torch.ones(3, dtype=gdt))
            seen.append(W.grad)
            W.grad = None
        return seen
    same(body, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_a_gradient_of_another_dtype_gives_eagers_gradients_bit_for_bit(dtype):
    def run(compiled):
        g = ember.Generator().manual_seed(4)
        W = ember.randn(5, 4, generator=g).requires_grad_()
        x = ember.randn(3, 5, generator=g)

        def loss(x):
            return ((x @ W).tanh() * 3).sum(1) / 7
        if compiled:
            loss = ember.compile(loss)
        seen = []
        for k in range(4):
            gdt = getattr(ember, dtype) if k == 2 else ember.float32
            loss(x).backward(ember.full((3,), 0.3, dtype=gdt))
            seen.append((W.grad.dtype, W.grad.detach().numpy().tobytes(), W.grad._version))
            W.grad = None
        return seen
    assert run(True) == run(False)


def test_a_formulas_code_is_read_once():
    """A formula's code is disassembled once, not at every recording of a node that uses it
    (it cost a third of a 300-op recording's time)."""
    from ember._compile import backward as B

    def formula(grad, x):
        return max(x, grad)
    B._ONE_CALL.pop(formula.__code__, None)
    reads = []
    real = B._read_one_call
    B._read_one_call = lambda code: reads.append(code) or real(code)
    try:
        assert B._one_call(formula) == ("max", (1, 0))
        assert B._one_call(formula) == ("max", (1, 0))
    finally:
        B._read_one_call = real
    assert reads == [formula.__code__]
