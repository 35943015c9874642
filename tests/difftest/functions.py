"""Steps of functions written in the program: ``torch.func`` transforms (``grad``, ``vjp``,
``vmap``) of a function made of any catalog op, and custom ``autograd.Function``s with several
outputs (``mark_non_differentiable``, ``set_materialize_grads(False)``, a view or the input
itself returned, an input marked dirty beside an output that is not differentiable).

What their backward receives is recorded (``_rec``), so the gradients the engine hands a
custom Function (materialised zeros, None) are compared, not only what comes out.
"""
from __future__ import annotations

from . import catalog
from .args import Skip
from .gen import feature
from .program import Step


# -- torch.func transforms of catalog ops -------------------------------------------------------
def _one_op(g, value):
    """A catalog op applied to ``v`` standing for ``value``: (expression of v, the variables it
    captures)."""
    op = g.rng.choices(catalog.OPS, [o.weight for o in catalog.OPS])[0]
    expr, uses = op.render(g, first=("v", value))
    if op.outputs > 1:
        expr = f"({expr})[0]"
    return op.name, expr, tuple(u for u in uses if u != "v")


@feature(3)
def func_of_ops(g):
    """``torch.func.grad`` (of the op's sum), ``vjp`` (with a cotangent of ones) or ``vmap``
    (over the first dim) of a function applying one catalog op, run under no_grad as the
    other transforms (docs/difftest.md)."""
    x = g.pick(lambda t: t.is_floating_point())
    t = g.value(x)
    how = g.rng.choice(["grad", "vjp", "vmap", "vmap"])
    if how == "vmap":
        if t.dim() == 0 or t.shape[0] == 0:
            raise Skip
        name, expr, uses = _one_op(g, t[0])
    else:
        name, expr, uses = _one_op(g, t)
    out = g.new()
    if how == "grad":
        code = f"{out} = torch.func.grad(lambda v: ({expr}).sum())({x})"
        defines = (out,)
    elif how == "vjp":
        grad = g.new()
        code = (f"{out}, _vjp = torch.func.vjp(lambda v: {expr}, {x})\n"
                f"{grad}, = _vjp(torch.ones_like({out}))")
        defines = (out, grad)
    else:
        code = f"{out} = torch.func.vmap(lambda v: {expr})({x})"
        defines = (out,)
    code = "with torch.no_grad():\n" + "\n".join("    " + line for line in code.splitlines())
    return Step(code, f"func_op:{how}:{name}", defines, tuple(dict.fromkeys((x,) + uses)),
                gradients=how != "vmap")


# -- custom Functions with several outputs ------------------------------------------------------
# (forward's body returning ``result``, backward's parameters after ctx, its body, whether the
# input is written)
_FUNCTIONS = {
    "non_differentiable": (
        "y = x * 2\n        z = x.floor()\n        ctx.mark_non_differentiable(z)\n"
        "        result = y, z",
        "gy, gz", "_rec({key!r}, gy, gz)\n        return gy * 2", False),
    "no_materialize": (
        "ctx.set_materialize_grads(False)\n        ctx.save_for_backward(x)\n"
        "        result = x.sin(), x.cos()",
        "g1, g2", "_rec({key!r}, g1, g2)\n        x, = ctx.saved_tensors\n"
        "        out = None if g1 is None else g1 * x.cos()\n"
        "        if g2 is not None:\n            out = -g2 * x.sin() + (0 if out is None else out)"
        "\n        return out", False),
    "saves_input_and_result": (
        "result = x.tanh()\n        ctx.save_for_backward(x, result)",
        "g", "x, y = ctx.saved_tensors\n        _rec({key!r}, g)\n"
        "        return g * (1 - y * y) + 0 * x", False),
    "returns_view": (
        "result = x.view_as(x)", "g", "_rec({key!r}, g)\n        return g * 3", False),
    "returns_input": (
        "result = x", "g", "_rec({key!r}, g)\n        return g + 1", False),
    "dirty_and_mask": (
        "x.add_(1)\n        ctx.mark_dirty(x)\n        m = x > 0\n"
        "        ctx.mark_non_differentiable(m)\n        result = x, m",
        "g, gm", "_rec({key!r}, g, gm)\n        return g", True),
    "integer_output": (
        "result = x * 1, (x.reshape(-1).argmax() if x.numel() else torch.tensor(0))",
        "g, gi", "_rec({key!r}, g, gi)\n        return g", False),
}


@feature(2)
def custom_function_outputs(g):
    """A custom Function (its class written in the step) with outputs that are not
    differentiable, gradients not materialised, a view or the input returned, a dirty input
    beside a mask; a backward through its first output now and then."""
    from .program import ALL_LIVE
    kind = g.rng.choice(list(_FUNCTIONS))
    fwd, params, bwd, dirty = _FUNCTIONS[kind]
    x = g.pick(lambda t: t.is_floating_point())
    cls, key = g.new("Fn"), g.new("h")
    several = "," in params
    outs = (g.new(), g.new()) if several else (g.new(),)
    lines = [f"class {cls}(torch.autograd.Function):",
             "    @staticmethod", "    def forward(ctx, x):", f"        {fwd}",
             "        return result", "",
             "    @staticmethod", f"    def backward(ctx, {params}):",
             f"        {bwd.format(key=key)}",
             f"{', '.join(outs)} = {cls}.apply({x})"]
    backward = g.value(x).requires_grad and g.rng.random() < 0.5
    if backward:
        lines.append(f"{outs[0]}.sum().backward(retain_graph=True)")
    observe = outs + ((x,) if dirty else ()) + ((ALL_LIVE,) if backward or dirty else ())
    return Step("\n".join(lines), f"function:{kind}{'.backward' if backward else ''}", outs,
                (x,), observe)
