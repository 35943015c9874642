"""Replay forms (ember/_ops/replay.py): a compiled program calls the function a kernel's path
ends in for the recorded types, dtypes and shapes. What the path reads of values and of a
gradient's layout is still read at each replay: every replay gives eager's results bit for
bit, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

import ember


def _bits(*tensors):
    return [(t.dtype, tuple(t.shape), t.stride(), t.detach().numpy().tobytes())
            for t in tensors]


def _replays(step, calls):
    """``step(compiled, k)`` run eagerly and compiled for calls k = 0..calls-1: the same bits."""
    seen = {}
    for compiled in (False, True):
        seen[compiled] = [step(compiled, k) for k in range(calls)]
    for k, (e, c) in enumerate(zip(seen[False], seen[True])):
        assert c == e, f"call {k} differs"


def _elementwise_step(fn, base, upstream):
    """A ``step`` for _replays: ``fn`` of ``base * (k + 1)`` (compiled once, kept as
    ``step.compiled``), backward from ``upstream``; its output's and gradient's bits."""
    def step(compiled, k):
        x = ember.tensor(base * (k + 1), requires_grad=True)
        f = fn
        if compiled:
            f = step.compiled = getattr(step, "compiled", None) or ember.compile(fn)
        out = f(x)
        out.backward(ember.tensor(upstream))
        return _bits(out, x.grad)
    return step


def test_the_w2_programs_call_the_forms():
    rs = np.random.RandomState(0)
    W = ember.tensor(rs.randn(20, 10).astype(np.float32), requires_grad=True)
    x = ember.tensor(rs.randn(32, 20).astype(np.float32))
    y = ember.tensor(rs.randint(0, 10, 32))
    loss_of = ember.compile(lambda x, y: ember.nn.functional.cross_entropy(
        (x @ W).relu(), y))
    loss_of(x, y).backward()
    program = loss_of.entries[0].program
    called = {getattr(v, "__name__", getattr(getattr(v, "func", None), "__name__", None))
              for v in {**program.forward.__globals__, **program.backward.__globals__}.values()
              if callable(v)}
    assert {"matmul", "maximum", "_log_softmax_of_some_short_rows", "nll",
            "_log_softmax_gradient_of_short_rows", "_host_mat2_grad", "gradient"} <= called
    assert not {"mm", "relu", "_nll", "_mat2_grad", "nll_loss_backward"} & called


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_targets_checked_at_every_replay(reduction):
    # the targets' range is the values' business: a replay with an ignored sample takes the
    # general path (forward and backward), one with a class out of range raises torch's error
    def body(torch):
        g = torch.Generator().manual_seed(1)
        W = torch.randn(12, 10, generator=g).requires_grad_()
        x = torch.randn(40, 12, generator=g)

        def loss(x, y):
            return torch.nn.functional.cross_entropy(x @ W, y, reduction=reduction)
        if torch is ember:
            loss = ember.compile(loss)
        seen = []
        for k in range(4):
            y = torch.randint(0, 10, (40,), generator=g)
            if k == 2:
                y[[3, 17, 39]] = -100
            if k == 3:
                y[5] = 10
            out = loss(x, y)
            out.backward()
            seen.append((out, W.grad))
            W.grad = None
        return seen
    same(body, rtol=1e-6, atol=1e-6)


def test_nll_replays_bit_for_bit_with_ignored_samples():
    rs = np.random.RandomState(2)
    x = rs.randn(70, 10).astype(np.float32)
    targets = [rs.randint(0, 10, 70) for _ in range(3)]
    targets[1][[0, 16, 69]] = -100

    def step(compiled, k, cache={}):
        if compiled not in cache:
            W = ember.tensor(np.eye(10, dtype=np.float32), requires_grad=True)
            fn = lambda x, y: ember.nn.functional.cross_entropy(x @ W, y)  # noqa: E731
            cache[compiled] = (W, ember.compile(fn) if compiled else fn)
        W, fn = cache[compiled]
        out = fn(ember.tensor(x), ember.tensor(targets[k]))
        out.backward()
        bits = _bits(out, W.grad)
        W.grad = None
        return bits
    _replays(step, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [9, 17, 33, 64, 100])
def test_nll_replays_every_ordered_sum_case_bit_for_bit(n, dtype):
    # the reduced loss's ordered sum has a closure per batch case (level 0 only, level 1
    # only, both): each replays eager's bits (which tests/test_nll_sum_exact.py pins to torch)
    rs = np.random.RandomState(n)
    xs = [(rs.randn(n, 10) * 4).astype(dtype) for _ in range(3)]
    targets = [rs.randint(0, 10, n) for _ in range(3)]

    def step(compiled, k, cache={}):
        key = (compiled, n, dtype)
        if key not in cache:
            W = ember.tensor(np.eye(10, dtype=dtype), requires_grad=True)
            fn = lambda x, y: ember.nn.functional.cross_entropy(x @ W, y)  # noqa: E731
            cache[key] = (W, ember.compile(fn) if compiled else fn)
        W, fn = cache[key]
        out = fn(ember.tensor(xs[k]), ember.tensor(targets[k]))
        out.backward()
        bits = _bits(out, W.grad)
        W.grad = None
        return bits
    _replays(step, 3)


def test_relu_gradient_keeps_nan_and_signed_zeros():
    # ReLU's gradient written as masked words: NaN inputs and gradients, -0.0 and the tie at
    # 0 as eager's where()
    rs = np.random.RandomState(3)
    base = rs.randn(80, 64).astype(np.float32)
    base[0, :8] = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-40, -1e-40]
    upstream = rs.randn(80, 64).astype(np.float32)
    upstream[1, :4] = [np.nan, -0.0, 0.0, np.inf]

    _replays(_elementwise_step(lambda x: x.relu() * 1.0, base, upstream), 3)


@pytest.mark.parametrize("log", [True, False])
@pytest.mark.parametrize("rows", [16, 64, 127])
def test_softmax_of_short_rows_and_a_strided_output_gradient(log, rows):
    # the forward's path is fixed by the logits' shape and layout; log_softmax's gradient
    # sums rows of the output gradient, whose layout is the caller's (here transposed)
    rs = np.random.RandomState(rows)
    xs = [rs.randn(rows, 10).astype(np.float32) * 5 for _ in range(3)]
    grads = [rs.randn(10, rows).astype(np.float32) for _ in range(3)]

    def step(compiled, k, cache={}):
        key = (compiled, log, rows)
        if key not in cache:
            fn = (lambda x: ember.log_softmax(x * 1.0, 1)) if log else (
                lambda x: ember.softmax(x * 1.0, -1))
            cache[key] = ember.compile(fn) if compiled else fn
        x = ember.tensor(xs[k], requires_grad=True)
        out = cache[key](x)
        g = ember.tensor(grads[k])
        out.backward(g.t() if k != 1 else g.t().contiguous())
        return _bits(out, x.grad)
    _replays(step, 3)


def test_mm_gradients_of_column_major_matrices():
    # mm's gradient of a column-major input is computed transposed (torch's layout): the
    # path is the recorded input's strides, a constant of the recording
    rs = np.random.RandomState(5)
    m, a = rs.randn(3, 4).astype(np.float32), rs.randn(6, 7).astype(np.float32)

    def step(compiled, k, cache={}):
        if compiled not in cache:
            M = ember.tensor(m.T.copy()).t().detach().requires_grad_()  # (column-major)
            A = ember.tensor(a.T.copy()).t().detach().requires_grad_()
            fn = lambda x: ((M @ x) @ A).sum(0)  # noqa: E731
            cache[compiled] = (M, A, ember.compile(fn) if compiled else fn)
        M, A, fn = cache[compiled]
        x = ember.tensor(np.random.RandomState(10 + k).randn(4, 6).astype(np.float32))
        out = fn(x)
        out.backward(ember.ones(7))
        bits = _bits(out, M.grad, A.grad)
        assert M.grad.stride() == (1, 3) and A.grad.stride() == (1, 6)
        M.grad = A.grad = None
        return bits
    _replays(step, 3)


def test_a_backward_program_of_forms_runs_in_the_engines_silence():
    # every kernel the W2-like backward calls is a replay form's callee, which notes no NaN:
    # the program runs in the engine's silenced state, and NumPy's errors (the user's
    # np.errstate raising) stay silent all the same, as in eager
    def run(compiled):
        W = ember.tensor(np.array([[np.inf, 1.0], [0.0, -np.inf]] * 10, np.float32).T.copy(),
                         requires_grad=True)
        x = ember.tensor(np.full((20, 2), 1e38, np.float32))
        y = ember.tensor(np.arange(20) % 20)
        fn = lambda x, y: ember.nn.functional.cross_entropy((x @ W).relu(), y)  # noqa: E731
        if compiled:
            fn = ember.compile(fn)
        seen = []
        with np.errstate(all="raise"):
            for _ in range(3):
                loss = fn(x, y)
                loss.backward()
                seen.append(_bits(loss, W.grad))
                W.grad = None
        if compiled:
            assert fn.entries[0].program.backward_quiet is False
        return seen
    assert run(True) == run(False)


def test_float32_tanh_gradient_called_and_bit_for_bit():
    # tanh's float32 gradient as its callee (no kernel path, no quiet wrapper): NaN, inf,
    # signed zeros and outputs near +-1 and below 1/8 as eager's, at every replay
    rs = np.random.RandomState(5)
    base = rs.randn(64).astype(np.float32) * 3
    base[:8] = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-40, 0.1]
    upstream = rs.randn(64).astype(np.float32)
    upstream[8:12] = [np.nan, -0.0, np.inf, 1e-40]

    step = _elementwise_step(lambda x: x.tanh().tanh() * 1.0, base, upstream)
    _replays(step, 3)
    program = step.compiled.entries[0].program
    called = {getattr(v, "__name__", None) for v in program.backward.__globals__.values()}
    assert "_float32_tanh_gradient" in called
