"""The registry's generated Tensor path records a call's node itself (its recorder's lines are
written out in it): what a node saves follows the op's formulas even when they are declared
after the op was first called, and the inline recording keeps the generic path's errors."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

import ember
from ember._ops.registry import REGISTRY, op


def test_a_formula_declared_after_the_first_call_is_recorded():
    @op("_test_late_square")
    def late_square(self):
        return self * self

    try:
        x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = late_square(x)  # (the Tensor path is generated now, with no formula to save for)
        assert y.grad_fn.name() == "TestLateSquareBackward0"
        (g,) = ember.autograd.grad(y.sum(), [x], allow_unused=True)
        assert g is None  # no formula: no gradient reaches x

        @late_square.grad("self")
        def _(grad, self):
            return grad * 2 * self

        y = late_square(x)
        assert y.grad_fn._saved_self is x
        (g,) = ember.autograd.grad(y.sum(), [x])
        np.testing.assert_array_equal(g.numpy(), [2.0, -4.0, 6.0])
    finally:
        REGISTRY.pop("_test_late_square", None)


def _recorded(torch):
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    w = torch.tensor([[1.0, 2.0], [3.0, -1.0]])
    y = torch.tanh(torch.mv(w, x)) ** 2
    m = x * torch.tensor([2.0, 3.0])
    (g,) = torch.autograd.grad(y.sum(), [x], create_graph=True)
    (h,) = torch.autograd.grad((g * m).sum(), [x])
    out = [y, m, g, h, y.grad_fn.name(), m.grad_fn.name(), g.grad_fn.name(),
           [f[0].name() if f[0] is not None else None for f in g.grad_fn.next_functions],
           y.grad_fn._saved_self is not None, m.grad_fn._saved_other is not None]
    with torch.inference_mode():
        i = torch.ones(2)
    try:
        x * i
    except RuntimeError as e:
        out.append(str(e))
    return out


def test_inline_recording_matches_torch():
    same(_recorded)


def test_saved_values_and_versions_checked_as_before():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    b = a * a
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def _hooks_in_another_thread(torch):
    # saved tensor hooks are per thread: a thread holding some open does not make another
    # thread's recorded ops pack what they save
    import threading
    packed = []
    entered, done = threading.Event(), threading.Event()

    def other():
        with torch.autograd.graph.saved_tensors_hooks(
                lambda t: packed.append("other") or t, lambda t: t):
            entered.set()
            done.wait()
    thread = threading.Thread(target=other)
    thread.start()
    entered.wait()
    try:
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        y = x * x
        with torch.autograd.graph.saved_tensors_hooks(
                lambda t: packed.append("main") or t.detach() * 2, lambda t: t):
            z = x * x
        w = x * x
    finally:
        done.set()
        thread.join()
    grads = [torch.autograd.grad(r.sum(), [x])[0] for r in (y, z, w)]
    return packed, grads


def test_saved_tensor_hooks_of_another_thread_pack_nothing_here():
    from ember._state import record_extras
    same(_hooks_in_another_thread)
    assert record_extras[0] == 0  # every context left: recorded ops read no per-thread hooks


def test_anomaly_mode_traces_only_its_own_threads_nodes():
    import threading

    from ember._state import record_extras
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    nodes = {}

    def other():
        nodes["other"] = (x * x).grad_fn
    ember.autograd.set_detect_anomaly(True)
    ember.autograd.set_detect_anomaly(True)  # (on twice is on once)
    try:
        nodes["main"] = (x * x).grad_fn
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    finally:
        ember.autograd.set_detect_anomaly(False)
    nodes["after"] = (x * x).grad_fn
    assert nodes["main"]._trace is not None
    assert nodes["other"]._trace is None and nodes["after"]._trace is None
    assert record_extras[0] == 0



def test_input_metadata_stays_right_when_the_shared_table_starts_over(monkeypatch):
    # nodes share their inputs' (shape, dtype) pairs from a table kept to a few values; once
    # it is full it starts over, and the nodes made before keep theirs (the engine checks each
    # gradient against them: a wrong one would refuse or misshape it)
    from ember._ops import registry
    monkeypatch.setattr(registry._METAS, "KEPT", 3)
    registry._METAS.clear()  # (this test's values are then new: more than 3 of them)

    def body(t):
        x = t.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        parts = [x.sum(0), x[0].float(), x.sum(), x.reshape(3, 2), x.sum(1, keepdim=True)]
        outs = [(p * p).sin() * p for p in parts]  # (two inputs alike: a shared two-pair tuple)
        if t is ember:
            for p, q in zip(parts, outs):
                assert q.grad_fn._meta == ((tuple(p.shape), p._data.dtype),) * 2
                assert q.grad_fn.next_functions[0][0]._meta == ((tuple(p.shape),
                                                                 p._data.dtype),)
            assert len(registry._METAS) <= 3
        return t.autograd.grad(sum(q.sum() for q in outs), [x])[0]
    same(body)
