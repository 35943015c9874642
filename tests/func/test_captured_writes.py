"""In-place writes, under torch.func's transforms, to a captured tensor that the transformed
function reaches through the helpers it calls (a closure's function, a global function,
helpers calling helpers, a partial): torch's grad and jvp levels refuse them, vmap alone and
a tensor made inside do not."""
import functools

from oracle import error_of, same

_GLOBAL = None


def _bump_global():
    _GLOBAL.add_(1)


def _calls_bump_global():
    _bump_global()


def test_writes_through_helpers_are_refused_as_torch():
    def body(torch):
        global _GLOBAL
        F = torch.func
        c = torch.zeros(3)
        _GLOBAL = torch.zeros(3)
        x = torch.ones(3)
        xs = torch.ones(2, 3)

        def helper():
            c.add_(1)

        def outer_helper():
            helper()

        def helper_of(t):
            t.mul_(2)

        def own_tensor():
            return torch.zeros(3).add_(1)

        bump = functools.partial(helper_of, c)
        calls = [
            lambda: F.vmap(lambda v: (helper(), v)[1])(xs),
            lambda: F.grad(lambda v: (helper(), (v * 2).sum())[1])(x),
            lambda: F.vmap(F.grad(lambda v: (helper(), (v * 2).sum())[1]))(xs),
            lambda: F.vjp(lambda v: (outer_helper(), v * 2)[1], x)[0],
            lambda: F.jvp(lambda v: (helper(), v * 2)[1], (x,), (x,)),
            lambda: F.jacrev(lambda v: (_calls_bump_global(), v * 2)[1])(x),
            lambda: F.jacfwd(lambda v: (_bump_global(), v * 2)[1])(x),
            lambda: F.grad(lambda v: (bump(), v.sum())[1])(x),
            lambda: F.grad(lambda v: (helper_of(c[:2]), v.sum())[1])(x),
            # what torch accepts: a tensor made inside, an argument of the function
            lambda: F.grad(lambda v: (own_tensor() * v).sum())(x),
            lambda: F.grad(lambda v: (helper_of(v.clone()), v.sum())[1])(x),
            lambda: F.vmap(lambda v: (_calls_bump_global(), v)[1])(xs)]
        return [error_of(f) for f in calls], c, _GLOBAL
    errors = same(body).value[0]
    assert errors[0] is None and errors[1][0] == "RuntimeError" and errors[-1] is None
