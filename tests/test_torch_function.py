"""Tensor subclasses and ``__torch_function__`` as in torch: results keep the most derived
subclass among the arguments (functions, methods, operators, indexing, nn.functional), a
Parameter's stay plain, ``.grad`` stays plain, and a subclass's own ``__torch_function__``
sees torch's functions. Each body runs on torch and on ember (see oracle.py)."""
import copy
import inspect
import pickle

import ember

from oracle import same


def _subclass(torch):
    class M(torch.Tensor):
        pass
    return M


def _names(*values):
    """The type names of ``values``, into tuples and lists."""
    return [(_names(*v) if isinstance(v, (tuple, list)) else type(v).__name__) for v in values]


def test_results_keep_the_subclass():
    def body(torch):
        M = _subclass(torch)
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x.as_subclass(M)
        plain = torch.ones(3)
        return _names(
            y, y + 1, 1 + y, plain + y, y * plain, y @ plain, -y, y ** 2, 2 ** y, y == 1,
            y.sum(), y.exp(), torch.add(y, 1), torch.add(plain, y), torch.exp(y),
            torch.cat([plain, y]), torch.stack([y, plain]), torch.where(y > 0, y, plain),
            y[0], y[1:], y[[0, 2]], y.view(3, 1).T, y.data, y.detach(), y.clone(), y.float(),
            y.view(3, 1),
            y.split(2), y.max(0), y.max(0).values, y.sort(), y.unbind(),
            torch.nn.functional.relu(y), torch.nn.functional.linear(y, torch.ones(2, 3)),
            torch.nn.functional.softmax(y, 0), y.shape, y.size(), y.tolist(), y.dim())
    same(body)


def test_in_place_results():
    def body(torch):
        M = _subclass(torch)
        y = torch.ones(2).as_subclass(M)
        t = torch.ones(2)
        u = t.add_(y)
        v = torch.ones(2)
        v -= y
        w = y.mul_(2)
        y += 1
        return _names(u, v, w, y), u is t, w is y, t, y, u._version == t._version
    same(body)


def test_graph_through_a_subclass():
    def body(torch):
        M = _subclass(torch)
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.as_subclass(M)
        z = (y * y).sum()
        z.backward()
        w = torch.ones(3).as_subclass(M).requires_grad_()
        (w * 2).sum().backward()
        return (_names(y, z, x.grad, w, w.grad), x.grad, w.grad, y.grad_fn.name(),
                z.grad_fn.name(), [n.name() for n, _ in z.grad_fn.next_functions], y.is_leaf,
                w.is_leaf, w.grad_fn, repr(y), repr(w), repr(y[0]))
    same(body)


def test_parameters_and_buffers_give_plain_tensors():
    def body(torch):
        p = torch.nn.Parameter(torch.ones(2))
        q = torch.nn.Parameter(torch.ones(2)).as_subclass(torch.nn.Parameter)
        b = torch.nn.Buffer(torch.ones(2))
        return _names(p + 1, p.sum(), p[0], torch.exp(p), p.detach(), q * 2, b + 1,
                      torch.nn.functional.relu(p))
    same(body)


def test_the_most_derived_subclass_wins():
    def body(torch):
        class A(torch.Tensor):
            pass

        class B(A):
            pass
        a = torch.ones(2).as_subclass(A)
        b = torch.ones(2).as_subclass(B)
        return _names(a + b, b + a, torch.add(a, b), torch.cat([a, b]), b.sum(), a * 2)
    same(body)


def test_disable_torch_function_subclass():
    def body(torch):
        M = _subclass(torch)
        y = torch.ones(2).as_subclass(M)
        with torch._C.DisableTorchFunctionSubclass():
            inside = _names(y + 1, y.sum(), torch.add(y, 1), y[0])
            on = torch._C._is_torch_function_enabled()
        with torch._C.DisableTorchFunction():
            off = _names(y + 1, y.exp())
        return inside, off, on, torch._C._is_torch_function_enabled(), _names(y + 1)
    same(body)


def test_a_custom_torch_function_sees_the_methods():
    def body(torch):
        seen = []

        class L(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((func.__name__, [type(a).__name__ for a in args], kwargs))
                return super().__torch_function__(func, types, args, kwargs)
        t = torch.ones(2).as_subclass(L)
        results = _names(t + 1, 1 + t, torch.ones(2) + t, t * t, t.sum(), t.exp(), t.data,
                         t.requires_grad_(), t.grad, t.shape, t == 1)
        repr(t)
        return results, seen
    same(body)


def test_a_torch_function_that_changes_results():
    def body(torch):
        class Doubled(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                out = super().__torch_function__(func, types, args, kwargs)
                if func is torch.Tensor.add:
                    return out * 2
                return out
        d = torch.tensor([1.0, 2.0]).as_subclass(Doubled)
        return d + 1, d.add(1), _names(d + 1), d.sub(1)
    same(body)


def test_not_implemented_everywhere_raises_torchs_type_error():
    def body(torch):
        class Refuses(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented
        r = torch.ones(2).as_subclass(Refuses)
        try:
            r.exp()
        except TypeError as e:
            return str(e)
    same(body)


def test_disabled_impl_and_make_subclass():
    def body(torch):
        class Plain(torch.Tensor):
            __torch_function__ = torch._C._disabled_torch_function_impl
        M = _subclass(torch)
        p = torch.ones(2).as_subclass(Plain)
        base = torch.ones(2, requires_grad=True) * 1
        m = torch.Tensor._make_subclass(M, base)
        g = torch.Tensor._make_subclass(M, torch.ones(2), True)
        base.data.add_(1)
        return (_names(p, p + 1, p.sum(), m, m + 1, g), m.grad_fn, m.requires_grad,
                g.requires_grad, g.is_leaf, m, m._version == base._version)
    same(body)


def test_subclasses_made_in_new_as_torchs_notes_make_them():
    def body(torch):
        class Extra(torch.Tensor):
            @staticmethod
            def __new__(cls, x, extra, *args, **kwargs):
                return super().__new__(cls, x, *args, **kwargs)

            def __init__(self, x, extra):
                self.extra = extra

        class Wrapping(torch.Tensor):
            @staticmethod
            def __new__(cls, data):
                return torch.Tensor._make_subclass(cls, data, data.requires_grad)
        e = Extra(torch.ones(2), "meta")
        w = Wrapping(torch.ones(2, requires_grad=True))
        (w * 2).sum().backward()
        M = _subclass(torch)
        return (_names(e, e + 1, w, w * 2, w.grad, M([1.0, 2.0]), M(2, 3), M(torch.ones(2)),
                       torch.Tensor.__new__(M, torch.ones(2))),
                e.extra, getattr(e + 1, "extra", None), w.requires_grad, w.is_leaf, w.grad,
                M([1.0, 2.0]))
    same(body)


def test_pickle_keeps_the_subclass_and_its_attributes():
    y = ember.ones(2).as_subclass(Tagged)  # (a module-level class pickles by reference)
    y.tag = "kept"
    back = pickle.loads(pickle.dumps(y))
    assert type(back) is Tagged and back.tag == "kept" and back.tolist() == [1.0, 1.0]


class Tagged(ember.Tensor):
    pass


def test_deepcopy_of_a_subclass_refuses_as_torchs():
    def body(torch):
        M = _subclass(torch)
        try:
            copy.deepcopy(torch.ones(2).as_subclass(M))
        except RuntimeError as e:
            return str(e)
    same(body)


def test_subclass_dispatch_costs_plain_tensors_nothing_until_needed():
    """The op registry's path of plain tensors is untouched until a subclass with
    __torch_function__ behaviour exists (the routing flag stays off for ember's own)."""
    from ember import overrides
    from ember._ops.registry import OpDef
    assert overrides._ops_routed[0]  # (this module defines subclasses)
    assert isinstance(OpDef.__dict__["caller"], property)
    for cls in (ember.nn.Parameter, ember.nn.UninitializedBuffer,
                ember.nn.UninitializedParameter):
        assert not overrides._overrides(cls)


def test_an_ops_path_read_then_put_back_while_routed():
    """``saved = op.caller; op.caller = other; op.caller = saved`` (monkeypatch's undo, a
    wrapper's restore) while dispatch is routed hands the routed path back: the op must take
    its own generated path again, not the routed one calling itself."""
    from ember import overrides
    from ember._ops import pointwise
    assert overrides._ops_routed[0]  # (this module defines subclasses)
    x = ember.tensor([1.0, 2.0])
    for attr in ("caller", "inplace_caller"):
        saved = getattr(pointwise.add, attr)
        setattr(pointwise.add, attr, None)
        setattr(pointwise.add, attr, saved)
    y = x + 1
    y += x
    assert y.tolist() == [3.0, 5.0] and type(y) is ember.Tensor
    M = type("M", (ember.Tensor,), {})
    assert type(x.as_subclass(M) + 1) is M


def _functional_calls(torch, x, target, zeros):
    """nn.functional functions torch writes in Python, called in several ways."""
    F = torch.nn.functional
    return [F.relu(x), F.relu(x, inplace=False), F.softmax(x, 1), F.log_softmax(x, dim=0),
            F.dropout(x, 0.0, True), F.layer_norm(x, (3,)), F.cross_entropy(x, target),
            F.mse_loss(x, zeros, reduction="sum"), F.leaky_relu(x, 0.2), F.pad(x, (1, 1)),
            F.nll_loss(x, target)]


def test_a_subclass_sees_nn_functional_functions():
    def body(torch):
        F = torch.nn.functional
        seen = []

        class L(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                public = getattr(F, getattr(func, "__name__", ""), None) is func
                seen.append((func.__name__, public, [type(a).__name__ for a in args], kwargs))
                return super().__torch_function__(func, types, args, kwargs)
        x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]]).as_subclass(L)
        results = _functional_calls(torch, x, torch.tensor([0, 2]), torch.zeros(2, 3))
        return results, _names(*results), seen[:]
    same(body)


def test_a_mode_sees_nn_functional_functions():
    def body(torch):
        F = torch.nn.functional
        seen = []

        class Log(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append((func.__name__, getattr(F, func.__name__, None) is func,
                             [type(a).__name__ for a in args], kwargs))
                if func is F.softmax:  # (a handler may replace the function's result)
                    return "softmax replaced"
                return func(*args, **(kwargs or {}))
        x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], requires_grad=True)
        target, zeros = torch.tensor([0, 2]), torch.zeros(2, 3)  # (a mode sees no factory)
        with Log():
            results = _functional_calls(torch, x, target, zeros)
        results[-1].backward()
        return results, seen, x.grad
    same(body)


def test_an_object_with_torch_function_gets_nn_functional_calls():
    def body(torch):
        F = torch.nn.functional
        handled = {}

        class Scalar:  # (torch's ScalarTensor example's pattern)
            def __init__(self, value):
                self.value = value

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func not in handled:
                    return NotImplemented
                return handled[func](*args, **(kwargs or {}))
        handled[F.relu] = lambda input, inplace=False: Scalar(max(input.value, 0.0))

        class Routed(torch.Tensor):  # (ember hands such objects the functions once a
            @classmethod            # subclass or a mode needed dispatch: see overrides.md)
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return super().__torch_function__(func, types, args, kwargs)
        errors = []
        for call in (lambda: F.softmax(Scalar(1.0), 0),
                     lambda: F.mse_loss(Scalar(1.0), torch.ones(1)),
                     lambda: F.layer_norm(torch.ones(2), (2,), weight=Scalar(1.0))):
            try:
                call()
            except TypeError as e:
                errors.append(str(e).replace(".<locals>", "").split("'")[:2]
                              + [str(e).split(": ", 1)[1].count("class")])
        return F.relu(Scalar(-2.0)).value, F.relu(Scalar(3.0)).value, errors
    same(body)


def test_nn_functional_costs_plain_tensors_nothing_until_needed():
    """nn.functional's functions run their own code until dispatch is routed; then the same
    function objects dispatch (a default argument holding one still finds it)."""
    from ember import overrides
    from ember._ops import activation
    F = ember.nn.functional
    assert overrides._ops_routed[0]  # (this module defines subclasses)
    assert F.softmax is activation.softmax
    assert F.softmax.__code__ is overrides._calls_dispatching.__code__
    assert str(inspect.signature(F.softmax)) == "(input, dim=None, _stacklevel=3, dtype=None)"
    assert set(overrides._FUNCTIONAL) <= set(F.__all__)
    layer = ember.nn.TransformerEncoderLayer(8, 2)  # (its default activation is F.relu)
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1


def _public_calls(torch, x, y, w):
    """Calls of torch's C functions (of torch, nn.functional, linalg, special, fft) with a
    subclass among their arguments, given by position and by keyword."""
    F = torch.nn.functional
    return [torch.add(y, 1, alpha=2), torch.add(y, 1), torch.add(x, other=y),
            torch.cat([x, y]), torch.cat((x, y), dim=1), torch.stack([y, y]),
            F.linear(y, w), F.linear(y, w, bias=torch.ones(4)), torch.sum(y, dim=0),
            torch.sum(y, 0, keepdim=True), torch.exp(y), torch.mm(y, w.t()),
            torch.matmul(y, w.t()), torch.clamp(y, min=0), torch.max(y, dim=1),
            torch.mean(y), torch.where(x > 0, y, 0.0), F.gelu(y, approximate="tanh"),
            torch.linalg.vector_norm(y, ord=2), torch.special.expit(y), torch.fft.fft(y),
            torch.add(y, 1, out=torch.empty(2, 3)), torch.zeros_like(y)]


def _public_names(torch):
    F = torch.nn.functional
    return {torch.add: "add", torch.cat: "cat", torch.stack: "stack", F.linear: "linear",
            torch.sum: "sum", torch.exp: "exp", torch.mm: "mm", torch.matmul: "matmul",
            torch.clamp: "clamp", torch.max: "max", torch.mean: "mean", torch.where: "where",
            F.gelu: "gelu", torch.linalg.vector_norm: "linalg.vector_norm",
            torch.special.expit: "special.expit", torch.fft.fft: "fft.fft",
            torch.zeros_like: "zeros_like"}


def test_handlers_see_the_public_function_with_the_calls_own_arguments():
    """A handler keyed by torch's public functions (a HANDLED_FUNCTIONS table) finds them:
    ``func`` is the function called, with its arguments as given (``add(y, 1)`` and
    ``{'alpha': 2}``, ``cat([x, y])``; ``F.linear``, not the ops it runs)."""
    def body(torch):
        names, seen = _public_names(torch), []

        class L(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((names.get(func, "other"), _names(*args),
                             kwargs if kwargs is None else {k: _names(v) for k, v in
                                                            kwargs.items()}))
                return super().__torch_function__(func, types, args, kwargs)
        x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]])
        results = _public_calls(torch, x, x.as_subclass(L), torch.ones(4, 3))
        return results, _names(*results), seen
    same(body)


def test_a_table_of_public_functions_runs_the_call_unwrapped():
    """A wrapper subclass's handler (torch's notes' pattern): its table keyed by the public
    functions, the call run on plain tensors with ``func(*args, **kwargs)`` under
    DisableTorchFunctionSubclass, gives torch's values; an unknown function falls back."""
    def body(torch):
        F = torch.nn.functional
        handled = {torch.add: "add", torch.cat: "cat", F.linear: "linear", torch.sum: "sum"}
        hits = []

        class W(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func not in handled:
                    return super().__torch_function__(func, types, args, kwargs)
                hits.append(handled[func])
                plain = [a.as_subclass(torch.Tensor) if isinstance(a, W) else a
                         for a in args]
                with torch._C.DisableTorchFunctionSubclass():
                    return func(*plain, **(kwargs or {})) * 10
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x.as_subclass(W)
        out = [torch.add(y, 1, alpha=2), torch.cat([y, x]), F.linear(y, torch.eye(2)),
               torch.sum(y, dim=1), torch.exp(y)]
        out[0].sum().backward()
        return out, _names(*out), hits, x.grad
    same(body)


def test_public_functions_cost_nothing_until_dispatch_is_routed():
    """In a process with no subclass and no mode, ember's public functions run their own
    code; once routed, the same objects (a table keyed before still finds them) dispatch."""
    import subprocess
    import sys
    code = (
        "import ember\n"
        "from ember import overrides\n"
        "F = ember.nn.functional\n"
        "fns = (ember.add, ember.cat, F.linear, F.relu, ember.linalg.vector_norm)\n"
        "codes = [f.__code__ for f in fns]\n"
        "assert not overrides._ops_routed[0]\n"
        "assert all('_dispatching' not in (f.__kwdefaults__ or ()) for f in fns)\n"
        "M = type('M', (ember.Tensor,), {})\n"
        "assert overrides._ops_routed[0]\n"
        "assert fns == (ember.add, ember.cat, F.linear, F.relu, ember.linalg.vector_norm)\n"
        "assert all('_dispatching' in f.__kwdefaults__ for f in fns)\n"
        "assert [f.__wrapped__.__code__ for f in fns] == codes\n"
        "assert '_dispatching' not in (ember.manual_seed.__kwdefaults__ or ())\n"
        "print(ember.add(ember.ones(2), 1, alpha=2).tolist())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[3.0,", "3.0]"]


def _small_program(torch):
    """Factories, indexing, methods, operators and an MLP's forward and backward on plain
    tensors."""
    F = torch.nn.functional
    torch.manual_seed(0)
    x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]])
    made = [torch.ones(2, 3), torch.zeros(2), torch.arange(3), torch.eye(2),
            torch.full((2,), 1.0), torch.zeros_like(x), torch.linspace(0, 1, 3)]
    indexed = [x[0], x[:, 1], x[[0, 1]], x[x > 0]]
    x[0, 0] = 2.0
    methods = [x.detach(), x.clone(), x.sum(), x.t(), x.view(6), x.reshape(3, 2), x.size(),
               x.shape, x.dim(), x.numel(), x.float(), x.to(torch.float64), x.contiguous(),
               x.softmax(1), x.mean(0), x.exp(), x.relu()]
    operators = [x + 1, 1 + x, x - 1, 2 * x, x / 2, x ** 2, x @ x.t(), -x, x > 0, x == x,
                 x != 1, x <= 0, abs(x), torch.add(x, 1), torch.cat([x, x])]
    w1 = torch.ones(4, 3, requires_grad=True)
    w2 = torch.ones(2, 4, requires_grad=True)
    loss = F.cross_entropy(F.linear(torch.relu(F.linear(x, w1)), w2), torch.tensor([0, 1]))
    loss.backward()
    return made, indexed, methods, operators, loss.item(), w1.grad


def test_a_mode_sees_a_programs_functions_and_methods_as_torchs():
    """On plain tensors a mode sees what torch's sees: factories (``ones``), indexing
    (``Tensor.__getitem__``), methods (``Tensor.detach``), operators (``x + 1`` as
    ``Tensor.add``), properties (``Tensor.shape.__get__``), ``F.linear``, not ember's ops."""
    def body(torch):
        seen = []

        class Log(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(torch.overrides.resolve_name(func) or func.__name__)
                return func(*args, **(kwargs or {}))
        with Log():
            results = _small_program(torch)
        return results, seen
    same(body)


def test_a_mode_handler_finds_tensors_methods_by_identity():
    """``func is Tensor.add`` (a table keyed by Tensor's methods) holds in a mode's handler;
    a handler may replace a method's or an operator's result."""
    def body(torch):
        class Doubling(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                return out * 2 if func in (torch.Tensor.add, torch.Tensor.__getitem__) else out
        x = torch.tensor([1.0, 2.0])
        with Doubling():
            inside = [x + 1, x.add(1), x[0], x.sub(1), torch.Tensor.add(x, 1)]
        return inside, x + 1, x[0]
    same(body)


def test_subclass_operators_seen_as_torchs():
    """A subclass's operators are seen as the functions torch's are (``y > 0`` as
    ``Tensor.gt``, ``-y`` as ``Tensor.neg``, ``i & 1`` as ``Tensor.__and__``)."""
    def body(torch):
        seen = []

        class S(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append(torch.overrides.resolve_name(func) or func.__name__)
                return super().__torch_function__(func, types, args, kwargs)
        x = torch.tensor([1.0, 2.0]).as_subclass(S)
        i = torch.tensor([1, 2]).as_subclass(S)
        out = [x + 1, 1 + x, x - 1, 1 - x, x * 2, x / 2, 2 / x, x // 2, x % 2, x ** 2,
               2 ** x, x @ x, i & 1, 1 & i, i | 1, i ^ 1, i << 1, i >> 1, x == 1, x != 1,
               x < 1, x <= 1, x > 1, x >= 1, -x, +x, abs(x), ~i]
        x += 1
        x //= 1
        x **= 1
        i &= 1
        i |= 1
        return out, seen
    same(body)


def test_tensor_methods_cost_nothing_outside_a_mode():
    """Tensor's own methods and properties dispatch only while a mode is open: the same
    objects run their own code before the first mode and after the last one closes."""
    from ember import overrides
    add, getitem, shape = (ember.Tensor.add, ember.Tensor.__getitem__,
                           vars(ember.Tensor)["shape"].fget)
    codes = [f.__code__ for f in (add, getitem, shape)]
    with _LoggingMode() as mode:
        with _LoggingMode():
            x = ember.ones(2)
        assert [f.__code__ for f in (add, getitem, shape)] != codes
        x.add(1), x[0], x.shape
    assert mode.seen[-3:] == [add, getitem, vars(ember.Tensor)["shape"].__get__]
    assert (ember.Tensor.add, ember.Tensor.__getitem__) == (add, getitem)
    assert [f.__code__ for f in (add, getitem, shape)] == codes
    assert overrides._mode_count[0] == 0


class _LoggingMode(ember.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(func)
        return func(*args, **(kwargs or {}))


def test_torch_functional_functions_hand_their_arguments_as_torchs():
    """torch.functional's Python functions hand some arguments by keyword
    (``split(y, 1)`` as ``(y, 1)`` and ``{'dim': 0}``), the others as given."""
    def body(torch):
        publics = {torch.split: "split", torch.norm: "norm", torch.unique: "unique",
                   torch.unique_consecutive: "unique_consecutive", torch.lu: "lu",
                   torch.unravel_index: "unravel_index", torch.stft: "stft",
                   torch.tensordot: "tensordot", torch.cdist: "cdist",
                   torch.atleast_2d: "atleast_2d", torch.block_diag: "block_diag",
                   torch.meshgrid: "meshgrid", torch.einsum: "einsum"}
        seen = []

        class L(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((publics.get(func, "other"), _names(*args), sorted(kwargs or {})))
                return super().__torch_function__(func, types, args, kwargs)
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).as_subclass(L)
        results = [torch.split(x, 1), torch.norm(x), torch.norm(x, dim=1), torch.unique(x),
                   torch.unique_consecutive(x), torch.lu(x),
                   torch.unravel_index(torch.tensor([3]).as_subclass(L), (2, 2)),
                   torch.stft(torch.ones(16).as_subclass(L), 8, return_complex=True),
                   torch.tensordot(x, x), torch.cdist(x, x), torch.atleast_2d(x),
                   torch.block_diag(x, x), torch.meshgrid(x[0], x[1], indexing="ij"),
                   torch.einsum("ij->i", x)]
        return _names(*results), [s for s in seen if s[0] != "other"]
    same(body, check_warnings=False)
