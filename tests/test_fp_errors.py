"""NumPy's floating-point errors are silenced in backward passes and in kernels that may warn
(as torch gives inf and nan without a word), and the caller's error handling is back after
them, also after a pass that raised (ember._backend.fp_errors)."""
import warnings

import numpy as np
from oracle import same

import ember
from ember._backend import fp_errors


def test_silent_infinities_and_nans_match_torch():
    def body(torch):
        x = torch.tensor([0.0, 4.0, -1.0], requires_grad=True)
        out = []
        for y in (x.sqrt(), torch.log(x), x.pow(-0.5)):  # (log, pow: quiet kernels)
            (g,) = torch.autograd.grad(y.sum(), [x], create_graph=True)
            (gg,) = torch.autograd.grad(g.sum(), [x])
            out += [y, g, gg]
        return out
    same(body)


def test_callers_error_state_is_back_after_passes_and_quiet_kernels():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with np.errstate(over="raise", divide="warn", invalid="call"), warnings.catch_warnings():
        warnings.simplefilter("error")
        before = np.geterr()
        ember.log(ember.tensor([0.0, -1.0]))  # a quiet kernel
        assert np.geterr() == before
        x.sqrt().sum().backward()
        assert np.geterr() == before
        y = x.sqrt().sum()
        y.register_hook(lambda g: 1 / 0)
        try:
            y.backward()
        except ZeroDivisionError:
            pass
        assert np.geterr() == before


def test_a_pass_keeps_the_callers_buffer_size():
    seen = []
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: seen.append((np.geterr(), np.getbufsize())))
    old = np.setbufsize(16384)
    try:
        y.sum().backward()
        assert seen == [({"divide": "ignore", "over": "ignore", "under": "ignore",
                          "invalid": "ignore"}, 16384)]
        assert np.getbufsize() == 16384
    finally:
        np.setbufsize(old)


def test_silence_nests():
    outer = fp_errors.silence()
    inner = fp_errors.silence()
    assert np.geterr()["divide"] == "ignore"
    fp_errors.restore(inner)
    assert np.geterr()["divide"] == "ignore"
    fp_errors.restore(outer)
    assert np.geterr()["divide"] != "ignore"


def test_compiled_replays_are_silent_and_keep_the_callers_error_state():
    def f(x):
        return (x - x.exp()) * x

    def body(torch):
        run = ember.compile(f) if torch is ember else f
        outs = []
        for _ in range(3):  # (ember: the recording call, then replays)
            x = torch.tensor([float("inf"), 1e30, 0.0], requires_grad=True)
            y = run(x)
            y.sum().backward()
            outs += [y, x.grad]
        return outs

    with np.errstate(all="raise"):
        before = np.geterr()
        same(body, grad_fn=False)  # (ember's replays have one node for the whole function)
        assert np.geterr() == before


def test_replays_follow_the_callers_error_state_as_it_changes():
    # a replay silences NumPy from a state built from the caller's, rebuilt when that changes
    # (the generated call tests it inline): each replay silent, the caller's state kept
    run = ember.compile(lambda x: (x - x.exp()) * x)
    x = ember.tensor([float("inf"), 1e30, 0.0], requires_grad=True)
    want = run(x).detach().numpy().tobytes()
    for errors in ({"all": "raise"}, {"over": "warn"}, {"all": "raise"}, {}, {}):
        with np.errstate(**errors), warnings.catch_warnings():
            warnings.simplefilter("error")
            before = np.geterr()
            assert run(x).detach().numpy().tobytes() == want
            assert np.geterr() == before
    assert len(run.entries) == 1


def test_made_nan_notes_an_invalid_result_in_a_quiet_kernel_only():
    def kernel(x):
        return fp_errors.made_nan(np.sqrt, x)[1]
    assert fp_errors.quietly(kernel, np.array([-1.0]))
    assert not fp_errors.quietly(kernel, np.array([1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not kernel(np.array([-1.0]))  # (outside: NumPy's own handling, nothing noted)
