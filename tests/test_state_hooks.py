"""The one flag the hot paths read for the hooks (``ember._state.intercepted``): set while
any of forward AD, the profiler, a compiled function's recording or a torch.func transform's
captured-write check is on, so that the generated operators and a compiled function's call
test it alone. A stale flag would let those paths skip a hook: each hook is checked here to
keep it, and the operators to still reach each hook through it."""
import pathlib
import re

import numpy as np
import pytest

import ember
from ember import _state

from oracle import same, torch_or_skip

_HOOKS = ("forward_hook", "profiler_hook", "recording", "captured_write_check", "function_mode")


def test_no_code_sets_a_hook_but_set_hook():
    """set_hook keeps the flag: an assignment of its own would leave it stale."""
    src = pathlib.Path(ember.__file__).parent
    direct = re.compile(r"\b(" + "|".join(_HOOKS) + r")\[0\]\s*(=[^=]|[-+]=)"
                        r"|\b(" + "|".join(_HOOKS) + r")\[0\],[^=\n]*=[^=]")
    found = [f"{p.relative_to(src)}:{k}: {line.strip()}"
             for p in src.rglob("*.py") if p.name != "_state.py"
             for k, line in enumerate(p.read_text().splitlines(), 1)
             if direct.search(line.split("#")[0])]
    assert not found, found


def _flag():
    return _state.intercepted[0]


def test_flag_follows_forward_ad_and_profiler():
    fw = ember.autograd.forward_ad
    assert not _flag()
    with fw.dual_level():
        assert _flag()
        with ember.no_grad():
            assert _flag()
    assert not _flag()
    with ember.autograd.profiler.profile():
        assert _flag()
    assert not _flag()
    with ember.profiler.profile():
        assert _flag()
    assert not _flag()


def test_flag_follows_a_compiled_recording_and_func_transforms():
    def f(x):  # (the factor tells the flag while it was recorded, without a side effect)
        return (x * (2.0 if _flag() else 3.0)).sum()
    compiled = ember.compile(f)
    x = ember.ones(3)
    assert [compiled(x).item() for _ in range(3)] == [6.0, 6.0, 6.0]  # (recorded, replayed)
    assert len(compiled.entries) == 1 and not _flag()
    seen = []

    def g(x):
        seen.append(_flag())
        return (x * x).sum()
    ember.func.grad(g)(x)
    ember.func.vmap(g)(ember.ones(2, 3))
    assert seen == [True, True] and not _flag()


def test_flag_set_back_after_an_error_inside():
    fw = ember.autograd.forward_ad
    with pytest.raises(ValueError):
        with fw.dual_level():
            raise ValueError
    with pytest.raises(ValueError):
        with ember.autograd.profiler.profile():
            raise ValueError
    assert not _flag()


def test_operators_reach_the_captured_write_check():
    """``x -= 1.0`` on a tensor the transformed function captures: torch's refusal, though
    the operator's plain path would take it (no grad mode, a plain float tensor)."""
    torch_or_skip()

    def body(lib):
        w = lib.ones(3)

        def f(x):
            nonlocal w
            with lib.no_grad():
                w -= 1.0
            return (x * w).sum()
        return lib.func.grad(f)(lib.ones(3))
    assert "mutate a captured Tensor" in same(body).error[1]


def test_operators_reach_forward_ad_and_the_profiler():
    """The update's two operators (``lr * g``, ``p -= ...``) under no_grad: a dual tensor
    gets its tangent through them, and the profiler sees both, as in torch."""
    torch = torch_or_skip()
    got = []
    for lib in (torch, ember):
        fw = lib.autograd.forward_ad
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        with fw.dual_level(), lib.no_grad():
            g = fw.make_dual(lib.tensor([3.0, 4.0]), lib.tensor([1.0, -1.0]))
            step = 0.5 * g
            q = p.detach().clone()
            q -= step
            tangents = [fw.unpack_dual(t).tangent.tolist() for t in (step, q)]
        with lib.autograd.profiler.profile() as prof, lib.no_grad():
            p -= 0.5 * lib.ones(2)
        names = [e.name for e in prof.function_events if e.name in ("aten::sub_", "aten::mul")]
        got.append((tangents, names, p.tolist(), p._version))
    assert got[1] == got[0]


def test_compiled_call_runs_eagerly_while_a_hook_is_on():
    """A compiled function's call reads the flag first: under the profiler the function
    runs (its ops are profiled), as in eager mode, and after it the recording replays."""
    compiled = ember.compile(lambda x: (x * 3.0).sum())
    x = ember.tensor(np.arange(3.0), requires_grad=True)
    compiled(x)
    with ember.autograd.profiler.profile() as prof:
        assert compiled(x).item() == 9.0
    assert "aten::mul" in [e.name for e in prof.function_events]
    with ember.autograd.profiler.profile() as prof:
        pass
    assert compiled(x).item() == 9.0 and len(compiled.entries) == 1
