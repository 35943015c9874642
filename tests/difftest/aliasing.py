"""Steps about memory shared between tensors: views of every kind feeding in-place ops (on the
view and on its base), tensor hooks and ``retain_grad`` on views and on what in-place ops
return, and the ``out=`` forms of functions.

Each step is written from torch's values of the live variables, as the features of
``gen.py``; what torch leaves to its kernels' order (an in-place op on a view whose elements
share memory, an operand overlapping what is written, an ``out`` overlapping an input of a
reduction) is not written (docs/difftest.md).
"""
from __future__ import annotations

import itertools

from . import catalog
from .args import Skip, storage_is_its_own
from .gen import _a_gradients_layout, _memory, _reads_what_it_writes, _safe, feature
from .program import ALL_LIVE, Step

# -- views -----------------------------------------------------------------------------------


def _slices(g, t):
    if t.dim() == 0:
        raise Skip
    d = g.rng.randrange(t.dim())
    lo = g.rng.choice(["", "1"])
    step = g.rng.choice(["", "2", "3"])
    return "[" + ":, " * d + f"{lo}::{step}]"


def _unfold(g, t):
    if t.dim() == 0:
        return f".unfold(0, 1, {g.rng.randint(1, 2)})"
    d = g.rng.randrange(t.dim())
    if t.shape[d] == 0:
        raise Skip
    return f".unfold({d}, {g.rng.randint(1, t.shape[d])}, {g.rng.randint(1, 2)})"


def _diagonal(g, t):
    if t.dim() < 2:
        raise Skip
    d1, d2 = g.rng.sample(range(t.dim()), 2)
    return f".diagonal({g.rng.randint(-1, 1)}, {d1}, {d2})"


def _as_strided(g, t):
    if not (t.numel() and storage_is_its_own(t)):
        raise Skip
    n = t.untyped_storage().nbytes() // t.element_size()
    offset = g.rng.randrange(n)
    room = n - 1 - offset
    if g.rng.random() < 0.6:
        stride = g.rng.randint(1, 2)
        size = g.rng.randint(1, room // stride + 1)
        return f".as_strided(({size},), ({stride},), {offset})"
    rows, cols = g.rng.randint(1, 3), g.rng.randint(1, 3)
    col_stride = g.rng.randint(1, 2)
    row_stride = g.rng.choice([cols * col_stride, col_stride, 1])
    if (rows - 1) * row_stride + (cols - 1) * col_stride > room:
        raise Skip
    return f".as_strided(({rows}, {cols}), ({row_stride}, {col_stride}), {offset})"


def _as_real(g, t):
    """``view_as_real`` of ``view_as_complex``: a view of ``t`` through a complex tensor (the
    program compares only real tensors), or one of its two components."""
    if (t.dtype not in (g.torch.float32, g.torch.float64) or t.dim() == 0 or t.shape[-1] != 2
            or t.stride(-1) != 1 or t.storage_offset() % 2
            or any(s % 2 for s in t.stride()[:-1])):
        raise Skip
    part = g.rng.choice(["", "", "[..., 0]", "[..., 1]"])
    return f"torch.view_as_real(torch.view_as_complex({{x}})){part}"


_VIEWS = {"slice": _slices, "unfold": _unfold, "diagonal": _diagonal,
          "as_strided": _as_strided, "view_as_real": _as_real}


def _view_of(g, name):
    """(kind, source, value) of a view of the variable ``name``, drawn from ``_VIEWS``."""
    t = g.value(name)
    kind = g.rng.choice(list(_VIEWS))
    text = _VIEWS[kind](g, t)
    expr = text.format(x=name) if text.startswith("torch.") else name + text
    try:
        value = eval(expr, g.ns)  # noqa: S307 - generated source
    except Exception:  # noqa: BLE001 - a view torch refuses here: try another step
        raise Skip from None
    return kind, expr, value


def _overlaps_itself(t):
    """Whether elements of ``t`` share memory where torch does not refuse a write into it (no
    dimension of stride 0): an unfold of overlapping windows, an as_strided of overlapping
    rows. torch's in-place ops then read what they wrote, in its kernels' order."""
    if any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride())):
        return False
    if t.numel() > 4096:
        return True
    seen = set()
    for index in itertools.product(*(range(n) for n in t.shape)):
        at = sum(i * st for i, st in zip(index, t.stride()))
        if at in seen:
            return True
        seen.add(at)
    return False


_WRITES_ONE_VALUE = ("fill_", "zero_")  # (a value per location: any order gives it)


@feature(3)
def view_write(g):
    """A view (a slice with a step, ``unfold``, ``diagonal``, ``as_strided``,
    ``view_as_real`` of ``view_as_complex``) made a variable, then an in-place op on the view
    or on its base: both are compared after it, and every variable."""
    base = g.pick(lambda t: t.dim() >= 1 or g.rng.random() < 0.2)
    if _a_gradients_layout(g, base):
        raise Skip
    kind, expr, value = _view_of(g, base)
    view = g.new()
    op = g.rng.choices(catalog.INPLACE, [o.weight for o in catalog.INPLACE])[0]
    on_base = g.rng.random() < 0.35
    written = (base, g.value(base)) if on_base else (view, value)
    if not _safe(op.target, written[1]) or (
            _overlaps_itself(written[1]) and op.name not in _WRITES_ONE_VALUE):
        raise Skip
    code, uses = op.render(g, first=written)
    if _reads_what_it_writes(g, written[1], [u for u in uses if u != written[0]]):
        raise Skip
    uses = tuple(dict.fromkeys((base,) + tuple(u for u in uses if u != view)))
    where = "base" if on_base else "view"
    return Step(f"{view} = {expr}\n{code}", f"view_write:{op.name}@{kind}.{where}", (view,),
                uses, (view, base, ALL_LIVE))


# -- hooks and retain_grad on views and on in-place results ------------------------------------
_HOOK_BODIES = ["_rec({key!r}, g)", "_rec({key!r}, g) or g * 2", "_rec({key!r}, g) or -g"]


@feature(3)
def view_hook(g):
    """``retain_grad()`` or a tensor hook on a view, or on the result of an in-place op (the
    tensor it returns), then an in-place write into the view or its base now and then, and a
    backward through it: what the hook receives, and the ``.grad`` retained, are compared
    (torch moves a retained gradient to the tensor's new node after the write; a hook
    registered before stays with the value it was registered on)."""
    base = g.pick(lambda t: t.requires_grad and t.is_floating_point()
                  and not (t.is_leaf and g.rng.random() < 0.7))
    if _a_gradients_layout(g, base):
        raise Skip
    key = g.new("h")
    lines, defines, uses = [], [], [base]
    r = g.rng.random()
    if r < 0.6:  # a view, watched
        kind, expr, value = _view_of(g, base)
        watched = g.new()
        lines.append(f"{watched} = {expr}")
        tag = f"view_hook:{kind}"
    else:  # what an in-place op returns (the tensor itself, with the op's node)
        op = g.rng.choices(catalog.INPLACE, [o.weight for o in catalog.INPLACE])[0]
        copy = g.new()
        lines.append(f"{copy} = {base} * 1")
        value = g.value(base) * 1
        if not _safe(op.target, value):
            raise Skip
        code, more = op.render(g, first=(copy, value))
        if op.name in ("shape_inplace", "requires_grad_") or "=" in code.split("(")[0]:
            raise Skip  # (an augmented assignment returns nothing to hold)
        watched = g.new()
        lines.append(f"{watched} = {code}")
        uses.extend(u for u in more if u not in (copy, base))
        defines.append(copy)
        tag = f"view_hook:{op.name}_result"
    defines.append(watched)
    if g.rng.random() < 0.5:
        lines.append(f"{watched}.retain_grad()")
    else:
        body = g.rng.choice(_HOOK_BODIES).format(key=key)
        lines.append(f"{key} = {watched}.register_hook(lambda g: {body})")
        defines.append(key)
    if g.rng.random() < 0.4 and tag.startswith("view_hook:") and "_result" not in tag:
        # then written in place (a view's node is regenerated: a hook on a view written into
        # crashes torch 2.13 unless its grad_fn was read since, docs/difftest.md)
        target = g.rng.choice([watched, base])
        lines.append(f"{target}.mul_(2)")
        lines.append(f"_ = {watched}.grad_fn")
        tag += f".write_{'view' if target == watched else 'base'}"
    if g.rng.random() < 0.7:
        lines.append(f"{watched}.sum().backward(retain_graph=True)")
        tag += ".backward"
    return Step("\n".join(lines), tag, tuple(defines), tuple(dict.fromkeys(uses)), (ALL_LIVE,))


# -- out= ------------------------------------------------------------------------------------
# (template, elementwise): elementwise ops refuse an out partly overlapping an input (torch's
# TensorIterator); the others read and write in their kernels' order, so their out shares no
# memory with their inputs here
_OUT_CALLS = [
    *[(f"torch.{f}({{x}}, out={{o}})", True)
      for f in ("exp", "sin", "abs", "neg", "sqrt", "sigmoid", "tanh", "floor")],
    *[(f"torch.{f}({{x}}, {{y}}, out={{o}})", True)
      for f in ("add", "mul", "sub", "div", "maximum", "atan2", "hypot")],
    ("torch.add({x}, {y}, alpha=2, out={o})", True),
    ("torch.mul({x}, {c}, out={o})", True),
    ("torch.clamp({x}, -0.5, 0.5, out={o})", True),
    ("torch.where({x} > 0, {x}, {y}, out={o})", True),
    ("torch.pow({x}, 2, out={o})", True),
    ("torch.sum({x}, {d}, out={o})", False),
    ("torch.mean({x}, {d}, keepdim=True, out={o})", False),
    ("torch.cumsum({x}, {d}, out={o})", False),
    ("torch.amax({x}, {d}, out={o})", False),
    ("torch.prod({x}, {d}, out={o})", False),
    ("torch.matmul({x}, {x}.mT, out={o})", False),
    ("torch.cat([{x}, {x}], {d}, out={o})", False),
    ("torch.max({x}, {d}, out=({o}, {i}))", False),
    ("torch.sort({x}, {d}, out=({o}, {i}))", False),
]


def _out_tensor(g, shape, dtype):
    """Source of a fresh ``out``: of the result's shape and dtype mostly; empty, of another
    shape (resized, with torch's warning), of another dtype (float64 takes a float32 result,
    int64 refuses it) or requiring grad (refused where grad is recorded) now and then."""
    r = g.rng.random()
    dims = ", ".join(map(str, shape)) or "()"
    if r < 0.12:
        dims = "0"
    elif r < 0.22:
        dims = str(max(1, _numel(shape) + g.rng.choice([-1, 1])))
    kind = g.rng.random()
    if kind < 0.08:
        dtype = "float64"
    elif kind < 0.14:
        dtype = "int64"
    grad = ", requires_grad=True" if g.rng.random() < 0.06 else ""
    return f"torch.empty({dims}, dtype=torch.{dtype}{grad})"


def _shares_memory(g, name, uses):
    """Whether the variable ``name`` shares memory with one of ``uses`` (itself included: a
    reduction or a product reading what it writes, 61000208)."""
    span = _memory(g.value(name))
    for u in uses:
        other = _memory(g.value(u))
        if span and other and span[0] == other[0] and span[1] < other[2] and other[1] < span[2]:
            return True
    return False


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@feature(3)
def out_form(g):
    """A function's ``out=`` form: into a fresh tensor (of the result's shape or not, of its
    dtype or not, requiring grad now and then) or into a live variable (the input itself
    included: elementwise ops only), under ``no_grad`` or not; the result, ``out`` and every
    variable are compared after it."""
    template, elementwise = g.rng.choice(_OUT_CALLS)
    x = g.pick(lambda t: t.is_floating_point())
    t = g.value(x)
    env = {"x": x, "c": repr(g.number()), "d": str(g.rng.randrange(t.dim()) if t.dim() else 0)}
    uses = [x]
    if "{y}" in template:
        y = g.pick(lambda u: u.is_floating_point() and g.broadcasts(u.shape, t.shape),
                   strict=False)
        if y is None:
            raise Skip
        env["y"], uses = y, [x, y]
    probe = template.replace(", out=({o}, {i}))", ")").replace(", out={o})", ")")
    try:
        with g.torch.no_grad():
            value = eval(probe.format(**env), g.ns)  # noqa: S307 - generated source
    except Exception:  # noqa: BLE001 - a call torch refuses here: try another step
        raise Skip from None
    if isinstance(value, tuple):
        value = value[0]
    lines, defines = [], []
    if g.rng.random() < 0.2:  # into a live variable
        o = g.pick(lambda u: u.is_floating_point())
        if _a_gradients_layout(g, o) or (not elementwise and _shares_memory(g, o, uses)):
            raise Skip
        uses.append(o)
    else:
        o = g.new()
        lines.append(f"{o} = {_out_tensor(g, tuple(value.shape), str(value.dtype)[6:])}")
        defines.append(o)
    env["o"] = o
    if "{i}" in template:
        env["i"] = g.new()
        lines.append(f"{env['i']} = torch.empty(0, dtype=torch.int64)")
        defines.append(env["i"])
    result = g.new()
    call = f"{result} = {template.format(**env)}"
    defines.append(result)
    no_grad = g.rng.random() < 0.3
    lines.append(f"with torch.no_grad():\n    {call}" if no_grad else call)
    name = template.split("(")[0].split(".")[-1]
    return Step("\n".join(lines), f"out:{name}{'@no_grad' if no_grad else ''}",
                tuple(defines), tuple(dict.fromkeys(uses)), tuple(defines) + (ALL_LIVE,))
