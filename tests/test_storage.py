"""Storages (untyped_storage(), storage(), UntypedStorage), Tensor.set_ and
Tensor.as_subclass against torch."""
import warnings

import pytest

import ember
from oracle import same


def _quiet(fn):
    """``fn`` with typed storage's once-per-process deprecation warning silenced (which test
    sees it first depends on the order tests run in)."""
    def body(torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(torch)
    return body


def test_untyped_storage_queries():
    def body(torch):
        x = torch.arange(6.)
        s, v = x.untyped_storage(), x[2:].untyped_storage()
        return (s.nbytes(), s.size(), len(s), s.element_size(), str(s.device), s.is_cuda,
                s.data_ptr() == x.data_ptr(), v.data_ptr() == s.data_ptr(), v.nbytes(),
                x[2:].storage_offset(), s[7], s.tolist()[4:8], s is v,
                torch.is_storage(s), torch.is_storage(x),
                torch.empty(0).untyped_storage().data_ptr(),
                x.clone().untyped_storage().data_ptr() == s.data_ptr())
    same(body)


def test_untyped_storage_repr_and_constructor():
    def body(torch):
        return (repr(torch.arange(2, dtype=torch.int16).untyped_storage()),
                torch.UntypedStorage(5).nbytes(), torch.UntypedStorage().nbytes(),
                torch.UntypedStorage([1, 2, 300 % 256]).tolist(),
                isinstance(torch.ones(1).untyped_storage(), torch.UntypedStorage))
    same(body)


def test_typed_storage():
    def body(torch):
        x = torch.arange(4.)
        s = x[1:].storage()
        return (s.size(), len(s), s.nbytes(), s.element_size(), s.dtype, s[1], s.tolist(),
                s.data_ptr() == x.data_ptr(), type(s.untyped()).__name__, repr(s),
                isinstance(s, torch.TypedStorage),
                torch.ones(2, dtype=torch.int64).storage().element_size())
    same(_quiet(body))


def test_typed_storage_warns_once():
    ember._storage._WARNED[0] = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ember.ones(1).storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.ones(1).storage()


def test_as_subclass():
    def body(torch):
        class Mine(torch.Tensor):
            pass
        x = torch.ones(3, requires_grad=True)
        y = x * 2
        z = y.as_subclass(Mine)
        w = x.as_subclass(Mine)
        (z.sum() + w.sum()).backward()
        plain = torch.arange(3.).as_subclass(Mine)
        return (type(z).__name__, z, z.is_leaf, z.data_ptr() == y.data_ptr(), w.is_leaf,
                w.grad_fn.name(), x.grad, repr(z), repr(plain), plain.requires_grad)
    same(body)


def test_as_subclass_refuses_non_tensor_class():
    same(lambda torch: torch.ones(2).as_subclass(int))


def test_set_tensor_and_storage():
    def body(torch):
        b = torch.arange(10.)
        a = torch.zeros(3)
        a.set_(b.untyped_storage(), 2, (2, 3), (1, 2))
        geometry = (a.clone(), a.storage_offset(), a.stride(), a.data_ptr() - b.data_ptr(),
                    a._version)
        a.fill_(7)  # written through to b: they share memory
        c = torch.zeros(1).set_(b)
        d = torch.zeros(1).set_(b, 1, (2, 2))
        e = torch.zeros(1).set_(b.untyped_storage(), storage_offset=3, size=(2,))
        f = torch.zeros(1).set_()
        g = torch.zeros(1).set_(torch.zeros(3, dtype=torch.float64).untyped_storage())
        h = torch.zeros(1).set_(b.untyped_storage())
        return (geometry, b, c, c.data_ptr() == b.data_ptr(), d, d.stride(), e, f, f.shape,
                g.shape, h, c._version)
    same(body)


@pytest.mark.parametrize("case", ["leaf", "leaf_no_grad", "non_leaf", "gains_history",
                                  "dtype", "storage_dtype", "typed_storage"])
def test_set_rules(case):
    def body(torch):
        x = torch.ones(3, requires_grad=True)
        if case == "leaf":
            return x.set_(torch.zeros(2))
        if case == "leaf_no_grad":
            with torch.no_grad():
                x.set_(torch.zeros(2))
            return x, x.is_leaf, x._version
        if case == "non_leaf":
            y = x * 1
            y.set_(torch.zeros(2))
            return y, y.grad_fn.name(), y._version, _backward_error(y)
        if case == "gains_history":
            a = torch.zeros(3)
            a.set_(x * 2)
            return a, a.requires_grad, a.grad_fn.name(), _backward_error(a)
        if case == "dtype":
            return torch.zeros(3).set_(torch.zeros(3, dtype=torch.float64))
        if case == "storage_dtype":
            return torch.zeros(1, dtype=torch.int32).set_(
                torch.arange(4, dtype=torch.int64).untyped_storage())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return torch.zeros(1).set_(torch.arange(5.).storage(), 1, (2,))
    same(body)


def _backward_error(t):
    try:
        t.sum().backward()
    except RuntimeError as error:
        return str(error)
    return None


def test_set_past_the_storage_end_is_refused():
    # torch grows a resizable storage in place here; NumPy memory cannot grow, so ember
    # refuses as torch does for a storage that may not be resized (never reading past it)
    with pytest.raises(RuntimeError, match="requiring a storage size of 60 are out of bounds "
                                           "for storage of size 40"):
        ember.zeros(3).set_(ember.arange(10.).untyped_storage(), 9, (2, 3), (1, 2))
