"""A create_graph backward (and a double backward) through a compiled function whose sources
- its inputs and the outside tensors it reads that require grad - lie behind one another, or
behind a custom Function, or share a leaf: each source's gradient is the node's, and what
lies behind a source is reached once, through the node's edge, as in eager. Checked against
torch's eager mode (skipped without torch), at the recording call and at a replay."""
from __future__ import annotations

import warnings

import pytest

import ember
from oracle import same, torch_or_skip


@pytest.fixture(scope="module", autouse=True)
def _reference_cycle_warned_in_both():
    """Both libraries warn once per process about ``backward(create_graph=True)`` into leaves;
    whether a test here sees that warning would depend on which tests ran before it in the
    process. Give both their one warning first, so that neither warns in these tests."""
    for lib in (ember, torch_or_skip()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            leaf = lib.ones(1, requires_grad=True)
            (leaf * 2).sum().backward(create_graph=True)


def _same_values(body):
    """``same``, where the body must run through on both sides (an error both raise would
    compare equal and check nothing)."""
    assert same(body, grad_fn=False).error is None


def _compile(lib):
    """ember.compile, or on torch's side the function itself (torch.compile's contract is
    eager's values)."""
    return lib.compile if lib is ember else (lambda f: f)


def _double(t, leaf, make_call):
    """The gradient of ``leaf`` through a create_graph backward of the call that
    ``make_call(compiled)`` makes, then the gradient of that gradient's weighted sum: at the
    recording call and at a replay."""
    found = []
    for replay, weights in ((False, [1.0, -2.0, 0.5]), (True, [0.25, 3.0, -1.0])):
        cf = _compile(t)(lambda a, b: a * b * 3 + (a * b).sin() + b.exp())
        if replay:
            make_call(cf)
        out = make_call(cf)
        g, = t.autograd.grad(out.sum(), [leaf], create_graph=True)
        gg, = t.autograd.grad((g * t.tensor(weights)).sum(), [leaf], allow_unused=True,
                                  retain_graph=True)
        found += [g.detach(), gg]
    return found


def test_an_input_behind_the_other_input():
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = x * x
        return _double(t, x, lambda cf: cf(x, y))
    _same_values(body)


def test_a_captured_tensor_behind_the_input():
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        w = (x * x).sum()
        found = []
        for _ in range(2):
            cf = _compile(t)(lambda a: a * a * w + w.exp() * a)
            cf(x)
            g, = t.autograd.grad(cf(x).sum(), [x], create_graph=True)
            gg, = t.autograd.grad((g * t.tensor([1.0, -2.0, 0.5])).sum(), [x],
                                  retain_graph=True)
            found += [g.detach(), gg]
        return found
    _same_values(body)


def test_inputs_sharing_a_leaf():
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        return _double(t, x, lambda cf: cf(x * 2, x.sin()))
    _same_values(body)


def test_the_same_leaf_as_both_inputs_and_as_a_captured_tensor():
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        found = []
        for _ in range(2):
            cf = _compile(t)(lambda a, b: a * b * x + x.cos() * a)
            cf(x, x)
            g, = t.autograd.grad(cf(x, x).sum(), [x], create_graph=True)
            gg, = t.autograd.grad(g.sum(), [x], retain_graph=True)
            found += [g.detach(), gg]
        return found
    _same_values(body)


@pytest.mark.parametrize("how", ["leaf_behind", "into_grad"])
def test_an_input_made_by_a_custom_function(how):
    """A custom Function's backward runs once, in the outer pass (its count and values as
    eager's), whether the gradient is asked of the Function's input or its output."""
    def body(t):
        calls = []

        class Twice(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                calls.append(1)
                return g * 2 + x * 0.5
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = Twice.apply(x)
        cf = _compile(t)(lambda a, b: a * b * 3 + (a * b).sin() + b.exp())
        cf(y, y * 1.5)
        out = cf(y, y * 1.5)
        if how == "leaf_behind":
            g, = t.autograd.grad(out.sum(), [x], create_graph=True)
            gg, = t.autograd.grad(g.sum(), [x])
        else:
            g, = t.autograd.grad(out.sum(), [y], create_graph=True)
            gg, = t.autograd.grad(g.sum(), [y])
        return g.detach(), gg, len(calls)
    _same_values(body)


def test_backward_create_graph_accumulates_each_path_once():
    """``.backward(create_graph=True)`` into the leaves (44000242's form, with a source
    behind the other and a captured one behind both), then ``.grad``'s own gradient."""
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        w = x.max() * x.min()
        y = x.exp()
        cf = _compile(t)(lambda a, b: a * b * w)
        cf(x, y)
        cf(x, y).sum().backward(create_graph=True)
        first = x.grad.clone().detach()
        gg, = t.autograd.grad(x.grad.sum(), [x])
        return first, gg
    _same_values(body)


def test_an_input_that_views_the_other():
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)

        def call(cf):
            y = x[1:]
            return cf(y, y.view(2))
        return _double(t, x, call)
    _same_values(body)


def test_an_output_that_is_an_input_behind_the_other():
    """The output is the source itself (the pass's root is its stand-in)."""
    def body(t):
        x = t.tensor([0.5, -1.0, 2.0], requires_grad=True)
        found = []
        for replay in (False, True):
            cf = _compile(t)(lambda a, b: (a, a * b))
            if replay:
                cf(x.exp(), x)
            o1, o2 = cf(x.exp(), x)
            g, = t.autograd.grad((o1 * o1).sum() + o2.sum(), [x], create_graph=True)
            gg, = t.autograd.grad(g.sum(), [x])
            found += [g.detach(), gg]
        return found
    _same_values(body)
