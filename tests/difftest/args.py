"""Argument makers for the op catalog: each picks or writes one argument of an op call.

A maker is called as ``maker(g, env)``: ``g`` is the generator (its random source and the
live variables, whose torch values it can inspect), ``env`` maps the op's arguments chosen so
far to ``(text, value)``. It returns ``(text, value)``, the source text put into the op's
template and the value it stands for (a torch tensor, a number, ...), or raises
:class:`Skip` when it has nothing to offer (the generator then tries another op).
"""
from __future__ import annotations


class Skip(Exception):
    """No argument fits: try something else."""


# -- predicates on torch tensors ----------------------------------------------------------------
def is_float(t):
    return t.is_floating_point()


def is_real_num(t):  # a float or an integer tensor (not bool, not complex)
    return not t.is_complex() and str(t.dtype) != "torch.bool"


def ndim_at_least(k, pred=is_float):
    return lambda t: t.dim() >= k and pred(t)


def ndim_is(*ks, pred=is_float):
    return lambda t: t.dim() in ks and pred(t)


def nonempty(pred=is_float):
    return lambda t: t.numel() > 0 and pred(t)


def any_tensor(t):
    return True


def storage_is_its_own(t):
    """Whether torch's storage under ``t`` holds no more than ``t``'s elements (or ``t`` is a
    view, whose base's storage ember keeps as torch does). A reduced loss (``mse_loss``,
    ``binary_cross_entropy``...) is a 0-dim tensor in a buffer of its input's size, past its
    own element scratch values or uninitialised memory: as_strided there reads what torch
    happened to leave."""
    if t._base is not None:
        return True
    try:
        return t.untyped_storage().nbytes() <= t.numel() * t.element_size()
    except Exception:  # noqa: BLE001 - a tensor without storage (sgn's ZeroTensor gradient)
        return False


# -- makers ---------------------------------------------------------------------------------------
def tensor(pred=is_float):
    """A live variable whose value satisfies ``pred``."""
    def make(g, env):
        name = g.pick(pred)
        return name, g.value(name)
    return make


def broadcastable(ref, pred=is_float, number=0.2):
    """A variable that broadcasts with ``ref``'s value (mostly), or a Python number."""
    def make(g, env):
        if g.rng.random() < number:
            return scalar_operand(g)
        shape = env[ref][1].shape
        name = g.pick(lambda t: pred(t) and g.broadcasts(t.shape, shape), strict=False)
        if name is None or g.rng.random() < 0.05:  # sometimes a mismatch: an error case
            name = g.pick(pred)
        return name, g.value(name)
    return make


def scalar_operand(g):
    """A Python number (a float, mostly; an int or a bool now and then), or a 0-dim tensor of
    some dtype: type promotion treats each kind differently (a number does not widen a float32
    tensor, an int does not make an int64 tensor float, a 0-dim tensor counts below a
    dimensioned one)."""
    r = g.rng.random()
    if r < 0.65:
        v = g.number()
        return repr(v), v
    if r < 0.82:
        v = g.rng.randint(-2, 3)
        return repr(v), v
    if r < 0.87:
        v = g.rng.random() < 0.5
        return repr(v), v
    dtype = g.rng.choice(["float64", "int64", "float32", "bool", "float16"])
    text = g.literal((), dtype)
    return text, eval(text, {"torch": g.torch})  # noqa: S307 - generated source


def same_shape(ref, pred=is_float):
    """A variable of ``ref``'s shape, else a fresh literal of that shape."""
    def make(g, env):
        t = env[ref][1]
        name = g.pick(lambda u: pred(u) and tuple(u.shape) == tuple(t.shape), strict=False)
        if name is not None:
            return name, g.value(name)
        return g.literal(tuple(t.shape), str(t.dtype).split(".")[-1]), None
    return make


def number(lo=-2.0, hi=2.0, integer=False):
    def make(g, env):
        v = g.rng.randint(int(lo), int(hi)) if integer else g.number(lo, hi)
        return repr(v), v
    return make


def choice(*options):
    """One of ``options``, written with repr."""
    def make(g, env):
        v = g.rng.choice(options)
        return repr(v), v
    return make


def text(*options):
    """One of ``options``, written as it is (source text such as ``torch.float64``)."""
    def make(g, env):
        v = g.rng.choice(options)
        return v, v
    return make


def dim(ref, *, wrong=0.03):
    """A dimension of ``ref``'s value (negative ones too); rarely one out of range."""
    def make(g, env):
        n = max(env[ref][1].dim(), 1)
        if g.rng.random() < wrong:
            v = g.rng.choice([n, -n - 1])
        else:
            v = g.rng.randrange(-n, n)
        return repr(v), v
    return make


def dims(ref):
    """A tuple of distinct dimensions of ``ref``'s value."""
    def make(g, env):
        n = env[ref][1].dim()
        if n == 0:
            raise Skip
        k = g.rng.randint(1, n)
        v = tuple(sorted(g.rng.sample(range(n), k)))
        return repr(v), v
    return make


def size_along(ref, dim_arg):
    """How many elements ``ref``'s value has along the chosen dimension."""
    def get(env):
        t, d = env[ref][1], env[dim_arg][1]
        if t.dim() == 0:
            return 1
        if not -t.dim() <= d < t.dim():
            raise Skip
        return t.shape[d]
    return get


def index_tensor(ref, dim_arg, shape=None):
    """An int64 tensor literal of indices valid along ``dim_arg`` of ``ref`` (1-D by default,
    or the shape ``shape(env)`` returns); rarely one out of range."""
    along = size_along(ref, dim_arg)

    def make(g, env):
        n = along(env)
        shp = (g.rng.randint(1, 4),) if shape is None else shape(g, env)
        if n == 0:
            raise Skip
        return g.int_literal(shp, 0, n - 1, wrong=0.03), None
    return make


def gather_index(ref, dim_arg):
    """An index for gather/scatter: ``ref``'s shape, with any length along ``dim_arg``."""
    def shape(g, env):
        t, d = env[ref][1], env[dim_arg][1]
        if t.dim() == 0:
            return ()
        shp = list(t.shape)
        shp[d] = g.rng.randint(1, 3)
        return tuple(g.rng.randint(1, s) if (k != d % t.dim() and s > 0) else
                     (shp[k] if k == d % t.dim() else 0) for k, s in enumerate(shp))
    return index_tensor(ref, dim_arg, shape)


def mask_of(ref):
    """A bool tensor literal of ``ref``'s shape (or a broadcastable one)."""
    def make(g, env):
        shape = tuple(env[ref][1].shape)
        if shape and g.rng.random() < 0.2:
            shape = shape[1:]
        return g.bool_literal(shape), None
    return make


def custom(fn):
    """``fn(g, env) -> (text, value)``: anything the helpers above do not cover."""
    return fn
