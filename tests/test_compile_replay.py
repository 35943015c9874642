"""ember.compile's generated programs against torch's eager mode: the engine's steps a
backward program writes out (a gradient summed down to a broadcast input's shape, two
gradients of one input added) give torch's gradients and their versions at every replay,
not only at the recording call."""
from __future__ import annotations

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
