"""The ops programs call, one declaration each.

``op(name, templates, **args)`` declares an op: ``templates`` is one or more ways to write the
call (``"torch.exp({x})"``, ``"{x}.exp()"``), with ``{arg}`` for each argument; each keyword
argument is an argument maker from ``args.py`` (a variable that fits, a dim, an index, a
number...), resolved in order, so later makers can look at earlier arguments. The first
argument is the op's input (in-place ops write into it; a view op's input is its base).

To add an op, add one line to the list it belongs to: ``OPS`` (out of place; ``view=True``
for ops whose result is a view, which in-place steps also use to write through) or
``INPLACE``. For example::

    op("hypot", "torch.hypot({x}, {y})", x=tensor(), y=broadcastable("x", number=0)),
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .args import (Skip, any_tensor, broadcastable, choice, custom, dim, dims, gather_index,
                   index_tensor, is_float, is_real_num, mask_of, ndim_at_least, ndim_is,
                   nonempty, number, same_shape, storage_is_its_own, tensor, text)


@dataclass
class Op:
    name: str
    templates: tuple
    args: dict
    outputs: int = 1
    weight: float = 1.0
    view: bool = False
    target: object = is_float  # in-place ops: which tensors they may write into
    base: object = any_tensor  # view ops: which tensors in-place ops may write through them
    # ``undefined(template, env)``: torch's result of this call is not defined (it reads
    # memory it never wrote), so the call is not made
    undefined: object = None

    def render(self, g, first=None):
        """The call's source and the variables it reads. ``first``: ``(text, value)`` to use
        as the first argument (a view of a variable, for in-place writes through views)."""
        env = {}
        live = set(g.live())
        uses = []
        for k, (arg, make) in enumerate(self.args.items()):
            try:
                env[arg] = first if (k == 0 and first is not None) else make(g, env)
            except (IndexError, ValueError, ZeroDivisionError):  # it does not fit this input
                raise Skip from None
            t = env[arg][0]
            if isinstance(t, str) and t in live:
                uses.append(t)
        template = g.rng.choice(self.templates)
        if self.undefined is not None and self.undefined(template, env):
            raise Skip
        return template.format(**{k: v[0] for k, v in env.items()}), tuple(uses)


def op(name, templates, *, outputs=1, weight=1.0, view=False, target=is_float, base=any_tensor,
       undefined=None, **args):
    if isinstance(templates, str):
        templates = (templates,)
    return Op(name, templates, args, outputs, weight, view, target, base, undefined)


def _median_along_expanded(template, env):
    """torch's median along a dimension whose stride is 0 (an expanded tensor, such as sum's
    gradient) sorts a buffer it only partly fills: values and indices are whatever that
    memory held (tiny denormals, zeros), different from run to run."""
    if "median" not in template:
        return False
    x, d = env["x"][1], env["d"][1]
    if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
        return False
    return x.stride(d) == 0 and x.shape[d] > 1


# -- makers specific to shapes and indexing ------------------------------------------------------
def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _factor(g, n, parts):
    """``n`` as a product of ``parts`` positive numbers (ones where it runs out)."""
    out = []
    for _ in range(parts - 1):
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = g.rng.choice(divisors)
        out.append(d)
        n //= d
    return out + [n]


def view_shape(ref):
    """A shape with ``ref``'s number of elements (sometimes with a -1)."""
    def make(g, env):
        t = env[ref][1]
        n = t.numel()
        if n == 0:
            shape = list(t.shape)[::-1] or [0]
        else:
            shape = _factor(g, n, g.rng.randint(1, 3))
        if shape and n and g.rng.random() < 0.3:
            shape[g.rng.randrange(len(shape))] = -1
        if g.rng.random() < 0.03:
            shape = [n + 1]
        v = tuple(shape)
        return ", ".join(map(str, v)) if v else "()", v
    return make


def permutation(ref):
    def make(g, env):
        n = env[ref][1].dim()
        p = list(range(n))
        g.rng.shuffle(p)
        return ", ".join(map(str, p)) if p else "()", tuple(p)
    return make


def expand_shape(ref):
    """A shape ``ref`` expands to: its ones grown, maybe a new leading dimension, some -1."""
    def make(g, env):
        t = env[ref][1]
        shape = [g.rng.randint(2, 3) if s == 1 and g.rng.random() < 0.7 else
                 (-1 if g.rng.random() < 0.3 else s) for s in t.shape]
        if g.rng.random() < 0.4 or not shape:
            shape = [g.rng.randint(1, 3)] + shape
        return ", ".join(map(str, shape)), tuple(shape)
    return make


def slice_text(g, n):
    """A basic index for a dimension of size ``n``: an int, a slice, or a strided slice."""
    r = g.rng.random()
    if r < 0.3 and n > 0:
        return str(g.rng.randrange(-n, n))
    if r < 0.4:
        return ":"
    start = g.rng.choice(["", "1", "-2", "0"])
    stop = g.rng.choice(["", "2", "-1", "3"])
    step = g.rng.choice(["", "", ":2", ":3"])
    return f"{start}:{stop}{step}"


def index_key(g, t):
    """The source of an index key for ``t``: basic (slices, ints, None, ...) or advanced (an
    int64 tensor, a bool mask, a list)."""
    shape = tuple(t.shape)
    r = g.rng.random()
    if r < 0.55 or not shape:
        k = g.rng.randint(1, max(1, len(shape)))
        parts = [slice_text(g, n) for n in shape[:k]] or [":"]
        if g.rng.random() < 0.1:
            parts.insert(g.rng.randrange(len(parts) + 1), "None")
        if g.rng.random() < 0.1:
            parts = ["..."] + parts[1:]
        return ", ".join(parts)
    if r < 0.75:
        return g.int_literal((g.rng.randint(1, 3),), -shape[0], shape[0] - 1) if shape[0] else \
            "torch.tensor([], dtype=torch.int64)"
    if r < 0.9:
        return g.bool_literal(shape[:g.rng.randint(1, len(shape))])
    return repr([g.rng.randrange(shape[0]) for _ in range(2)]) if shape[0] else "[]"


def key(ref):
    def make(g, env):
        return index_key(g, env[ref][1]), None
    return make


def basic_key(ref):
    def make(g, env):
        t = env[ref][1]
        parts = [slice_text(g, n) for n in tuple(t.shape)[:g.rng.randint(1, max(1, t.dim()))]]
        return ", ".join(parts) or "...", None
    return make


def split_part(ref, dim_arg, count):
    """Which piece of an unbind/split/chunk of ``ref`` to keep."""
    def make(g, env):
        t, d = env[ref][1], env[dim_arg][1]
        if t.dim() == 0 or not -t.dim() <= d < t.dim():
            raise Skip
        n = count(t.shape[d], env)
        if n <= 0:
            raise Skip
        k = g.rng.randrange(n)
        return str(k), k
    return make


def matrix_for(ref, rows_from, cols=None, pred=is_float):
    """A matrix whose rows match dimension ``rows_from`` of ``ref`` (a variable when one fits,
    else a literal of ``ref``'s dtype, maybe requiring grad)."""
    def make(g, env):
        t = env[ref][1]
        if t.dim() == 0:
            raise Skip
        rows = t.shape[rows_from]
        ncols = cols if cols is not None else g.rng.randint(1, 3)
        want = (rows, ncols)
        name = g.pick(lambda u: pred(u) and tuple(u.shape) == want and u.dtype == t.dtype,
                      strict=False)
        if name is not None and g.rng.random() < 0.7:
            return name, g.value(name)
        return g.literal(want, str(t.dtype)[6:], g.rng.random() < 0.5), None
    return make


def operand(shape_of, pred=is_float):
    """A tensor of the shape ``shape_of(g, env)`` and the dtype of the op's first argument: a
    variable when one fits, else a literal (maybe requiring grad)."""
    def make(g, env):
        first = next(iter(env.values()))[1]
        want = tuple(shape_of(g, env))
        dtype = first.dtype
        name = g.pick(lambda u: pred(u) and tuple(u.shape) == want and u.dtype == dtype,
                      strict=False)
        if name is not None and g.rng.random() < 0.6:
            return name, g.value(name)
        return g.literal(want, str(dtype)[6:], g.rng.random() < 0.5), None
    return make


def shape_of(ref, fn=lambda s: s):
    return lambda g, env: fn(tuple(env[ref][1].shape))


def int_vector(ref, dim_index, high_from=None):
    """A 1-D int64 literal of length ``ref.shape[dim_index]`` with values in [0, high)."""
    def make(g, env):
        t = env[ref][1]
        if t.dim() == 0:
            raise Skip
        n = t.shape[dim_index]
        high = t.shape[high_from] if high_from is not None else 3
        return g.int_literal((n,), 0, high - 1, wrong=0.02), None
    return make


def probabilities(ref):
    """A literal in (0, 1) with ``ref``'s shape (binary cross entropy targets)."""
    def make(g, env):
        shape = tuple(env[ref][1].shape)
        vals = g.literal(shape, str(env[ref][1].dtype)[6:])
        return f"{vals}.sigmoid()", None
    return make


def square():
    """A (batch of) square matrices: a variable when one fits, else a literal (float32 or
    float64, maybe requiring grad)."""
    def make(g, env):
        name = g.pick(lambda t: is_float(t) and t.dim() in (2, 3) and t.shape[-1] == t.shape[-2],
                      strict=False)
        if name is not None and g.rng.random() < 0.5:
            return name, g.value(name)
        n = g.rng.randint(1, 3)
        shape = (n, n) if g.rng.random() < 0.7 else (2, n, n)
        dtype = g.rng.choice(["float32", "float64"])
        text = g.literal(shape, dtype, g.rng.random() < 0.6)
        return text, eval(text, {"torch": g.torch})  # noqa: S307 - generated source
    return make


def same_dtype_tensor(ref, pred=is_float):
    return tensor(lambda u: pred(u))


def _shape_of_index(g, env):
    """The shape of the index chosen for a scatter (its source is that shape)."""
    return tuple(eval(env["i"][0], {"torch": g.torch}).shape)  # noqa: S307 - generated source


def _row_index(n):
    """``n`` row indices of ``x`` (an int64 literal; rarely one out of range)."""
    def make(g, env):
        rows = env["x"][1].shape[0]
        if not rows:
            raise Skip
        return g.int_literal((n,), 0, rows - 1, wrong=0.03), None
    return make


def _rest_along(env):
    """What is left along the chosen dimension after a first piece of one."""
    t, d = env["x"][1], env["d"][1]
    if not -t.dim() <= d < t.dim() or t.shape[d] < 1:
        raise Skip
    return str(t.shape[d] - 1), t.shape[d] - 1



FLOAT = tensor()
MAT = tensor(ndim_is(2))
ANY = tensor(any_tensor)
REALNUM = tensor(is_real_num)

_UNARY = ["exp", "log", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt", "abs", "neg",
          "reciprocal", "expm1", "log1p", "log2", "log10", "exp2", "asin", "acos", "atan",
          "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "floor", "ceil",
          "round", "trunc", "frac", "sign", "sgn", "square", "relu", "lgamma", "digamma",
          "sinc", "logit", "nan_to_num", "positive"]
_BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "fmod", "remainder",
           "hypot", "copysign", "xlogy", "logaddexp", "fmax", "fmin", "float_power",
           "true_divide", "floor_divide", "rsub"]
_COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
_OPERATORS = ["+", "-", "*", "/", "**", "//", "%"]
_ACTIVATIONS = ["relu", "gelu", "silu", "elu", "selu", "leaky_relu", "softplus", "hardtanh",
                "relu6", "hardsigmoid", "hardswish", "mish", "logsigmoid", "softsign",
                "tanhshrink", "softshrink", "hardshrink", "celu"]

OPS: list[Op] = [
    # -- pointwise ------------------------------------------------------------------------------
    *[op(n, (f"torch.{n}({{x}})", f"{{x}}.{n}()"), weight=0.4, x=tensor(is_real_num))
      for n in _UNARY],
    *[op(n, f"torch.{n}({{x}}, {{y}})", weight=0.5, x=REALNUM,
         y=broadcastable("x", is_real_num)) for n in _BINARY],
    *[op(f"operator{s}", f"{{x}} {s} {{y}}", weight=0.6, x=REALNUM,
         y=broadcastable("x", is_real_num)) for s in _OPERATORS],
    op("reflected", ("2 * {x}", "1.5 - {x}", "2 / {x}", "2 ** {x}"), x=FLOAT),
    op("unary-", "-{x}", weight=0.3, x=ANY),
    *[op(n, f"torch.{n}({{x}}, {{y}})", weight=0.2, x=REALNUM,
         y=broadcastable("x", is_real_num)) for n in _COMPARE],
    op("add_alpha", "torch.add({x}, {y}, alpha={a})", x=FLOAT, y=broadcastable("x", number=0),
       a=number()),
    op("clamp", ("torch.clamp({x}, {lo}, {hi})", "{x}.clamp(min={lo})", "{x}.clamp(max={hi})"),
       x=REALNUM, lo=number(-1, 0), hi=number(0, 1)),
    op("clamp_tensor", "torch.clamp({x}, min={lo})", x=FLOAT, lo=broadcastable("x", number=0)),
    op("where", "torch.where({m}, {x}, {y})", x=FLOAT, m=mask_of("x"), y=broadcastable("x")),
    op("lerp", "torch.lerp({x}, {y}, {w})", x=FLOAT, y=broadcastable("x", number=0),
       w=number(0, 1)),
    op("addcmul", ("torch.addcmul({x}, {y}, {z}, value={v})",
                   "torch.addcdiv({x}, {y}, {z}, value={v})"),
       x=FLOAT, y=broadcastable("x", number=0), z=broadcastable("x", number=0), v=number()),
    op("pow_scalar", ("{x} ** {p}", "torch.pow({x}, {p})", "{x}.pow({p})"), x=FLOAT,
       p=choice(2, 3, 0.5, -1, 0, 1.5, -0.5, 2.0)),
    op("to_dtype", ("{x}.to({d})", "{x}.type({d})"), x=ANY,
       d=text("torch.float64", "torch.float32", "torch.int64", "torch.bool", "torch.float16")),
    op("double", ("{x}.double()", "{x}.float()", "{x}.long()", "{x}.int()", "{x}.bool()"),
       x=ANY, weight=0.5),
    op("isnan", ("torch.isnan({x})", "torch.isfinite({x})", "torch.isinf({x})"), x=FLOAT,
       weight=0.2),
    op("logical", ("torch.logical_not({x})", "torch.logical_and({x}, {y})"), x=ANY,
       y=broadcastable("x", any_tensor, number=0), weight=0.2),
    # -- reductions -------------------------------------------------------------------------------
    op("sum", ("{x}.sum()", "torch.sum({x}, {d})", "{x}.sum({d}, keepdim=True)",
               "{x}.sum(dim={ds})"), x=ANY, d=dim("x"), ds=dims("x"), weight=2),
    op("mean", ("{x}.mean()", "{x}.mean({d})", "torch.mean({x}, {d}, keepdim=True)"),
       x=FLOAT, d=dim("x")),
    op("prod", ("{x}.prod()", "{x}.prod({d})"), x=REALNUM, d=dim("x")),
    op("amax", ("{x}.amax()", "{x}.amax({d})", "{x}.amin({d}, keepdim=True)"), x=REALNUM,
       d=dim("x")),
    op("max", ("{x}.max()", "{x}.min()", "torch.max({x}, {y})"), x=REALNUM,
       y=broadcastable("x", is_real_num, number=0)),
    op("max_dim", ("torch.max({x}, {d})", "{x}.min({d}, keepdim=True)",
                   "torch.sort({x}, {d})", "{x}.cummax({d})", "torch.median({x}, {d})",
                   "torch.std_mean({x}, {d})", "torch.var_mean({x})"),
       outputs=2, x=REALNUM, d=dim("x"), undefined=_median_along_expanded),
    op("topk", "torch.topk({x}, {k}, {d})", outputs=2, x=tensor(nonempty()), d=dim("x"),
       k=choice(1, 2)),
    op("argmax", ("{x}.argmax()", "{x}.argmax({d})", "torch.argmin({x}, {d}, keepdim=True)",
                  "torch.argsort({x}, {d})"), x=REALNUM, d=dim("x"), weight=0.5),
    op("std", ("{x}.std()", "{x}.var({d})", "torch.std({x}, {d}, correction=0)",
               "{x}.var(unbiased=False)"), x=FLOAT, d=dim("x")),
    op("norm", ("{x}.norm()", "torch.norm({x}, {p})", "{x}.norm(dim={d})",
                "torch.linalg.vector_norm({x}, {p})"), x=FLOAT, p=choice(1, 2, 3, float("inf")),
       d=dim("x")),
    op("logsumexp", "torch.logsumexp({x}, {d})", x=FLOAT, d=dim("x")),
    op("cumsum", ("torch.cumsum({x}, {d})", "{x}.cumprod({d})", "torch.logcumsumexp({x}, {d})"),
       x=FLOAT, d=dim("x")),
    op("median", ("{x}.median()", "{x}.nansum()", "{x}.nanmean()", "{x}.count_nonzero()",
                  "{x}.all()", "{x}.any()"), x=REALNUM, weight=0.5),
    op("kthvalue", "torch.kthvalue({x}, 1, {d})", outputs=2, x=tensor(nonempty()), d=dim("x"),
       weight=0.3),
    op("reduce_dtype", ("{x}.sum(dtype={t})", "torch.sum({x}, {d}, dtype={t})",
                        "{x}.mean(dtype={t})", "torch.mean({x}, {d}, keepdim=True, dtype={t})",
                        "{x}.prod(dtype={t})", "torch.prod({x}, {d}, dtype={t})",
                        "torch.cumsum({x}, {d}, dtype={t})", "{x}.cumprod({d}, dtype={t})",
                        "torch.nansum({x}, dtype={t})",
                        "torch.linalg.vector_norm({x}, dtype={t})"),
       x=REALNUM, d=dim("x"), t=text("torch.float64", "torch.float32", "torch.int64")),
    op("softmax_dtype", ("F.softmax({x}, {d}, dtype={t})", "F.log_softmax({x}, {d}, dtype={t})",
                         "{x}.softmax({d}, dtype={t})"),
       x=FLOAT, d=dim("x"), t=text("torch.float64", "torch.float32"), weight=0.5),
    # -- linear algebra ---------------------------------------------------------------------------
    op("matmul", ("{x} @ {y}", "torch.matmul({x}, {y})", "torch.mm({x}, {y})"),
       x=tensor(ndim_is(2)), y=matrix_for("x", -1)),
    op("matmul_nd", ("{x} @ {y}", "torch.matmul({x}, {y})"), x=tensor(ndim_at_least(1)),
       y=operand(lambda g, env: _matmul_partner(g, env["x"][1]))),
    op("mv", ("torch.mv({x}, {v})", "{x} @ {v}"), x=tensor(ndim_is(2)),
       v=operand(shape_of("x", lambda s: s[-1:]))),
    op("dot", ("torch.dot({x}, {y})", "torch.outer({x}, {y})", "torch.inner({x}, {y})"),
       x=tensor(ndim_is(1)), y=operand(shape_of("x"))),
    op("bmm", "torch.bmm({x}, {y})", x=tensor(ndim_is(3)),
       y=operand(lambda g, env: (env["x"][1].shape[0], env["x"][1].shape[2], 2))),
    op("einsum", ("torch.einsum('ij,jk->ik', {x}, {y})", "torch.einsum('ij,jk', {x}, {y})",
                  "torch.einsum('ij,jk->ki', {x}, {y})"), x=tensor(ndim_is(2)),
       y=matrix_for("x", -1)),
    op("einsum1", ("torch.einsum('ii', {x})", "torch.einsum('ij->j', {x})",
                   "torch.einsum('ij->ji', {x})", "torch.einsum('...', {x})"),
       x=tensor(ndim_is(2)), weight=0.5),
    op("addmm", "torch.addmm({b}, {x}, {y}, beta={s}, alpha={a})", x=tensor(ndim_is(2)),
       y=matrix_for("x", -1, 2), b=operand(lambda g, env: (env["x"][1].shape[0], 2)),
       s=choice(1, 0.5, 0), a=choice(1, 2)),
    op("tensordot", "torch.tensordot({x}, {y}, dims=1)", x=tensor(ndim_at_least(1)),
       y=operand(lambda g, env: (env["x"][1].shape[-1], 2))),
    op("trace", ("torch.trace({x})", "torch.diag({x})", "torch.tril({x})", "{x}.triu(1)"),
       x=tensor(ndim_is(2)), weight=0.5),
    # -- shape ops and views ------------------------------------------------------------------------
    op("view", ("{x}.view({s})", "{x}.reshape({s})"), view=True, x=ANY, s=view_shape("x"),
       weight=1.5),
    op("transpose", ("{x}.transpose({a}, {b})", "torch.swapaxes({x}, {a}, {b})"), view=True,
       x=ANY, a=dim("x"), b=dim("x")),
    op("t", ("{x}.t()", "{x}.T", "{x}.mT"), view=True, x=ANY, weight=0.6),
    op("permute", ("{x}.permute({p})", "torch.permute({x}, ({p},))"), view=True, x=ANY,
       p=permutation("x")),
    op("unsqueeze", ("{x}.unsqueeze({d})", "{x}[None]", "{x}[..., None]"), view=True, x=ANY,
       d=dim("x")),
    op("squeeze", ("{x}.squeeze()", "{x}.squeeze({d})", "torch.squeeze({x}, {d})"), view=True,
       x=ANY, d=dim("x")),
    op("expand", ("{x}.expand({s})", "torch.broadcast_to({x}, ({s},))"), view=True, x=ANY,
       s=expand_shape("x")),
    op("flatten", ("{x}.flatten()", "torch.flatten({x}, {d})", "{x}.ravel()"), view=True,
       x=ANY, d=dim("x"), weight=0.6),
    op("narrow", "{x}.narrow({d}, 0, 1)", view=True, x=tensor(ndim_at_least(1, any_tensor)),
       d=dim("x")),
    op("select", "{x}.select({d}, 0)", view=True, x=tensor(ndim_at_least(1, any_tensor)),
       d=dim("x")),
    op("slice", "{x}[{k}]", view=True, x=tensor(ndim_at_least(1, any_tensor)), k=basic_key("x"),
       weight=2),
    op("alias", ("{x}[...]", "{x}[:]", "{x}.view_as({x})"), view=True, x=ANY, weight=0.3),
    op("unbind", ("{x}.unbind({d})[{k}]", "torch.unbind({x}, {d})[{k}]"), view=True,
       x=tensor(ndim_at_least(1)), d=dim("x"), k=split_part("x", "d", lambda n, env: n)),
    op("split", ("{x}.split(2, {d})[{k}]", "torch.chunk({x}, 2, {d})[{k}]"), view=True,
       x=tensor(ndim_at_least(1)), d=dim("x"),
       k=split_part("x", "d", lambda n, env: min(n, (n + 1) // 2))),
    op("diagonal", ("{x}.diagonal()", "torch.diagonal({x}, 1)", "{x}.diagonal(0, -1, 0)"),
       view=True, x=tensor(ndim_at_least(2))),
    op("movedim", "torch.movedim({x}, {a}, {b})", view=True, x=ANY, a=dim("x"), b=dim("x")),
    op("unflatten", "{x}.unflatten({d}, (1, -1))", view=True, x=tensor(ndim_at_least(1)),
       d=dim("x"), weight=0.4),
    op("as_strided", "{x}.as_strided((2,), (1,))", view=True,
       x=tensor(nonempty(lambda t: is_float(t) and storage_is_its_own(t))), weight=0.3,
       base=storage_is_its_own),
    op("detach_view", "{x}.detach()", view=True, x=ANY, weight=0.3),
    op("contiguous", ("{x}.contiguous()", "{x}.clone()", "torch.clone({x})"), x=ANY, weight=0.6),
    op("flip", ("{x}.flip({d})", "torch.roll({x}, 1, {d})", "{x}.repeat(2, *[1] * {x}.dim())",
                "{x}.tile((2,))"), x=ANY, d=dim("x")),
    op("cat", ("torch.cat([{x}, {y}], {d})", "torch.stack([{x}, {y}], {d})"),
       x=tensor(ndim_at_least(1, any_tensor)), y=same_shape("x", any_tensor), d=dim("x")),
    op("cat_self", ("torch.cat([{x}, {x}])", "torch.stack([{x}, {x}])"), x=ANY, weight=0.4),
    # -- indexing -------------------------------------------------------------------------------------
    op("index", "{x}[{k}]", x=tensor(ndim_at_least(1, any_tensor)), k=key("x"), weight=1.5),
    op("index_select", "torch.index_select({x}, {d}, {i})", x=tensor(ndim_at_least(1)),
       d=dim("x"), i=index_tensor("x", "d")),
    op("gather", "torch.gather({x}, {d}, {i})", x=tensor(ndim_at_least(1)), d=dim("x"),
       i=gather_index("x", "d")),
    op("take", "torch.take({x}, {i})", x=tensor(nonempty()),
       i=custom(lambda g, env: (g.int_literal((2,), 0, env["x"][1].numel() - 1), None))),
    op("masked_select", "torch.masked_select({x}, {m})", x=FLOAT, m=mask_of("x")),
    op("scatter", ("torch.scatter({x}, {d}, {i}, {s})", "{x}.scatter_add({d}, {i}, {s})",
                   "torch.scatter({x}, {d}, {i}, 1.5)"),
       x=tensor(ndim_at_least(1)), d=dim("x"), i=gather_index("x", "d"),
       s=custom(lambda g, env: (f"torch.ones_like({env['i'][0]}, dtype={env['x'][1].dtype})"
                                , None))),
    op("index_add", ("torch.index_add({x}, 0, {i}, {s})", "{x}.index_copy(0, {i}, {s})",
                     "{x}.index_fill(0, {i}, -1.0)"),
       x=tensor(ndim_at_least(1)),
       i=custom(lambda g, env: (g.int_literal((1,), 0, env["x"][1].shape[0] - 1), None)
                if env["x"][1].shape[0] else (_skip(), None)),
       s=operand(lambda g, env: (1,) + tuple(env["x"][1].shape[1:]))),
    op("masked_fill", ("{x}.masked_fill({m}, {v})", "torch.masked_fill({x}, {m}, {v})"),
       x=FLOAT, m=mask_of("x"), v=number()),
    op("take_along_dim", "torch.take_along_dim({x}, {i}, {d})", x=tensor(ndim_at_least(1)),
       d=dim("x"), i=gather_index("x", "d"), weight=0.4),
    # -- nn.functional --------------------------------------------------------------------------------
    *[op(f"F.{n}", f"F.{n}({{x}})", weight=0.3, x=ANY) for n in _ACTIVATIONS],
    op("F.leaky_relu_slope", "F.leaky_relu({x}, {s})", x=FLOAT, s=choice(0.1, -0.5, 2.0),
       weight=0.2),
    op("F.threshold", "F.threshold({x}, {t}, {v})", x=FLOAT, t=number(), v=number(),
       weight=0.3),
    op("F.softmax", ("F.softmax({x}, {d})", "F.log_softmax({x}, {d})", "{x}.softmax({d})",
                     "torch.log_softmax({x}, {d})", "F.softmin({x}, {d})"),
       x=FLOAT, d=dim("x"), weight=1.5),
    op("F.normalize", "F.normalize({x}, dim={d})", x=FLOAT, d=dim("x")),
    op("F.linear", ("F.linear({x}, {w})", "F.linear({x}, {w}, {b})"), x=tensor(ndim_at_least(1)),
       w=operand(lambda g, env: (2, env["x"][1].shape[-1])),
       b=operand(lambda g, env: (2,))),
    op("F.conv1d", ("F.conv1d({x}, {w})", "F.conv1d({x}, {w}, padding=1)",
                    "F.conv1d({x}, {w}, stride=2)"),
       x=tensor(ndim_is(3)), w=operand(lambda g, env: (2, env["x"][1].shape[1], 2))),
    op("F.conv2d", ("F.conv2d({x}, {w})", "F.conv2d({x}, {w}, padding=1)"),
       x=tensor(ndim_is(3)), w=operand(lambda g, env: (2, env["x"][1].shape[0], 1, 2))),
    op("F.pool1d", ("F.avg_pool1d({x}, 2)", "F.max_pool1d({x}, 2)", "F.max_pool1d({x}, 2, 1)",
                    "F.adaptive_avg_pool1d({x}, 1)", "F.avg_pool1d({x}, 2, 1, 1)"),
       x=tensor(ndim_is(2, 3))),
    op("F.pool2d", ("F.avg_pool2d({x}, 2)", "F.max_pool2d({x}, (1, 2))",
                    "F.adaptive_avg_pool2d({x}, 1)"), x=tensor(ndim_is(3))),
    op("F.layer_norm", ("F.layer_norm({x}, {x}.shape[-1:])",
                        "F.layer_norm({x}, {x}.shape[-1:], {w})"),
       x=tensor(ndim_at_least(1)), w=operand(lambda g, env: env["x"][1].shape[-1:])),
    op("F.loss", ("F.mse_loss({x}, {y})", "F.l1_loss({x}, {y})", "F.smooth_l1_loss({x}, {y})",
                  "F.huber_loss({x}, {y}, reduction='sum')", "F.mse_loss({x}, {y}, "
                  "reduction='none')"), x=FLOAT, y=same_shape("x")),
    op("F.cross_entropy", ("F.cross_entropy({x}, {t})", "F.nll_loss({x}, {t})",
                           "F.cross_entropy({x}, {t}, reduction='sum')"),
       x=tensor(ndim_is(2)), t=int_vector("x", 0, 1)),
    op("F.bce", ("F.binary_cross_entropy({x}.sigmoid(), {y})",
                 "F.binary_cross_entropy_with_logits({x}, {y})"), x=FLOAT, y=probabilities("x")),
    op("F.cosine_similarity", ("F.cosine_similarity({x}, {y}, dim={d})",
                               "F.pairwise_distance({x}, {y})"),
       x=tensor(ndim_at_least(1)), y=same_shape("x"), d=dim("x")),
    op("F.pad", ("F.pad({x}, (1, 1))", "F.pad({x}, (0, 1), value=2.0)"),
       x=tensor(ndim_at_least(1))),
    op("F.layer_norm_affine", "F.layer_norm({x}, {x}.shape[-1:], {w}, {b}, eps={e})",
       x=tensor(ndim_at_least(1)), w=operand(lambda g, env: env["x"][1].shape[-1:]),
       b=operand(lambda g, env: env["x"][1].shape[-1:]), e=choice(1e-5, 0.1)),
    op("F.group_norm", ("F.group_norm({x}, 1, {w}, {b})", "F.group_norm({x}, 1)",
                        "F.instance_norm({x}, weight={w}, bias={b}, use_input_stats=True)"),
       x=tensor(ndim_is(3)), w=operand(lambda g, env: env["x"][1].shape[1:2]),
       b=operand(lambda g, env: env["x"][1].shape[1:2]), weight=0.5),
    op("F.batch_norm", ("F.batch_norm({x}, None, None, {w}, {b}, training=True)",
                        "F.batch_norm({x}, torch.zeros({c}, dtype={x}.dtype), "
                        "torch.ones({c}, dtype={x}.dtype), {w}, {b})"),
       x=tensor(ndim_is(2, 3)), w=operand(lambda g, env: env["x"][1].shape[1:2]),
       b=operand(lambda g, env: env["x"][1].shape[1:2]),
       c=custom(lambda g, env: (str(env["x"][1].shape[1]), None)), weight=0.5),
    # (not F.bilinear: torch's graph is one _trilinear node, TrilinearBackward0, ember's an
    # einsum's)
    op("F.prelu", "F.prelu({x}, {w})", x=tensor(ndim_at_least(1)),
       w=operand(lambda g, env: (1,) if g.rng.random() < 0.5 or env["x"][1].dim() < 2
                 else env["x"][1].shape[1:2]), weight=0.4),
    op("F.conv_transpose1d", ("F.conv_transpose1d({x}, {w})",
                              "F.conv_transpose1d({x}, {w}, stride=2, padding=1)"),
       x=tensor(ndim_is(3)), w=operand(lambda g, env: (env["x"][1].shape[1], 2, 2)),
       weight=0.5),
    op("F.embedding_options", ("F.embedding({i}, {w}, padding_idx=0)",
                               "F.embedding({i}, {w}, max_norm=1.0)",
                               "F.embedding({i}, {w}, scale_grad_by_freq=True)"),
       w=tensor(ndim_is(2)),
       i=custom(lambda g, env: (g.int_literal((3,), 0, env["w"][1].shape[0] - 1), None)
                if env["w"][1].shape[0] else (_skip(), None)), weight=0.5),
    op("F.embedding", "F.embedding({i}, {w})", w=tensor(ndim_is(2)),
       i=custom(lambda g, env: (g.int_literal((2,), 0, env["w"][1].shape[0] - 1), None)
                if env["w"][1].shape[0] else (_skip(), None))),
    op("F.one_hot", "F.one_hot({i}, 3)",
       i=custom(lambda g, env: (g.int_literal((g.rng.randint(1, 3),), 0, 2), None)),
       weight=0.3),
    op("F.dropout", ("F.dropout({x}, 0.0)", "F.dropout({x}, 0.5, training=False)"), x=FLOAT,
       weight=0.3),
    op("F.glu", "F.glu({x}, {d})", x=tensor(ndim_at_least(1)), d=dim("x"), weight=0.3),
    op("F.scaled_dot_product_attention",
       ("F.scaled_dot_product_attention({x}, {k}, {k})",
        "F.scaled_dot_product_attention({x}, {x}, {x}, is_causal=True)",
        "F.scaled_dot_product_attention({x}, {k}, {x}, scale=0.5)"),
       x=tensor(ndim_is(3)), k=operand(shape_of("x")), weight=0.5),
    op("F.interpolate", ("F.interpolate({x}, scale_factor=2)",
                         "F.interpolate({x}, size=5, mode='linear')",
                         "F.interpolate({x}, scale_factor=0.5, mode='linear', "
                         "align_corners=True)"), x=tensor(ndim_is(3)), weight=0.4),
    op("F.kl_div", ("F.kl_div({x}.log_softmax(-1), {y}, reduction='batchmean')",
                    "F.cross_entropy({x}, {t}, label_smoothing=0.1)",
                    "F.cross_entropy({x}, {t}.softmax(-1))"),
       x=tensor(ndim_is(2)), y=probabilities("x"), t=same_shape("x"), weight=0.4),
    # -- the rest of what models commonly call ----------------------------------------------------
    op("linalg", ("torch.linalg.inv({x})", "torch.linalg.det({x})", "torch.inverse({x})",
                  "torch.logdet({x})", "torch.linalg.matrix_norm({x})",
                  "torch.linalg.solve({x}, {b})"),
       x=square(), b=operand(lambda g, env: env["x"][1].shape[:-1] + (2,)), weight=0.6),
    op("cdist", ("torch.cdist({x}, {y})", "torch.cdist({x}, {y}, p=1)"),
       x=tensor(ndim_is(2)), y=operand(lambda g, env: (2, env["x"][1].shape[-1])), weight=0.4),
    op("repeat_interleave", ("{x}.repeat_interleave(2, {d})", "torch.diff({x}, dim={d})",
                             "{x}.expand_as({y})", "torch.where({m}, {x}, 0.0)",
                             "{x}.clip(-0.5, 0.5)", "torch.baddbmm({x}, {x}, {x}.mT)"),
       x=tensor(ndim_at_least(1)), d=dim("x"), y=operand(lambda g, env: (2,) + tuple(
           env["x"][1].shape)), m=mask_of("x"), weight=0.8),
    # -- what the op table offers beyond the above (reductions over several dims and keepdim,
    # sorting's options, reduced scatters, index_put, the rest of the matrix products, norms
    # and nn.functional options, losses) ---------------------------------------------------------
    op("reduce_dims", ("{x}.mean({ds}, keepdim=True)", "{x}.amax({ds})",
                       "torch.amin({x}, {ds}, keepdim=True)", "{x}.var({ds}, keepdim=True)",
                       "torch.std({x}, {ds}, correction=2)", "torch.logsumexp({x}, {ds}, True)",
                       "torch.linalg.vector_norm({x}, 2, {ds}, keepdim=True)",
                       "{x}.nansum({ds})", "torch.nanmean({x}, {d}, keepdim=True)",
                       "{x}.std({d}, keepdim=True)", "{x}.logsumexp({d}, keepdim=True)"),
       x=FLOAT, ds=dims("x"), d=dim("x"), weight=1.5),
    op("reduce_bool", ("{x}.all({d})", "torch.any({x}, {d}, keepdim=True)",
                       "{x}.count_nonzero({d})", "{x}.sum({d}, keepdim=True)"),
       x=ANY, d=dim("x"), weight=0.5),
    op("aminmax", ("torch.aminmax({x})", "torch.aminmax({x}, dim={d})",
                   "{x}.aminmax(dim={d}, keepdim=True)"), outputs=2, x=tensor(nonempty(is_real_num)),
       d=dim("x"), weight=0.4),
    op("sort_options", ("torch.sort({x}, {d}, descending=True)",
                        "{x}.sort(stable=True, descending=True)", "torch.topk({x}, 1, {d}, largest=False)",
                        "{x}.cummin({d})", "torch.nanmedian({x}, {d})", "torch.mode({x}, {d})",
                        "{x}.max({d}, keepdim=True)"),
       outputs=2, x=tensor(nonempty(is_real_num)), d=dim("x"), undefined=_median_along_expanded),
    op("sort_values", ("torch.sort({x}, {d})[0]", "torch.topk({x}, 1, {d})[0]",
                       "torch.msort({x})", "{x}.sort(descending=True).values"),
       x=tensor(nonempty(is_real_num)), d=dim("x"), weight=0.6),
    op("scatter_reduce", ("torch.scatter_reduce({x}, {d}, {i}, {s}, {r})",
                          "{x}.scatter_reduce({d}, {i}, {s}, {r}, include_self=False)",
                          "torch.scatter({x}, {d}, {i}, {s}, reduce='add')"),
       x=tensor(ndim_at_least(1)), d=dim("x"), i=gather_index("x", "d"),
       s=operand(lambda g, env: _shape_of_index(g, env)),
       r=choice("sum", "prod", "mean", "amax", "amin")),
    op("index_reduce", ("{x}.index_reduce(0, {i}, {s}, {r})",
                        "{x}.index_reduce(0, {i}, {s}, {r}, include_self=False)"),
       x=tensor(ndim_at_least(1)), i=custom(_row_index(2)),
       s=operand(lambda g, env: (2,) + tuple(env["x"][1].shape[1:])),
       r=choice("prod", "mean", "amax", "amin"), weight=0.4),
    op("index_put", ("torch.index_put({x}, ({i},), {s})",
                     "{x}.index_put(({i},), {s}, accumulate=True)",
                     "torch.index_put({x}, ({i},), torch.tensor(1.5, dtype={x}.dtype), True)"),
       x=tensor(ndim_at_least(1)), i=custom(_row_index(2)),
       s=operand(lambda g, env: (2,) + tuple(env["x"][1].shape[1:]))),
    op("masked_scatter", "{x}.masked_scatter({m}, {s})", x=FLOAT, m=mask_of("x"),
       s=operand(shape_of("x")), weight=0.5),
    op("split_sizes", ("{x}.split([1, {r}], {d})[{k}]", "torch.tensor_split({x}, 2, {d})[{k}]",
                       "torch.split({x}, 1, {d})[0]", "{x}.chunk(3, {d})[-1]"),
       view=True, x=tensor(ndim_at_least(1)), d=dim("x"),
       r=custom(lambda g, env: _rest_along(env)), k=choice(0, 1)),
    op("stack_like", ("torch.hstack([{x}, {y}])", "torch.vstack([{x}, {y}])",
                      "torch.dstack([{x}, {y}])", "torch.column_stack([{x}, {y}])",
                      "torch.cat([{x}, {y}], -1)"),
       x=tensor(ndim_at_least(1, any_tensor)), y=same_shape("x", any_tensor), weight=0.6),
    op("products", ("torch.addmv({v}, {x}, {w}, beta=0.5)", "torch.addr({x}, {c}, {w})",
                    "torch.kron({x}, {x})", "torch.linalg.vecdot({x}, {w})",
                    "torch.linalg.multi_dot([{x}, {x}.mT, {x}])",
                    "torch.addbmm({x}, {x}[None], {x}[None].mT)", "torch.chain_matmul({x}, {x}.mT)"),
       x=tensor(ndim_is(2)), w=operand(shape_of("x", lambda s: s[-1:])),
       v=operand(shape_of("x", lambda s: s[:1])), c=operand(shape_of("x", lambda s: s[:1]))),
    op("cross", ("torch.linalg.cross({x}, {y})", "torch.cross({x}, {y}, dim=-1)"),
       x=tensor(lambda t: t.is_floating_point() and t.dim() >= 1 and t.shape[-1] == 3),
       y=operand(shape_of("x")), weight=0.4),
    op("clamp_bounds", ("torch.clamp({x}, {lo}, {hi})", "{x}.clamp(max={hi})",
                        "torch.clamp_max({x}, {hi})", "{x}.clip({lo}, {hi})",
                        "torch.where({m}, {x}, {n})", "torch.where({m}, {n}, {lo})"),
       x=REALNUM, lo=broadcastable("x", is_real_num), hi=broadcastable("x", is_real_num),
       m=mask_of("x"), n=number()),
    op("norms", ("torch.linalg.norm({x})", "torch.linalg.norm({x}, {p}, {d})",
                 "torch.dist({x}, {y}, {p})", "{x}.norm({p}, {d}, keepdim=True)",
                 "torch.linalg.vector_norm({x}, -1, {d})", "torch.linalg.vector_norm({x}, 0)",
                 "F.normalize({x}, 1.0, {d})"),
       x=FLOAT, p=text("1", "2", "3", "0.5", "float('inf')", "-float('inf')"), d=dim("x"),
       y=broadcastable("x", number=0), weight=0.8),
    op("matrix_norms", ("torch.linalg.norm({x}, 'fro')", "torch.linalg.norm({x}, 1)",
                        "torch.linalg.matrix_norm({x}, float('inf'))", "torch.renorm({x}, 2, 0, 1.0)",
                        "torch.linalg.norm({x}, -1, dim=(0, 1))"),
       x=tensor(ndim_is(2)), weight=0.5),
    op("F.options", ("F.gelu({x}, approximate='tanh')", "F.elu({x}, 0.5)",
                     "F.softplus({x}, 2.0, 1.0)", "F.hardtanh({x}, -0.5, 0.5)", "F.celu({x}, 2.0)",
                     "F.rrelu({x}, training=False)", "F.threshold({x}, 0.1, -1.0)",
                     "F.softmin({x}, {d}, dtype=torch.float64)", "F.hardshrink({x}, 0.3)",
                     "F.glu(torch.cat([{x}, {x}], {d}), {d})"),
       x=FLOAT, d=dim("x")),
    op("F.losses", ("F.margin_ranking_loss({x}, {y}, {x}.sign())", "F.hinge_embedding_loss({x}, {x}.sign())",
                    "F.soft_margin_loss({x}, {x}.sign().detach())", "F.poisson_nll_loss({x}, {y}.abs())",
                    "F.gaussian_nll_loss({x}, {y}, {y}.abs() + 0.1)",
                    "F.huber_loss({x}, {y}, delta=0.5)", "F.smooth_l1_loss({x}, {y}, beta=0.5)",
                    "F.l1_loss({x}, {y}, reduction='none')",
                    "F.kl_div({x}, {y}, reduction='sum', log_target=True)",
                    "F.binary_cross_entropy_with_logits({x}, {y}.sigmoid(), pos_weight={y}.abs().detach())"),
       x=FLOAT, y=same_shape("x")),
    op("F.class_losses", ("F.cross_entropy({x}, {t}, weight={w}.detach(), ignore_index=1)",
                          "F.nll_loss({x}, {t}, weight={w}.detach(), reduction='sum')",
                          "F.multi_margin_loss({x}, {t})",
                          "F.multilabel_soft_margin_loss({x}, ({x} > 0).to({x}.dtype))",
                          "F.triplet_margin_loss({x}, {x} * 2, {x}.flip(0))",
                          "F.cosine_embedding_loss({x}, {x}.flip(0), {s})"),
       x=tensor(lambda t: t.is_floating_point() and t.dim() == 2 and t.shape[1] > 0),
       t=int_vector("x", 0, 1), w=operand(shape_of("x", lambda s: s[1:])),
       s=custom(lambda g, env: (g.rng.choice(["1", "-1"]) + " * torch.ones(%d)"
                                % env["x"][1].shape[0], None))),
    op("F.image", ("F.unfold({x}[None], (1, 2))", "F.pixel_shuffle({x}.repeat(4, 1, 1), 2)",
                   "F.max_pool1d({x}, 2, return_indices=True)[1]", "F.adaptive_max_pool1d({x}, 1)",
                   "F.lp_pool1d({x}, 2, 2)", "F.local_response_norm({x}[None], 2)",
                   "F.avg_pool1d({x}, 2, ceil_mode=True, count_include_pad=False, padding=1)"),
       x=tensor(ndim_is(3)), weight=0.6),
    op("F.conv1d_options", ("F.conv1d({x}, {w}, groups={c})",
                            "F.conv1d({x}, {w}, groups={c}, dilation=2, padding=2)",
                            "F.conv1d({x}, {w}, {b}, groups={c}, padding='same')"),
       x=tensor(ndim_is(3)), w=operand(lambda g, env: (env["x"][1].shape[1], 1, 2)),
       b=operand(lambda g, env: env["x"][1].shape[1:2]),
       c=custom(lambda g, env: (str(env["x"][1].shape[1]), None)), weight=0.4),
]


def _skip():
    raise Skip


def _matmul_partner(g, x):
    """A shape that multiplies with ``x`` on the right (vectors and batches included)."""
    k = x.shape[-1]
    r = g.rng.random()
    if r < 0.3:
        return (k,)
    if r < 0.7 or x.dim() < 3:
        return (k, 2)
    return tuple(x.shape[:-2]) + (k, 2)


# -- in-place ops: ``{x}`` is the tensor written into ---------------------------------------------
INPLACE: list[Op] = [
    *[op(f"{n}_", f"{{x}}.{n}_()", weight=0.3, x=FLOAT)
      for n in ["exp", "sin", "tanh", "sigmoid", "relu", "neg", "abs", "sqrt", "log", "floor",
                "reciprocal", "square", "cos", "zero"]],
    *[op(f"{n}_", f"{{x}}.{n}_({{y}})", x=FLOAT, y=broadcastable("x"))
      for n in ["add", "sub", "mul", "div", "pow", "clamp_min", "atan2"]],
    op("lerp_", "{x}.lerp_({y}, 0.5)", x=FLOAT, y=broadcastable("x", number=0)),
    op("iadd", ("{x} += {y}", "{x} *= {y}", "{x} -= {y}", "{x} /= {y}"), x=FLOAT,
       y=broadcastable("x")),
    op("clamp_", ("{x}.clamp_({lo}, {hi})", "{x}.clamp_(min={lo})"), x=FLOAT, lo=number(-1, 0),
       hi=number(0, 1)),
    op("fill_", ("{x}.fill_({v})", "{x}.fill_(torch.tensor({v}))"), x=FLOAT, v=number()),
    op("copy_", "{x}.copy_({y})", x=FLOAT, y=broadcastable("x", number=0), weight=1.5),
    op("masked_fill_", "{x}.masked_fill_({m}, {v})", x=FLOAT, m=mask_of("x"), v=number()),
    op("index_add_", ("{x}.index_add_(0, {i}, {s})", "{x}.index_fill_(0, {i}, 2.0)",
                      "{x}.index_copy_(0, {i}, {s})"),
       x=tensor(ndim_at_least(1)),
       i=custom(lambda g, env: (g.int_literal((1,), 0, env["x"][1].shape[0] - 1, wrong=0.05),
                                None) if env["x"][1].shape[0] else (_skip(), None)),
       s=operand(lambda g, env: (1,) + tuple(env["x"][1].shape[1:]))),
    op("scatter_", ("{x}.scatter_({d}, {i}, 1.0)", "{x}.scatter_add_({d}, {i}, {s})"),
       x=tensor(ndim_at_least(1)), d=dim("x"), i=gather_index("x", "d"),
       s=custom(lambda g, env: (f"torch.ones_like({env['i'][0]}, dtype={env['x'][1].dtype})",
                                None))),
    op("index_put_", ("{x}.index_put_(({i},), {s})", "{x}.index_put_(({i},), {s}, accumulate=True)",
                      "{x}.index_put_(({i},), torch.tensor(0.5, dtype={x}.dtype), True)",
                      "{x}.put_({j}, {s}.flatten()[:2], accumulate=True)"),
       x=tensor(ndim_at_least(1)), i=custom(_row_index(2)),
       s=operand(lambda g, env: (2,) + tuple(env["x"][1].shape[1:])),
       j=custom(lambda g, env: (g.int_literal((2,), 0, env["x"][1].numel() - 1), None)
                if env["x"][1].numel() else (_skip(), None))),
    op("scatter_reduce_", ("{x}.scatter_reduce_({d}, {i}, {s}, {r})",
                           "{x}.scatter_reduce_({d}, {i}, {s}, {r}, include_self=False)",
                           "{x}.index_reduce_(0, {k}, {x}[:1].exp(), 'prod')"),
       x=tensor(ndim_at_least(1)), d=dim("x"), i=gather_index("x", "d"),
       s=operand(lambda g, env: _shape_of_index(g, env)),
       r=choice("sum", "prod", "mean", "amax", "amin"), k=custom(_row_index(1))),
    op("masked_scatter_", "{x}.masked_scatter_({m}, {s})", x=FLOAT, m=mask_of("x"),
       s=operand(shape_of("x")), weight=0.5),
    op("clamp_tensor_", ("{x}.clamp_({lo}, {hi})", "{x}.clamp_(max={hi})", "{x}.clip_(min={lo})"),
       x=FLOAT, lo=broadcastable("x", number=0), hi=broadcastable("x", number=0), weight=0.5),
    op("addcmul_", "{x}.addcmul_({y}, {z})", x=FLOAT, y=broadcastable("x", number=0),
       z=broadcastable("x", number=0)),
    op("F.relu_inplace", ("F.relu({x}, inplace=True)", "F.leaky_relu({x}, 0.1, inplace=True)",
                          "F.hardtanh({x}, inplace=True)", "torch.relu_({x})"), x=FLOAT),
    op("requires_grad_", "{x}.requires_grad_()", x=FLOAT, weight=0.3),
    op("shape_inplace", ("{x}.t_()", "{x}.unsqueeze_(0)", "{x}.squeeze_()",
                         "{x}.transpose_(0, -1)"), x=FLOAT, weight=0.3),
]
