"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Context managers, decorators (functions and generators), plain calls, reprs, nesting,
exceptions, and thread-locality; PyTorch 2.13's behaviour, compared with torch where installed.
"""
import threading

import pytest
from oracle import same

import ember


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
    yield
    ember.set_grad_enabled(True)


def leaf():
    return ember.tensor([1., 2.], requires_grad=True)


class TestNoGrad:
    def test_context_manager(self):
        x = leaf()
        with ember.no_grad():
            assert not ember.is_grad_enabled()
            y = x * 2
        assert ember.is_grad_enabled()
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        assert (x * 2).requires_grad

    def test_enter_returns_none(self):
        with ember.no_grad() as r:
            assert r is None

    def test_factories_still_make_leaves_requiring_grad(self):
        with ember.no_grad():
            t = ember.zeros(2, requires_grad=True)
        assert t.requires_grad and t.is_leaf

    def test_decorator(self):
        @ember.no_grad()
        def f(x):
            return x * 2, ember.is_grad_enabled()

        @ember.no_grad
        def g(x):
            return x * 2

        x = leaf()
        y, mode = f(x)
        assert not y.requires_grad and mode is False
        assert not g(x).requires_grad
        assert ember.is_grad_enabled()
        assert f.__name__ == "f" and g.__name__ == "g"

    def test_nesting(self):
        with ember.no_grad():
            with ember.no_grad():
                assert not ember.is_grad_enabled()
            assert not ember.is_grad_enabled()
        assert ember.is_grad_enabled()

    def test_exception_restores_mode(self):
        with pytest.raises(ValueError), ember.no_grad():
            raise ValueError("boom")
        assert ember.is_grad_enabled()

        @ember.no_grad()
        def f():
            raise KeyError("x")
        with pytest.raises(KeyError):
            f()
        assert ember.is_grad_enabled()


class TestEnableGrad:
    def test_inside_no_grad(self):
        x = leaf()
        with ember.no_grad():
            with ember.enable_grad():
                assert ember.is_grad_enabled()
                y = x * 2
            assert not ember.is_grad_enabled()
        assert y.requires_grad and y.grad_fn.name() == "MulBackward0"

    def test_decorator(self):
        @ember.enable_grad()
        def f(x):
            return x * 2

        @ember.enable_grad
        def g(x):
            return x * 2

        x = leaf()
        with ember.no_grad():
            assert f(x).requires_grad and g(x).requires_grad
            assert not ember.is_grad_enabled()

    def test_exception_restores_mode(self):
        with ember.no_grad():
            with pytest.raises(ValueError), ember.enable_grad():
                raise ValueError
            assert not ember.is_grad_enabled()


class TestSetGradEnabled:
    def test_plain_call_sets_the_mode(self):
        x = leaf()
        ember.set_grad_enabled(False)
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        ember.set_grad_enabled(True)
        assert ember.is_grad_enabled() and (x * 2).requires_grad

    def test_context_manager(self):
        x = leaf()
        with ember.set_grad_enabled(False) as r:
            assert r is None
            assert not (x * 2).requires_grad
        assert ember.is_grad_enabled()
        with ember.no_grad():
            with ember.set_grad_enabled(True):
                assert (x * 2).requires_grad
            assert not ember.is_grad_enabled()

    def test_the_constructor_already_switches(self):
        sg = ember.set_grad_enabled(False)
        assert not ember.is_grad_enabled()
        with sg:
            assert not ember.is_grad_enabled()
        assert ember.is_grad_enabled()

    def test_plain_call_inside_a_context_is_undone_on_exit(self):
        with ember.no_grad():
            ember.set_grad_enabled(True)
            assert ember.is_grad_enabled()
        assert ember.is_grad_enabled()

    def test_decorator_leaves_mode_alone(self):
        @ember.set_grad_enabled(False)
        def f(x):
            return x * 2

        assert ember.is_grad_enabled()
        assert not f(leaf()).requires_grad
        assert ember.is_grad_enabled()
        assert f.__name__ == "f"

    def test_repr(self):
        s = ember.set_grad_enabled(False)
        r = repr(s)
        ember.set_grad_enabled(True)
        assert r == "ember.autograd.grad_mode.set_grad_enabled(mode=False)"
        assert repr(ember.set_grad_enabled(True)) == \
            "ember.autograd.grad_mode.set_grad_enabled(mode=True)"

    def test_mode_must_be_bool(self):
        with pytest.raises(TypeError) as e:
            ember.set_grad_enabled(1)
        assert str(e.value) == ("set_grad_enabled(): argument 'enabled' (position 1) must be "
                                "bool, not int")

    def test_oracle(self):
        def body(torch):
            out = []
            x = torch.tensor([1.], requires_grad=True)
            s = torch.set_grad_enabled(False)
            out.append((repr(s), torch.is_grad_enabled(), (x * 2).requires_grad))
            torch.set_grad_enabled(True)
            with torch.no_grad():
                out.append(((x * 2).requires_grad, torch.is_grad_enabled()))
                with torch.enable_grad():
                    out.append(((x * 2).requires_grad, torch.is_grad_enabled()))
                    with torch.set_grad_enabled(False):
                        out.append(torch.is_grad_enabled())
                    out.append(torch.is_grad_enabled())
                torch.set_grad_enabled(True)
                out.append(torch.is_grad_enabled())
            out.append(torch.is_grad_enabled())

            @torch.set_grad_enabled(False)
            def h(t):
                return t * 2
            out += [torch.is_grad_enabled(), h(x), repr(torch.set_grad_enabled(True))]
            return out
        same(body)


class TestGenerators:
    def test_no_grad_generator_sees_the_mode_on_every_resume(self):
        log = []

        @ember.no_grad()
        def gen():
            for k in range(2):
                log.append(("in", ember.is_grad_enabled()))
                got = yield k
                log.append(("got", got))

        it = gen()
        assert next(it) == 0
        log.append(("outside", ember.is_grad_enabled()))
        assert it.send("a") == 1
        log.append(("outside", ember.is_grad_enabled()))
        it.close()
        assert log == [("in", False), ("outside", True), ("got", "a"), ("in", False),
                       ("outside", True)]

    def test_decorated_generator_runs_to_completion(self):
        @ember.no_grad()
        def gen():
            yield ember.is_grad_enabled()
            yield ember.is_grad_enabled()
            return "done"

        assert list(gen()) == [False, False]
        it = gen()
        next(it)
        next(it)
        with pytest.raises(StopIteration) as e:
            next(it)
        assert e.value.value == "done"

    def test_enable_grad_generator(self):
        @ember.enable_grad()
        def gen():
            while True:
                yield ember.is_grad_enabled()

        with ember.no_grad():
            it = gen()
            assert [next(it), next(it)] == [True, True]
            assert not ember.is_grad_enabled()
            it.close()

    def test_throw_into_generator(self):
        @ember.no_grad()
        def gen():
            try:
                yield 1
            except ValueError:
                yield ember.is_grad_enabled()

        it = gen()
        next(it)
        assert it.throw(ValueError()) is False
        assert ember.is_grad_enabled()
        it.close()

    def test_oracle(self):
        def body(torch):
            out = []

            @torch.no_grad()
            def g():
                for k in range(3):
                    out.append(("in", torch.is_grad_enabled()))
                    x = yield k
                    out.append(("got", x))
            it = g()
            out.append(("first", next(it)))
            out.append(("outside", torch.is_grad_enabled()))
            out.append(("send", it.send("a")))
            out.append(("outside", torch.is_grad_enabled()))
            it.close()
            return out
        same(body)


class TestInferenceMode:
    def test_context_manager(self):
        x = leaf()
        assert not ember.is_inference_mode_enabled()
        with ember.inference_mode():
            assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
            y = x * 2
        assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()
        assert not y.requires_grad and y.is_inference()
        assert not x.is_inference() and not (x * 2).is_inference()

    def test_no_grad_tensors_are_not_inference_tensors(self):
        with ember.no_grad():
            y = leaf() * 2
        assert not y.is_inference()

    def test_decorator(self):
        @ember.inference_mode()
        def f(x):
            return x * 2, ember.is_inference_mode_enabled()

        @ember.inference_mode
        def g(x):
            return x * 2

        y, mode = f(leaf())
        assert mode is True and not y.requires_grad
        assert not g(leaf()).requires_grad
        assert not ember.is_inference_mode_enabled()

    def test_exception_restores(self):
        with pytest.raises(ValueError), ember.inference_mode():
            raise ValueError
        assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()

    def test_disabled_outside(self):
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()
        with ember.inference_mode(mode=False):
            assert not ember.is_inference_mode_enabled()

    def test_disabled_inside_inference_mode(self):
        x = leaf()
        with ember.inference_mode():
            with ember.inference_mode(False):
                assert not ember.is_inference_mode_enabled()
                assert ember.is_grad_enabled()
                w = x * 2
                assert w.requires_grad and not w.is_inference()
            assert ember.is_inference_mode_enabled()

    def test_factories_make_inference_tensors(self):
        with ember.inference_mode():
            z = ember.ones(2)
        assert z.is_inference()

    def test_enable_grad_inside_inference_mode(self):
        x = leaf()
        with ember.inference_mode(), ember.enable_grad():
            assert ember.is_grad_enabled() and ember.is_inference_mode_enabled()
            assert not (x * 2).requires_grad

    def test_inference_tensor_restrictions(self):
        x = leaf()
        with ember.inference_mode():
            y = x * 2
        with pytest.raises(RuntimeError) as e:
            (y * x).sum().backward()
        assert str(e.value) == (
            "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
            "inference mode in computation tracked by autograd. To work around this, you can make "
            "a clone to get a normal tensor and use it in autograd, or use `ember.no_grad()` "
            "instead of `ember.inference_mode()`.")
        with pytest.raises(RuntimeError) as e:
            y.add_(1)
        assert str(e.value) == (
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make "
            "a clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details.")

    def test_oracle(self):
        def body(torch):
            out = []
            x = torch.tensor([1.], requires_grad=True)
            out.append(torch.is_inference_mode_enabled())
            with torch.inference_mode():
                y = x * 2
                out += [torch.is_inference_mode_enabled(), torch.is_grad_enabled(),
                        y.requires_grad, y.is_inference()]
            out += [torch.is_inference_mode_enabled(), torch.is_grad_enabled(),
                    x.is_inference(), (x * 2).is_inference()]

            @torch.inference_mode()
            def f(t):
                return t * 2, torch.is_inference_mode_enabled()
            out.append(f(x))
            return out
        same(body)


    def test_requires_grad_of_an_inference_tensor_checks_the_dtype_first(self):
        def body(torch):
            with torch.inference_mode():
                ints, floats = torch.tensor([1, 2]), torch.tensor([1.0])
            out = []
            for t in (ints, floats):
                for call in (lambda: t.requires_grad_(True),
                             lambda: setattr(t, "requires_grad", True)):
                    try:
                        call()
                    except RuntimeError as e:
                        out.append(str(e))
            with torch.inference_mode():
                ints.requires_grad_(False)
                out.append(ints.requires_grad)
            return out
        same(body)

    def test_requires_grad_of_a_tensor_with_history(self):
        # the setter refuses any flag on a tensor with history; requires_grad_(True) refuses
        # an integer one (which joined the graph through x[k] = w) for its dtype
        def body(torch):
            w = torch.tensor(2.0, requires_grad=True)
            ints = torch.tensor([[-3, 2, 3]])
            ints[-1] = w
            floats = w * 2
            out = []
            for t in (ints, floats):
                for flag in (True, False):
                    for call in (lambda: t.requires_grad_(flag),
                                 lambda: setattr(t, "requires_grad", flag)):
                        try:
                            call()
                            out.append(t.requires_grad)
                        except RuntimeError as e:
                            out.append(str(e))
            return out
        same(body)

    def test_inference_tensors_oracle(self):
        def body(torch):
            def catch(f):
                try:
                    return f()
                except RuntimeError as e:
                    return str(e)
            x = torch.tensor([1.], requires_grad=True)
            out = []
            with torch.no_grad(), torch.inference_mode(False):
                out.append(torch.is_grad_enabled())
            with torch.inference_mode():
                with torch.enable_grad():
                    w = x * 2
                    out += [torch.is_grad_enabled(), w.requires_grad, w.is_inference()]
                    with torch.no_grad():
                        out.append(torch.is_grad_enabled())
                    with torch.inference_mode(False):
                        out.append((torch.is_grad_enabled(), (x * 2).requires_grad))
                with torch.set_grad_enabled(True):
                    out.append((torch.is_grad_enabled(), (x * 2).requires_grad))
                y = x * 2
                y.add_(1)  # allowed inside inference mode
                out += [torch.zeros_like(x).is_inference(), torch.tensor([1.]).is_inference(),
                        y.view(1).is_inference(), y.detach().is_inference(),
                        catch(lambda: y._version)]
            w = y + x  # an unsaved inference tensor is fine
            w.sum().backward()
            # NOTE: y's values are taken before the failing in-place calls: torch writes them
            # and raises afterwards, ember raises before writing.
            out += [y.tolist(), w, x.grad, y.clone().is_inference(), catch(lambda: x * y),
                    catch(lambda: y.view(1).mul_(2)), catch(lambda: x.clone().mul_(y)),
                    catch(lambda: y.requires_grad_())]
            with torch.no_grad():
                out.append(catch(lambda: y.add_(1)))
            return out
        same(body)

class TestThreads:
    def test_new_threads_start_with_grad_enabled(self):
        seen = {}

        def work():
            seen["t"] = (ember.is_grad_enabled(), ember.is_inference_mode_enabled())
        with ember.no_grad():
            t = threading.Thread(target=work)
            t.start()
            t.join()
            assert not ember.is_grad_enabled()
        assert seen["t"] == (True, False)
        with ember.inference_mode():
            t = threading.Thread(target=work)
            t.start()
            t.join()
        assert seen["t"] == (True, False)

    def test_modes_do_not_leak_between_threads(self):
        n = 8
        barrier = threading.Barrier(n)
        results, errors = {}, []

        def work(k):
            try:
                x = leaf()
                mode = [ember.no_grad, ember.enable_grad, ember.inference_mode,
                        lambda: ember.set_grad_enabled(False)][k % 4]
                with mode():
                    barrier.wait()
                    y = x * 2
                    state = (ember.is_grad_enabled(), ember.is_inference_mode_enabled())
                    barrier.wait()
                results[k] = (state, y.requires_grad, ember.is_grad_enabled())
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        expected = [((False, False), False), ((True, False), True), ((False, True), False),
                    ((False, False), False)]
        for k in range(n):
            assert results[k] == expected[k % 4] + (True,)
