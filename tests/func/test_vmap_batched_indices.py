"""Index tensors batched under vmap against torch 2.13: ``x[i]``, ``x[:, i]`` and mixed keys
(self batched or not, in_dims, nested vmaps), ``x[i] = v``, index_select / gather /
take_along_dim with per-example indices, gradients through them, and torch's refusals where
the result's shape would depend on the data (boolean masks, nonzero, where, unique): values,
shapes, grad_fn names, error texts."""
import pytest
from oracle import same


def _tensors(t):
    x = t.arange(12., dtype=t.float64).reshape(3, 4)
    xb = t.arange(24., dtype=t.float64).reshape(2, 3, 4)
    i = t.tensor([[0, 2], [1, 1]])
    return x, xb, i


def _set(a, key, v):
    a = a.clone()
    a[key] = v
    return a


_GET = {
    "x[i]": lambda t, x, xb, i: t.func.vmap(lambda j: x[j])(i),
    "xb[i]": lambda t, x, xb, i: t.func.vmap(lambda a, j: a[j])(xb, i),
    "x[:, i]": lambda t, x, xb, i: t.func.vmap(lambda j: x[:, j])(i),
    "xb[:, i]": lambda t, x, xb, i: t.func.vmap(lambda a, j: a[:, j])(xb, i),
    "x[..., i]": lambda t, x, xb, i: t.func.vmap(lambda j: x[..., j])(i),
    "x[None, i]": lambda t, x, xb, i: t.func.vmap(lambda j: x[None, j])(i),
    "x[:, None, i]": lambda t, x, xb, i: t.func.vmap(lambda j: x[:, None, j])(i),
    "x[i, 1:]": lambda t, x, xb, i: t.func.vmap(lambda j: x[j, 1:])(i),
    "x[i, i]": lambda t, x, xb, i: t.func.vmap(lambda j: x[j, j])(i),
    "x[i, fixed]": lambda t, x, xb, i: t.func.vmap(lambda j: x[j, t.tensor([1, 3])])(i),
    "x[fixed 2-d, i]": lambda t, x, xb, i: t.func.vmap(lambda j: x[t.tensor([[0], [1]]), j])(
        i),
    "xb[i, 0, i] out of range": lambda t, x, xb, i: t.func.vmap(lambda j: xb[j, 0, j])(i),
    "x[i] in_dims=1": lambda t, x, xb, i: t.func.vmap(lambda j: x[j], in_dims=1)(i),
    "xb[i] x in_dims=1": lambda t, x, xb, i: t.func.vmap(lambda a, j: a[j], in_dims=(1, 0))(
        xb.transpose(0, 1).contiguous(), i),
    "0-dim index": lambda t, x, xb, i: t.func.vmap(lambda a, j: a[:, j])(xb, t.tensor([2, 0])),
    "nested index": lambda t, x, xb, i: t.func.vmap(t.func.vmap(lambda j: x[j]))(
        t.stack([i, i.flip(0)])),
    "nested self": lambda t, x, xb, i: t.func.vmap(lambda a: t.func.vmap(lambda j: a[j])(i))(
        xb),
    "x[i] = v": lambda t, x, xb, i: t.func.vmap(lambda j: _set(x, j, 5.))(i),
    "xb[i] = v": lambda t, x, xb, i: t.func.vmap(lambda a, j: _set(a, j, 5.))(xb, i),
    "xb[i] = batched v": lambda t, x, xb, i: t.func.vmap(_set)(
        xb, i, t.tensor([7., 8.], dtype=t.float64)),
    "xb[:, i] = v": lambda t, x, xb, i: t.func.vmap(lambda a, j: _set(a, (slice(None), j), 5.))(
        xb, i),
    "xb[i, 1:] = v": lambda t, x, xb, i: t.func.vmap(lambda a, j: _set(a, (j, slice(1, None)),
                                                                        3.))(xb, i),
    "index_select": lambda t, x, xb, i: t.func.vmap(lambda j: t.index_select(x, 1, j))(i),
    "index_select batched": lambda t, x, xb, i: t.func.vmap(
        lambda a, j: t.index_select(a, 0, j))(xb, i),
    "gather": lambda t, x, xb, i: t.func.vmap(lambda j: t.gather(x, 0, j))(
        t.tensor([[[0, 1, 2, 0]], [[2, 2, 1, 0]]])),
    "take_along_dim": lambda t, x, xb, i: t.func.vmap(lambda a, j: t.take_along_dim(a, j, 0))(
        xb, t.tensor([[[0, 1, 2, 0]], [[2, 2, 1, 0]]])),
    "take_along_dim flat": lambda t, x, xb, i: t.func.vmap(lambda a, j: t.take_along_dim(a, j))(
        xb, t.tensor([[0, 5], [11, 3]])),
}

_MASK = [[True, False, True, True], [False, False, True, True]]
_DATA_DEPENDENT = {
    "x[mask]": lambda t, x, m: t.func.vmap(lambda mm: x[0][mm])(m),
    "xb[mask]": lambda t, x, m: t.func.vmap(lambda a, mm: a[mm])(x[:2], m),
    "x[mask] = v": lambda t, x, m: t.func.vmap(lambda mm: _set(x[0], mm, 0.))(m),
    "masked_select": lambda t, x, m: t.func.vmap(lambda mm: t.masked_select(x[0], mm))(m),
    "masked_select shared mask": lambda t, x, m: t.func.vmap(
        lambda a: t.masked_select(a, m[0]))(x[:2]),
    "nonzero": lambda t, x, m: t.func.vmap(lambda mm: mm.nonzero())(m),
    "nonzero as_tuple": lambda t, x, m: t.func.vmap(lambda mm: t.nonzero(mm, as_tuple=True)[0])(
        m),
    "where(mask)": lambda t, x, m: t.func.vmap(lambda mm: t.where(mm)[0])(m),
    "unique": lambda t, x, m: t.func.vmap(lambda a: a.unique())(x[:2]),
    "unique_consecutive": lambda t, x, m: t.func.vmap(lambda a: t.unique_consecutive(a))(x[:2]),
    "unique dim": lambda t, x, m: t.func.vmap(lambda a: t.unique(a[None], dim=0))(x[:2]),
}


@pytest.mark.parametrize("name", list(_GET))
def test_batched_index_tensors(name):
    same(lambda t: _GET[name](t, *_tensors(t)), check_warnings=False)


@pytest.mark.parametrize("name", list(_GET)[:12])
def test_gradient_through_batched_index_tensors(name):
    def body(t):
        x, xb, i = _tensors(t)
        x.requires_grad_()
        out = _GET[name](t, x, (xb + 0).requires_grad_(), i)
        return out, t.autograd.grad((out * out).sum(), x, allow_unused=True)
    same(body, check_warnings=False)


@pytest.mark.parametrize("name", list(_DATA_DEPENDENT))
def test_data_dependent_shapes_refused(name):
    same(lambda t: _DATA_DEPENDENT[name](t, t.arange(12., dtype=t.float64).reshape(3, 4),
                                         t.tensor(_MASK)), check_warnings=False)
