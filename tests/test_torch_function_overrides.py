"""``torch.overrides`` as torch's: objects that are no tensors but define
``__torch_function__`` (torch's ScalarTensor example), the has_torch_function family,
TorchFunctionMode, and the listings of what can be overridden. Bodies run on torch and on
ember (see oracle.py); ``torch.overrides`` is read as an attribute so that the body's module
is used."""
import functools

import ember

from oracle import same


def _scalar_tensor(torch):
    """torch's documented ScalarTensor: a diagonal matrix kept as its size and value."""
    handled = {}

    class ScalarTensor:
        def __init__(self, n, value):
            self._n, self._value = n, value

        def __repr__(self):
            return f"ScalarTensor(N={self._n}, value={self._value})"

        def tensor(self):
            return self._value * torch.eye(self._n)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func not in handled or not all(issubclass(t, (torch.Tensor, ScalarTensor))
                                              for t in types):
                return NotImplemented
            return handled[func](*args, **(kwargs or {}))

    def implements(torch_function):
        def decorator(func):
            functools.update_wrapper(func, torch_function)
            handled[torch_function] = func
            return func
        return decorator

    @implements(torch.mean)
    def mean(input):
        return float(input._value) / input._n

    def ensure_tensor(data):
        return data.tensor() if isinstance(data, ScalarTensor) else torch.as_tensor(data)

    @implements(torch.add)
    def add(input, other):
        try:
            if input._n == other._n:
                return ScalarTensor(input._n, input._value + other._value)
            raise ValueError("Shape mismatch!")
        except AttributeError:
            return torch.add(ensure_tensor(input), ensure_tensor(other))
    return ScalarTensor


def _error(fn):
    try:
        fn()
    except TypeError as e:
        return str(e).replace(".<locals>", "").split("'")[:2] + [str(e).splitlines()[-1]]


def test_an_object_with_torch_function_takes_the_call():
    def body(torch):
        ScalarTensor = _scalar_tensor(torch)
        s = ScalarTensor(2, 2)
        t = torch.tensor([[1.0, 1.0], [1.0, 1.0]])
        return (torch.mean(ScalarTensor(5, 2)), repr(torch.add(s, s)), torch.add(s, t),
                torch.add(t, s), _error(lambda: torch.mul(s, 3)), _error(lambda: torch.exp(s)),
                _error(lambda: torch.cat([t, s])), _error(lambda: t + s))
    same(body)


def test_has_torch_function_and_is_tensor_like():
    def body(torch):
        ScalarTensor = _scalar_tensor(torch)
        o = torch.overrides

        class M(torch.Tensor):
            pass
        s, t = ScalarTensor(2, 1), torch.ones(1)
        m, p = t.as_subclass(M), torch.nn.Parameter(torch.ones(1))
        out = [o.has_torch_function((s,)), o.has_torch_function((t,)),
               o.has_torch_function((m,)), o.has_torch_function((p,)),
               o.has_torch_function_unary(t), o.has_torch_function_unary(m),
               o.has_torch_function_variadic(t, s), o.has_torch_function_variadic(t, p),
               o.is_tensor_like(s), o.is_tensor_like(t), o.is_tensor_like(m),
               o.is_tensor_like(1), o.is_tensor_like([t])]
        with torch._C.DisableTorchFunctionSubclass():
            out.append(o.has_torch_function((m,)))
        return out
    same(body)


def test_handle_torch_function_and_wrap_torch_function():
    def body(torch):
        o = torch.overrides
        seen = []

        class M(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((func.__name__, [t.__name__ for t in types], kwargs))
                return super().__torch_function__(func, types, args, kwargs)

        @o.wrap_torch_function(lambda x, scale=1: (x,))
        def scaled(x, scale=1):
            return x * scale

        def twice(x):
            if o.has_torch_function_unary(x):
                return o.handle_torch_function(twice, (x,), x)
            return x * 2

        class Refuses(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented
        def added(a, b):  # (a plain tensor among the relevant arguments: its handler too)
            if o.has_torch_function((a, b)):
                return o.handle_torch_function(added, (a, b), a, b)
            return a + b
        m = torch.ones(2).as_subclass(M)
        r = torch.ones(2).as_subclass(Refuses)
        results = [type(scaled(m, scale=3)).__name__, scaled(m, scale=3),
                   type(twice(m)).__name__, type(twice(torch.ones(2))).__name__,
                   type(added(torch.ones(2), m)).__name__,
                   type(added(torch.ones(2), r)).__name__,
                   [type(a).__name__ for a in o._get_overloaded_args([torch.ones(1), m])]]
        return results, seen, _error(lambda: twice(r))
    same(body)


def _logging_mode(torch):
    class Log(torch.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append((func.__name__, type(args).__name__,
                              [type(a).__name__ for a in args]))
            return func(*args, **(kwargs or {}))
    return Log


def test_a_mode_sees_every_op_call():
    def body(torch):
        Log = _logging_mode(torch)
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        with Log() as mode:
            outer = torch.overrides._get_current_function_mode() is mode
            y = x + 1
            z = torch.exp(y) * 2
            s = z.sum()
            r = torch.nn.functional.relu(y)
            w = r.clone()
            w.add_(1)
        s.backward()
        after = torch.overrides._get_current_function_mode()
        return mode.seen, outer, after, x.grad, w
    same(body)


def test_modes_nest_and_come_off():
    def body(torch):
        Log = _logging_mode(torch)

        class Doubling(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                return out * 2 if func.__name__ == "exp" else out
        x = torch.zeros(2)
        with Log() as outer:
            with Doubling():
                inner_value = torch.exp(x)
                depth = len(torch.overrides._get_current_function_mode_stack())
            after_inner = torch.exp(x)
        with torch._C.DisableTorchFunction():
            with Log() as off:
                torch.exp(x)
        with Log() as sub_off:
            with torch._C.DisableTorchFunctionSubclass():
                torch.exp(x)
        return inner_value, after_inner, depth, outer.seen, off.seen, sub_off.seen
    same(body)


def test_a_mode_before_a_subclass():
    def body(torch):
        Log = _logging_mode(torch)
        order = []

        class M(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                order.append("subclass " + func.__name__)
                return super().__torch_function__(func, types, args, kwargs)
        m = torch.ones(2).as_subclass(M)
        with Log() as mode:
            out = torch.exp(m)
        return type(out).__name__, mode.seen, order
    same(body)


def test_not_implemented_from_a_mode():
    def body(torch):
        class Refusing(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return NotImplemented

            def __repr__(self):
                return "Refusing()"
        x = torch.ones(1)
        with Refusing():
            refused = _error(lambda: torch.exp(x))
        with torch.overrides.BaseTorchFunctionMode():
            kept = torch.exp(x)
        return refused, kept
    same(body)


def test_what_can_be_overridden():
    def body(torch):
        o = torch.overrides
        testing = o.get_testing_overrides()
        ignored = o.get_ignored_functions()
        names = ("add", "mean", "exp", "cat", "matmul", "where")
        return ([f in testing for f in (getattr(torch, n) for n in names)],
                [testing[torch.add](1, 2), testing[torch.Tensor.add](1, 2)],
                torch.nn.functional.relu in testing, torch.Tensor.add in testing,
                [getattr(torch, n) in ignored for n in ("ones", "zeros", "tensor", "arange")],
                torch.add in ignored,
                [o.is_tensor_method_or_property(f) for f in (
                    torch.Tensor.add, torch.add, torch.Tensor.grad.__get__)],
                [o.resolve_name(f) for f in (torch.add, torch.Tensor.add,
                                             torch.nn.functional.relu)],
                torch.add in o.get_overridable_functions()[torch])
    same(body)


def test_the_mode_flag_is_on_while_a_mode_is():
    """The generated operators test ``intercepted`` alone: a mode must set it (and its own
    count), and leave it as it found it."""
    from ember import _state
    before = _state.intercepted[0]
    with _NoOp():
        with _NoOp():
            assert _state.function_mode[0] == 2 and _state.intercepted[0]
        assert _state.function_mode[0] == 1
    assert _state.function_mode[0] is None and _state.intercepted[0] == before


class _NoOp(ember.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_broadcast_all_takes_tensor_like_objects():
    def body(torch):
        ScalarTensor = _scalar_tensor(torch)
        broadcast_all = torch.distributions.utils.broadcast_all
        seen = []

        class Logged(ScalarTensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((func.__name__, [type(a).__name__ for a in args], kwargs))
                return "handled"

        class M(torch.Tensor):
            pass
        m = torch.ones(2, 1).as_subclass(M)
        return (_error(lambda: broadcast_all(ScalarTensor(2, 1), 1.0)),
                broadcast_all(Logged(2, 1), 1.0), broadcast_all(Logged(2, 1), torch.ones(3)),
                [type(t).__name__ for t in broadcast_all(m, 1.0, torch.zeros(3))],
                broadcast_all(m, 1.0, torch.zeros(3)), seen,
                _error(lambda: torch.broadcast_tensors(ScalarTensor(2, 1), torch.ones(1))))
    same(body)


def test_broadcast_all_refuses_other_objects():
    def body(torch):
        broadcast_all = torch.distributions.utils.broadcast_all
        try:
            broadcast_all(torch.ones(1), [1.0])
        except ValueError as e:
            return str(e), broadcast_all(2, 3.5), broadcast_all(torch.ones(2, dtype=torch.float64), 1)
    same(body)
