"""Compiled functions: a small function of the program's ops wrapped in ``_compile`` (ember's
``torch.compile``; torch's eager mode on the torch side, see docs/difftest.md) and called
several times in a row, with what its guards must notice between the calls.

``torch.compile``'s contract (docs/compile.md) is that a compiled function gives eager's
values, gradients, errors and side effects: a replay is never stale, a changed shape, dtype,
``requires_grad``, grad mode, Python number, ``Module.training``, global or closure value or
replaced parameter records again, and a graph break runs eagerly. So each call is compared
with the eager call torch makes, and the calls come in the orders that would show a stale
replay: the same inputs again, other values, another shape, dtype or ``requires_grad``, under
``no_grad``, after an in-place write to an input or to a captured tensor, after a captured
number changed, a module switched to eval mode or a parameter replaced; each call's result is
differentiated now and then (``retain_graph``, ``create_graph``, hooks).
"""
from __future__ import annotations

from . import catalog
from .args import Skip
from .gen import _inputs_of, _module_names, _safe, feature
from .program import ALL_LIVE, Step

_BODY_OPS = 3  # at most this many catalog ops in a function's body


def _probe(t):
    """A copy of ``t`` to work out a body's arguments on (an in-place op in the body must not
    write into the program's own tensor while the generator looks)."""
    c = t.detach().clone()
    return c.requires_grad_() if t.requires_grad else c


def _call_op(g, first, env):
    """One catalog op applied to ``first`` = (name, value), and its value(s) worked out on the
    probes in ``env``: (line's expression, the variables it reads, its result's value)."""
    op = g.rng.choices(catalog.OPS, [o.weight for o in catalog.OPS])[0]
    expr, uses = op.render(g, first=first)
    try:
        value = eval(expr, env)  # noqa: S307 - generated source
    except Exception:  # noqa: BLE001 - an op torch refuses here: try another step
        raise Skip from None
    if op.outputs > 1:
        value = value[0]
        expr = f"({expr})[0]"
    return expr, uses, value


def _inplace_line(g, name, value, env):
    """An in-place catalog op writing into the intermediate ``name`` (its probe in ``env``)."""
    op = g.rng.choices(catalog.INPLACE, [o.weight for o in catalog.INPLACE])[0]
    if not _safe(op.target, value):
        raise Skip
    code, uses = op.render(g, first=(name, value))
    try:
        exec(code, env)  # noqa: S102 - generated source
    except Exception:  # noqa: BLE001 - torch refuses it: try another step
        raise Skip from None
    return code, uses


class _Body:
    """A function's body being written: its lines, what it reads from the program, and the
    names of the Python number, tensor or generator it captures."""

    def __init__(self, g, key):
        self.g, self.key = g, key
        self.lines: list[str] = []
        self.uses: list[str] = []
        self.head: list[str] = []  # lines before the ``def``: captured numbers, generators
        self.number = None  # ("global", name) or ("list", name): a captured Python number
        self.closure = None  # the program variable the closure cell holds
        self.module = None  # the module the body calls

    def read(self, names):
        self.uses.extend(n for n in names if n not in self.uses)


def _write_body(g, key, x, env):
    """Lines of ``def f{key}(a)``: up to three ops chained from ``a``, maybe an in-place write
    into an intermediate, a captured number, tensor or module, a seeded random draw."""
    b = _Body(g, key)
    current = ("a", env["a"])
    module = g.rng.choice(_module_names(g) or [None]) if g.rng.random() < 0.5 else None
    if module is not None and _safe(_inputs_of(g, g.ns[module]), env["a"]):
        b.module = module
        b.read([module])
        try:
            value = g.ns[module](env["a"])
        except Exception:  # noqa: BLE001 - the module refuses this input: try another step
            raise Skip from None
        current = _line(b, env, f"{module}(a)", value)
    for _ in range(g.rng.randint(1 if b.module is None else 0, _BODY_OPS)):
        expr, uses, value = _call_op(g, current, env)
        b.read(uses)
        current = _line(b, env, expr, value)
        if g.rng.random() < 0.2:
            code, uses = _inplace_line(g, current[0], current[1], env)
            b.read(uses)
            b.lines.append(code)
    extra = g.rng.random()
    t = current[1]
    if not isinstance(t, g.torch.Tensor):
        raise Skip
    if extra < 0.35 and t.dtype != g.torch.bool:
        b.number = (g.rng.choice(["global", "list"]), f"k{key}")
        value = g.number()
        read = b.number[1] if b.number[0] == "global" else f"{b.number[1]}[0]"
        b.head.append(f"{b.number[1]} = {value!r}" if b.number[0] == "global"
                      else f"{b.number[1]} = [{value!r}]")
        current = _line(b, env, f"{current[0]} * {read}", t * value)
    elif extra < 0.5 and t.is_floating_point():
        w = g.pick(lambda u: u.is_floating_point() and g.broadcasts(u.shape, t.shape),
                   strict=False)
        if w is not None:
            b.closure = w
            b.read([w])
            current = _line(b, env, f"{current[0]} + w", t + g.value(w))
    elif extra < 0.6 and t.is_floating_point():
        gen = f"G{key}"
        b.head.append(f"{gen} = torch.Generator().manual_seed({g.rng.randint(0, 99)})")
        draw = g.rng.choice(["torch.randn({r}.shape, generator={G}, dtype={r}.dtype)",
                             "torch.rand({r}.shape, generator={G}, dtype={r}.dtype)",
                             "torch.bernoulli(torch.full_like({r}, 0.5), generator={G})"])
        current = _line(b, env, f"{current[0]} * {draw.format(r=current[0], G=gen)}", t)
    if len(b.lines) < 1:
        raise Skip
    b.lines.append(f"return {current[0]}" if g.rng.random() < 0.8 or current[0] == "a"
                   else f"return {current[0]}, {b.lines[0].split(' = ')[0].strip()}")
    return b


def _line(b, env, expr, value):
    name = f"r{len(b.lines) + 1}"
    b.lines.append(f"{name} = {expr}")
    env[name] = value
    return name, value


def _definition(key, b):
    """The step's code: the captured values, the function and its compiled form."""
    body = "\n".join("    " + line for line in b.lines)
    if b.closure is None:
        fn = f"def f{key}(a):\n{body}\ncf{key} = _compile(f{key})"
    else:
        inner = "\n".join("    " + line for line in body.splitlines())
        fn = (f"def make{key}(w):\n    def f{key}(a):\n{inner}\n    return f{key}\n"
              f"cf{key} = _compile(make{key}({b.closure}))")
    return "\n".join(b.head + [fn])


@feature(8)
def compiled_function(g):
    """A compiled function of the program's ops called two to four times in a row (each call
    its own step, then its backward now and then), as the module docstring says."""
    x = g.pick(lambda t: t.is_floating_point() or g.rng.random() < 0.2)
    key = g.new("c")[1:]
    env = dict(g.ns)
    env["a"] = _probe(g.value(x))
    b = _write_body(g, key, x, env)
    numbers = (f"k{key}",) if b.number else ()
    if not g.add(Step(_definition(key, b), "compile:def", (f"cf{key}",) + numbers,
                      tuple(b.uses))):
        raise Skip
    fn = f"cf{key}"
    for k in range(g.rng.randint(2, 4)):
        try:
            step = _call_step(g, fn, x, b, first=k == 0)
        except Skip:
            continue
        if step is not None and g.add(step) and g.rng.random() < 0.35:
            after = _differentiate(g, step.defines, x)
            if after is not None:
                g.add(after)
    raise Skip  # (its steps are in the program already)


@feature(2)
def compiled_again(g):
    """A compiled function made before called again: later steps may have written into its
    inputs or what it captures, or made other inputs."""
    fns = [n for n in g.live() if n.startswith("cf")]
    if not fns:
        raise Skip
    fn = g.rng.choice(fns)
    x = g.pick(lambda t: True)
    return _call_step(g, fn, x, None, first=True)


def _call_step(g, fn, x, b, first):
    """One call of the compiled ``fn``: on ``x`` itself (the first call), or after one of the
    changes its guards must notice."""
    out = g.new()
    call = f"{out} = {fn}({{arg}})"
    t = g.value(x)
    if first:
        return Step(call.format(arg=x), "compile:call", (out,), (fn, x), compiled=True)
    how = _change(g, t, b)
    dtype = str(t.dtype).rsplit(".", 1)[-1]
    pre, arg, uses = [], x, [fn, x]
    if how == "values":
        arg = g.literal(tuple(t.shape), dtype, t.requires_grad)
    elif how == "other":
        r = g.rng.random()
        if r < 0.4:
            arg = g.pick(lambda u: True)
            uses = [fn, arg]
        elif r < 0.7:
            arg = g.literal(g.shape(), dtype, t.requires_grad)
        else:
            other = {"float32": "float64", "float64": "float32"}.get(dtype, "float32")
            arg = g.literal(tuple(t.shape), other, g.rng.random() < 0.5)
    elif how == "requires_grad":
        if not t.is_floating_point():
            return None
        arg = g.literal(tuple(t.shape), dtype, not t.requires_grad)
    elif how in ("write_input", "write_captured"):
        target = x if how == "write_input" else _captured(g, b)
        pre.append(_write_into(g, target))
        uses.append(target)
    elif how == "number":
        if b is None or b.number is None:
            return None
        kind, name = b.number
        pre.append(f"{name} = {g.number()!r}" if kind == "global" else
                   f"{name}[0] = {g.number()!r}")
    elif how == "module":
        if b is None or b.module is None:
            return None
        pre.append(_change_module(g, b.module))
        uses.append(b.module)
    text = call.format(arg=arg)
    if how == "no_grad":
        text = "with torch.no_grad():\n    " + text
    code = "\n".join(pre + [text])
    observe = (out, ALL_LIVE) if pre else (out,)
    return Step(code, f"compile:{how}", (out,), tuple(dict.fromkeys(uses)), observe,
                compiled=True)


def _change(g, t, b):
    """What comes before a later call: one of the changes that apply to this function (what
    it captures, numbers and modules likelier where it has them: their guards are rarer)."""
    options = {"same": 1, "values": 1, "other": 1, "no_grad": 1, "write_input": 1}
    if t.is_floating_point():
        options["requires_grad"] = 1
    if b is not None:
        if b.closure is not None or any(isinstance(g.value(n), g.torch.Tensor) for n in b.uses):
            options["write_captured"] = 1.5
        if b.number is not None:
            options["number"] = 3
        if b.module is not None:
            options["module"] = 3
    return g.rng.choices(list(options), list(options.values()))[0]


def _captured(g, b):
    """A tensor the function reads from the program: its closure cell's, or a global."""
    if b is None:
        raise Skip
    if b.closure is not None:
        return b.closure
    names = [n for n in b.uses if isinstance(g.value(n), g.torch.Tensor)]
    if not names:
        raise Skip
    return g.rng.choice(names)


def _write_into(g, target):
    """An in-place write into ``target`` under ``no_grad`` (allowed on a leaf that requires
    grad): a catalog in-place op."""
    op = g.rng.choices(catalog.INPLACE, [o.weight for o in catalog.INPLACE])[0]
    if not _safe(op.target, g.value(target)):
        raise Skip
    code, _ = op.render(g, first=(target, g.value(target)))
    return "with torch.no_grad():\n" + "\n".join("    " + line for line in code.splitlines())


def _change_module(g, m):
    """Switch the module ``m`` to the other mode, or replace its (first) weight."""
    module = g.ns[m]
    first = module[0] if isinstance(module, g.torch.nn.Sequential) else module
    sub = f"{m}[0]" if first is not module else m
    if getattr(first, "weight", None) is not None and g.rng.random() < 0.4:
        return f"{sub}.weight = torch.nn.Parameter({sub}.weight.detach() * 0.5)"
    return f"{m}.{'eval' if module.training else 'train'}()"


def _differentiate(g, outs, x):
    """A backward pass through a call's result: ``backward`` (with ``retain_graph`` or
    ``create_graph``), ``autograd.grad`` of the input, or a hook on the result first."""
    out = outs[0]
    t = g.value(out)
    if not isinstance(t, g.torch.Tensor) or not t.requires_grad:
        return None
    root = out if t.dim() == 0 else f"{out}.sum()"
    r = g.rng.random()
    if r < 0.5:
        kwargs = [k for k, p in (("retain_graph=True", 0.3), ("create_graph=True", 0.2))
                  if g.rng.random() < p]
        return Step(f"{root}.backward({', '.join(kwargs)})", "compile:backward", (), (out,),
                    (ALL_LIVE,))
    if r < 0.75 and g.value(x) is not None and getattr(g.value(x), "requires_grad", False):
        res = g.new()
        create = ", create_graph=True" if g.rng.random() < 0.4 else ""
        return Step(f"{res}, = torch.autograd.grad({root}, [{x}], allow_unused=True{create})",
                    "compile:autograd.grad", (res,), (out, x), (res, ALL_LIVE), gradients=True)
    h = g.new("h")
    return Step(f"{h} = {out}.register_hook(lambda g: _rec({h!r}, g))\n{root}.backward()",
                "compile:hook", (h,), (out,), (ALL_LIVE,))
