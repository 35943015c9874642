"""The seeded program generator.

Programs grow one step at a time. Each candidate step is executed with torch right away, so
the generator always knows the real shapes, dtypes and flags of the live variables and can
pick arguments that fit (a view shape with the same number of elements, an index within
range). A step that raises is kept only now and then (an error case to compare); otherwise
it is dropped and torch's state is rebuilt without it.

What a step can be is the list of *features* below (``@feature(weight)``): each is a function
``make(g) -> Step`` that writes one step from the generator's state, or raises ``Skip``.
Ops come from the catalog (``catalog.py``), where adding an op is one line.
"""
from __future__ import annotations

import random

from . import catalog
from .args import Skip, is_float
from .program import ALL_LIVE, Program, Step
from .runner import namespace, run_step

FEATURES: list = []  # (make, weight)
STEPS = (6, 16)  # how many steps a program has (after its inputs)
KEEP_ERROR = 0.25  # the chance that a step torch refuses stays in the program
MAX_ERRORS = 2


def feature(weight):
    def register(make):
        FEATURES.append((make, weight))
        return make
    return register


class Gen:
    """The state of one program being generated: its steps, and torch's values of them."""

    def __init__(self, seed, torch):
        self.seed = seed
        self.rng = random.Random(seed)
        self.torch = torch
        self.steps: list[Step] = []
        self.errors = 0
        self._count = 0
        self._reset()

    # -- torch's state ---------------------------------------------------------------------
    def _reset(self):
        self.ns = namespace(self.torch, [])
        self.ns["_rec"] = lambda *a: None
        self.dead: set = set()

    def _run(self, step):
        error, _ = run_step(step.code, self.ns, self.torch)
        if error is not None:
            self.dead.update(step.defines)
        return error

    def add(self, step: Step) -> bool:
        """Run ``step`` with torch and keep it (if it raises: sometimes). Whether it was kept."""
        if self.dead.intersection(step.uses):
            return False
        error = self._run(step)
        if error is not None:
            if self.errors < MAX_ERRORS and self.rng.random() < KEEP_ERROR:
                self.errors += 1
            else:  # drop it, and rebuild torch's state without it
                self._reset()
                for s in self.steps:
                    self._run(s)
                return False
        self.steps.append(step)
        return True

    # -- names and values ------------------------------------------------------------------
    def new(self, prefix="t"):
        self._count += 1
        return f"{prefix}{self._count}"

    def value(self, name):
        return self.ns.get(name)

    def live(self):
        """Names bound by the kept steps, in order, whose step ran."""
        seen = []
        for s in self.steps:
            for n in s.defines:
                if n not in self.dead and n in self.ns and n not in seen:
                    seen.append(n)
        return seen

    def tensors(self, pred=None):
        T = self.torch.Tensor
        return [n for n in self.live()
                if isinstance(self.ns[n], T) and (pred is None or _safe(pred, self.ns[n]))]

    def pick(self, pred=None, strict=True):
        """A live tensor variable satisfying ``pred`` (recent ones are likelier)."""
        names = self.tensors(pred)
        if not names:
            if strict:
                raise Skip
            return None
        weights = [1.0 + k for k in range(len(names))]
        return self.rng.choices(names, weights)[0]

    @staticmethod
    def broadcasts(a, b):
        for x, y in zip(reversed(tuple(a)), reversed(tuple(b))):
            if x != y and x != 1 and y != 1:
                return False
        return True

    # -- literals --------------------------------------------------------------------------
    def number(self, lo=-2.0, hi=2.0):
        r = self.rng.random()
        if r < 0.15:
            return float(self.rng.choice([0.0, 1.0, -1.0, 0.5, 2.0]))
        return round(self.rng.uniform(lo, hi), 2)

    def shape(self, max_dims=3):
        r = self.rng.random()
        if r < 0.1:
            return ()
        if r < 0.13:
            return self.rng.choice([(0,), (2, 0), (0, 3)])
        n = self.rng.randint(1, max_dims)
        return tuple(self.rng.randint(1, 4) for _ in range(n))

    def literal(self, shape, dtype="float32", requires_grad=False):
        """``torch.tensor(...)`` source for random values of ``shape`` and ``dtype``."""
        size = 1
        for s in shape:
            size *= s
        if dtype == "bool":
            flat = [self.rng.random() < 0.5 for _ in range(size)]
        elif dtype.startswith(("int", "uint")):
            flat = [self.rng.randint(0 if dtype.startswith("u") else -3, 4) for _ in range(size)]
        else:
            flat = [self.number() for _ in range(size)]
        if 0 in shape:
            src = f"torch.zeros({', '.join(map(str, shape))}"
        else:
            src = f"torch.tensor({_nest(flat, shape)!r}"
        if dtype not in ("bool", "int64", "float32") or (0 in shape and dtype != "float32"):
            src += f", dtype=torch.{dtype}"
        if 0 not in shape and dtype == "float32" and not _has_float(flat):
            src += ", dtype=torch.float32"
        if requires_grad:
            src += ", requires_grad=True"
        return src + ")"

    def int_literal(self, shape, lo, hi, wrong=0.0):
        size = 1
        for s in shape:
            size *= s
        flat = [self.rng.randint(lo, hi) for _ in range(size)]
        if flat and self.rng.random() < wrong:
            flat[self.rng.randrange(len(flat))] = hi + 1
        if 0 in shape:
            return f"torch.zeros({', '.join(map(str, shape))}, dtype=torch.int64)"
        return f"torch.tensor({_nest(flat, shape)!r})"

    def bool_literal(self, shape):
        return self.literal(shape, "bool")


def _safe(pred, value):
    try:
        return bool(pred(value))
    except Exception:  # noqa: BLE001 - a predicate that does not apply says no
        return False


def _has_float(flat):
    return any(isinstance(v, float) for v in flat)


def _nest(flat, shape):
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])]


# -- features --------------------------------------------------------------------------------
# the dtypes of inputs, and how often (the other dtypes come from casts and integer ops):
# mixed with each other by binary ops, they exercise type promotion
_INPUT_DTYPES = {"float32": 0.52, "float64": 0.25, "int64": 0.1, "bool": 0.04, "int32": 0.03,
                 "float16": 0.03, "bfloat16": 0.03}


@feature(3)
def new_input(g):
    name = g.new()
    dtype = g.rng.choices(list(_INPUT_DTYPES), list(_INPUT_DTYPES.values()))[0]
    requires_grad = dtype.startswith(("float", "bfloat")) and g.rng.random() < 0.75
    code = f"{name} = {g.literal(g.shape(), dtype, requires_grad)}"
    return Step(code, "input", (name,))


@feature(34)
def call_op(g):
    return _op_step(g, g.rng.choices(catalog.OPS, [o.weight for o in catalog.OPS])[0])


def _op_step(g, op, indent=""):
    expr, uses = op.render(g)
    names = tuple(g.new() for _ in range(op.outputs))
    return Step(f"{indent}{', '.join(names)} = {expr}", f"op:{op.name}", names, uses)


def _memory(t):
    """The bytes ``t`` spans in its storage: (storage, first, last), or None when empty."""
    if t.numel() == 0:
        return None
    span = sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()))
    try:
        first, storage = t.data_ptr(), t.untyped_storage().data_ptr()
    except RuntimeError:  # (a tensor without storage: sgn's ZeroTensor gradient, 54000323)
        return None
    return storage, first, first + (span + 1) * t.element_size()


def _reads_what_it_writes(g, written, uses):
    """Whether an operand among ``uses`` shares memory with ``written`` (the tensor an in-place
    op writes) without being the same elements: such an op reads values it has already
    written, in an order of torch's kernel (its vector width), where torch does not refuse it
    (53000298: ``t3.mul_(t3.narrow(1, 0, 1))``; 56000276: ``t1[...].copy_(t1[:, 0])``)."""
    span = _memory(written)
    for name in uses:
        u = g.value(name)
        if not isinstance(u, g.torch.Tensor) or span is None:
            continue
        other = _memory(u)
        if other is None:
            continue
        same = (other[1] == span[1] and u.shape == written.shape
                and u.stride() == written.stride())
        if other[0] == span[0] and other[1] < span[2] and span[1] < other[2] and not same:
            return True
    return False


def _a_gradients_layout(g, name):
    """Whether ``name`` is a gradient (autograd.grad's, torch.func's) that torch holds as
    zeros expanded (stride 0): an in-place op refuses to write it ("more than one element of
    the written-to tensor refers to a single memory location"), ember's gradient is a tensor of
    its own (a gradient's layout follows torch's buffers, not autograd's rules; 55000220)."""
    grads = {n for s in g.steps if s.gradients for n in s.defines}
    t = g.value(name)
    return name in grads and any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride()))


@feature(10)
def inplace(g):
    op = g.rng.choices(catalog.INPLACE, [o.weight for o in catalog.INPLACE])[0]
    target = g.pick(op.target)
    if _a_gradients_layout(g, target):
        raise Skip
    first, tag = (target, g.value(target)), op.name
    if g.rng.random() < 0.35:  # through a view made on the spot
        first, names = _view_chain(g, first, 1)
        tag = f"{op.name}@{names[0]}"
    code, uses = op.render(g, first=first)
    if _reads_what_it_writes(g, first[1], uses):
        raise Skip
    uses = tuple(dict.fromkeys((target,) + uses))
    return Step(code, f"inplace:{tag}", (), uses, uses + (ALL_LIVE,) if "@" in tag else uses)


def _view_chain(g, first, depth):
    """``first`` (text, value) viewed ``depth`` times in a row: the chain's (text, value), and
    the views' names."""
    views = [v for v in catalog.OPS if v.view]
    names = []
    for _ in range(depth):
        view = g.rng.choice(views)
        if not view.base(first[1]):
            raise Skip
        vexpr, _ = view.render(g, first=first)
        try:
            first = (f"({vexpr})", eval(vexpr, g.ns))  # noqa: S307 - generated source
        except Exception:  # noqa: BLE001 - a view torch refuses: try something else
            raise Skip from None
        names.append(view.name)
    return first, names


@feature(4)
def setitem(g):
    target = g.pick(lambda t: t.dim() >= 1)
    t = g.value(target)
    if _a_gradients_layout(g, target):
        raise Skip
    key = catalog.index_key(g, t)
    value = g.number() if g.rng.random() < 0.4 else None
    uses = (target,)
    if value is None:
        src = g.pick(lambda u: u.dim() <= 1 and (u.is_floating_point() or not
                                                   t.is_floating_point()), strict=False)
        if src is None:
            value = g.number()
        elif _reads_what_it_writes(g, t, (src,)):
            raise Skip
        else:
            uses = (target, src)
            value_text = src
    code = f"{target}[{key}] = {value_text if value is None else repr(value)}"
    return Step(code, "setitem", (), uses, (target, ALL_LIVE))


def _root(g):
    """A scalar to differentiate, written on the spot from a variable that requires grad."""
    name = g.pick(lambda t: t.requires_grad)
    t = g.value(name)
    if t.dim() == 0 and g.rng.random() < 0.6:
        return name, name
    how = g.rng.choice(["sum()", "mean()", "pow(2).sum()", "sum()", "exp().sum()"])
    return name, f"{name}.{how}"


@feature(7)
def backward(g):
    r = g.rng.random()
    if r < 0.75:
        name, root = _root(g)
        call = f"{root}.backward("
    else:  # a non-scalar root with a gradient (rarely without: an error)
        name = g.pick(lambda t: t.requires_grad)
        grad = (g.literal(tuple(g.value(name).shape), str(g.value(name).dtype)[6:])
                if g.rng.random() < 0.9 else "")
        call = f"{name}.backward({grad}{', ' if grad else ''}"
    kwargs = []
    if g.rng.random() < 0.3:
        kwargs.append("retain_graph=True")
    if g.rng.random() < 0.15:
        kwargs.append("create_graph=True")
    uses = [name]
    if g.rng.random() < 0.1:
        leaf = g.pick(lambda t: t.requires_grad and t.is_leaf, strict=False)
        if leaf is not None:
            kwargs.append(f"inputs=[{leaf}]")
            uses.append(leaf)
    code = call + ", ".join(kwargs) + ")"
    return Step(code, "backward", (), tuple(uses), (ALL_LIVE,))


def _some_of(g, *options):
    """Each ``(text, chance)``'s text, with its chance (keyword arguments of a call)."""
    return [text for text, chance in options if g.rng.random() < chance]


@feature(5)
def autograd_grad(g):
    name, root = _root(g)
    inputs = g.tensors(lambda t: t.requires_grad)
    k = g.rng.randint(1, min(2, len(inputs)))
    chosen = g.rng.sample(inputs, k)
    kwargs = _some_of(g, ("create_graph=True", 0.35), ("retain_graph=True", 0.25),
                      ("allow_unused=True", 0.4))
    outs = tuple(g.new() for _ in chosen)
    code = (f"{', '.join(outs)}, = torch.autograd.grad({root}, [{', '.join(chosen)}]"
            + "".join(", " + k for k in kwargs) + ")")
    return Step(code, "autograd.grad", outs, tuple(dict.fromkeys([name] + chosen)),
                outs + (ALL_LIVE,), gradients=True)



def _grad_output(g, name):
    """A gradient for the output ``name`` (of its shape and dtype), rarely None or of a
    wrong shape (an error case)."""
    t = g.value(name)
    r = g.rng.random()
    if r < 0.1:
        return "None"
    shape = tuple(t.shape) if r > 0.14 else tuple(t.shape) + (2,)
    return g.literal(shape, str(t.dtype)[6:] if t.is_floating_point() else "float32")


@feature(4)
def autograd_grad_outputs(g):
    """``torch.autograd.grad`` of one or two non-scalar outputs with ``grad_outputs``, with
    ``materialize_grads`` (unused inputs' gradients are zeros), ``allow_unused``,
    ``is_grads_batched`` (a batch of gradients for each output), or ``torch.autograd.backward``
    of several tensors with their gradients and ``inputs``."""
    outputs = g.tensors(lambda t: t.requires_grad)
    if not outputs:
        raise Skip
    chosen_out = g.rng.sample(outputs, g.rng.randint(1, min(2, len(outputs))))
    inputs = g.tensors(lambda t: t.requires_grad)
    chosen_in = g.rng.sample(inputs, g.rng.randint(1, min(3, len(inputs))))
    grads = [_grad_output(g, n) for n in chosen_out]
    uses = tuple(dict.fromkeys(chosen_out + chosen_in))
    outs_text, grads_text = ", ".join(chosen_out), ", ".join(grads)
    if g.rng.random() < 0.25:
        kwargs = []
        if g.rng.random() < 0.5:
            kwargs.append(f"inputs=[{', '.join(chosen_in)}]")
        if g.rng.random() < 0.3:
            kwargs.append("retain_graph=True")
        code = (f"torch.autograd.backward([{outs_text}], [{grads_text}]"
                + "".join(", " + k for k in kwargs) + ")")
        return Step(code, "autograd.backward", (), uses, (ALL_LIVE,))
    kwargs = []
    r = g.rng.random()
    if r < 0.4:
        kwargs.append("materialize_grads=True")
        if g.rng.random() < 0.15:
            kwargs.append(g.rng.choice(["allow_unused=False", "allow_unused=True"]))
    elif r < 0.6:
        kwargs.append("allow_unused=True")
    elif r < 0.72 and not any(n.startswith("h") for n in g.live()) and not g.tensors(
            lambda t: t.retains_grad):
        # a batch of two gradients for every output (no hooks, no retained gradients: under
        # vmap they would receive torch's BatchedTensors, which the record cannot read)
        batch = [f"torch.stack([{gr}, -{gr}])" if gr != "None" else gr for gr in grads]
        grads_text = ", ".join(batch)
        kwargs.append("is_grads_batched=True")
    kwargs += _some_of(g, ("create_graph=True", 0.3), ("retain_graph=True", 0.3))
    results = tuple(g.new() for _ in chosen_in)
    code = (f"{', '.join(results)}, = torch.autograd.grad([{outs_text}], "
            f"[{', '.join(chosen_in)}], grad_outputs=[{grads_text}]"
            + "".join(", " + k for k in kwargs) + ")")
    return Step(code, "autograd.grad_outputs", results, uses, results + (ALL_LIVE,),
                gradients=True)


@feature(2)
def hooks_that_change(g):
    """Node hooks that return other gradients (a pre-hook scaling what the node receives, a
    hook replacing what it passes on), and a multi-grad hook over two tensors (``all``: once
    with every gradient, ``any``: at the first one)."""
    key = g.new("h")
    r = g.rng.random()
    if r < 0.35:
        name = g.pick(lambda t: t.grad_fn is not None)
        code = (f"{key} = {name}.grad_fn.register_prehook(lambda go: _rec({key!r}, go) or "
                f"tuple(None if x is None else x * 2 for x in go))")
        return Step(code, "hook:node_pre_returns", (key,), (name,), ())
    if r < 0.65:
        name = g.pick(lambda t: t.grad_fn is not None)
        code = (f"{key} = {name}.grad_fn.register_hook(lambda gi, go: "
                f"tuple(None if x is None else x.neg() for x in gi))")
        return Step(code, "hook:node_returns", (key,), (name,), ())
    names = g.tensors(lambda t: t.requires_grad)
    if len(names) < 2:
        raise Skip
    pair = g.rng.sample(names, 2)
    mode = g.rng.choice(["all", "any"])
    fn = (f"lambda gs: _rec({key!r}, *gs)" if mode == "all" else f"lambda gr: _rec({key!r}, gr)")
    code = (f"{key} = torch.autograd.graph.register_multi_grad_hook(({', '.join(pair)}), {fn}, "
            f"mode={mode!r})")
    return Step(code, "hook:multi_grad", (key,), tuple(pair), ())

@feature(5)
def hook(g):
    r = g.rng.random()
    key = g.new("h")
    if r < 0.45:
        # NOTE: torch 2.13 can crash (SIGSEGV) registering a hook on a view written into
        # in place whose grad_fn was not read since; such views get no tensor hooks.
        name = g.pick(lambda t: (t.requires_grad or g.rng.random() < 0.05)
                      and not (t._base is not None and t._version > 0))
        body = g.rng.choice([f"_rec({key!r}, g)", "g * 2", f"_rec({key!r}, g) or g + 1",
                             "g.clamp(-0.5, 0.5)", "torch.zeros_like(g)", "-g",
                             f"_rec({key!r}, g) or g.double()", "g.sum()", "g * g"])
        code = f"{key} = {name}.register_hook(lambda g: {body})"
        return Step(code, "hook:tensor", (key,), (name,), ())
    if r < 0.55:
        name = g.pick(lambda t: t.requires_grad and t.is_leaf)
        code = (f"{key} = {name}.register_post_accumulate_grad_hook("
                f"lambda p: _rec({key!r}, p.grad))")
        return Step(code, "hook:post_accumulate", (key,), (name,), ())
    if r < 0.85:
        name = g.pick(lambda t: t.grad_fn is not None)
        if g.rng.random() < 0.5:
            code = (f"{key} = {name}.grad_fn.register_hook("
                    f"lambda gi, go: _rec({key!r}, gi, go))")
        else:
            code = f"{key} = {name}.grad_fn.register_prehook(lambda go: _rec({key!r}, go))"
        return Step(code, "hook:node", (key,), (name,), ())
    handles = [n for n in g.live() if n.startswith("h")]
    if not handles:
        raise Skip
    h = g.rng.choice(handles)
    return Step(f"{h}.remove()", "hook:remove", (), (h,), ())


@feature(2)
def retain_grad(g):
    name = g.pick(lambda t: t.requires_grad or g.rng.random() < 0.1)
    return Step(f"{name}.retain_grad()", "retain_grad", (), (name,), (name,))


_MODES = {"no_grad": "torch.no_grad()", "enable_grad": "torch.enable_grad()",
          "inference_mode": "torch.inference_mode()",
          "set_grad_enabled": "torch.set_grad_enabled(False)"}
# a mode nested in another: set_grad_enabled and inference_mode(False) inside inference
# mode, no_grad and the other way round
_NESTED = {"inference_mode>set_grad_enabled": ("torch.inference_mode()",
                                               "torch.set_grad_enabled(True)"),
           "inference_mode>inference_mode(False)": ("torch.inference_mode()",
                                                    "torch.inference_mode(False)"),
           "no_grad>set_grad_enabled": ("torch.no_grad()", "torch.set_grad_enabled(True)"),
           "set_grad_enabled>inference_mode": ("torch.set_grad_enabled(False)",
                                               "torch.inference_mode()"),
           "no_grad>inference_mode(False)": ("torch.no_grad()", "torch.inference_mode(False)"),
           "set_grad_enabled>enable_grad": ("torch.set_grad_enabled(False)",
                                            "torch.enable_grad()")}


@feature(6)
def grad_mode(g):
    mode = g.rng.choice(list(_MODES))
    inner = g.rng.random()
    if inner < 0.6:
        body = _op_step(g, g.rng.choices(catalog.OPS, [o.weight for o in catalog.OPS])[0],
                        "    ")
    else:
        body = inplace(g)
        body = Step("    " + body.code, body.tag, body.defines, body.uses, body.observe)
    head = _MODES[mode]
    if g.rng.random() < 0.3:
        mode = g.rng.choice(list(_NESTED))
        outer, head = _NESTED[mode]
        code = f"with {outer}:\n    with {head}:\n    {body.code}"
    elif mode == "enable_grad" and g.rng.random() < 0.7:  # enable_grad inside no_grad
        code = f"with torch.no_grad():\n    with {head}:\n    {body.code}"
    else:
        code = f"with {head}:\n{body.code}"
    return Step(code, f"mode:{mode}|{body.tag}", body.defines, body.uses, body.observe)


@feature(4)
def detach_and_flags(g):
    r = g.rng.random()
    name = g.pick(lambda t: True)
    out = g.new()
    if r < 0.25:
        return Step(f"{out} = {name}.detach()", "detach", (out,), (name,))
    if r < 0.4:
        return Step(f"{name}.detach_()", "detach_", (), (name,), (name, ALL_LIVE))
    if r < 0.55:
        return Step(f"{out} = {name}.data", "data", (out,), (name,))
    if r < 0.75:
        flag = g.rng.random() < 0.8
        return Step(f"{name}.requires_grad_({flag})", "requires_grad_", (), (name,), (name,))
    if r < 0.9:
        return Step(f"{out} = {name}.clone()", "clone", (out,), (name,))
    return Step(f"{out} = {name}.grad", "read_grad", (out,), (name,), gradients=True)


@feature(2)
def grad_fields(g):
    name = g.pick(lambda t: t.is_leaf and t.requires_grad)
    how = g.rng.choice([f"{name}.grad = None", f"{name}.grad.zero_()",
                        f"{name}.grad = torch.zeros_like({name})"])
    return Step(how, "grad_field", (), (name,), (name,))


@feature(2)
def query(g):
    name = g.pick(lambda t: True)
    out = g.new()
    what = g.rng.choice(["{n}.is_contiguous()", "{n}.stride()", "{n}.storage_offset()",
                         "{n}.item()", "{n}.tolist()", "{n}.dim()", "{n}.numel()",
                         "{n}.output_nr", "{n}.is_leaf", "{n}.grad_fn", "repr({n})",
                         "({n}._base is None)"])
    return Step(f"{out} = {what.format(n=name)}", "query", (out,), (name,))


# -- torch.func transforms ------------------------------------------------------------------
_FUNC_UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "atan", "abs", "relu", "square", "erf",
               "expm1", "sinh", "log1p"]
_SCALAR_BODIES = ["torch.{u}(v).sum()", "(torch.{u}(v) * {c}).sum()",
                  "torch.{u}(v).pow(2).mean()", "(v * torch.{u}(v)).sum()",
                  "(torch.{u}(v) * {y}).sum()"]
_ROW_BODIES = ["torch.{u}(v) * {c}", "torch.{u}(v).sum()", "v.{u}() + {y}", "(v * {y}).sum()"]


def _func_body(g, templates, x, t):
    """A small function of ``v`` (source, the variables it captures)."""
    template = g.rng.choice(templates)
    uses = ()
    y = "v"
    if "{y}" in template:
        y = g.pick(lambda u: u.is_floating_point() and g.broadcasts(u.shape, t.shape[1:])
                   and u.dim() <= max(t.dim() - 1, 0), strict=False)
        if y is None:
            raise Skip
        uses = (y,)
    text = template.format(u=g.rng.choice(_FUNC_UNARY), c=g.number(), y=y)
    return f"lambda v: {text}", uses


@feature(2)
def func_transform(g):
    """A torch.func transform of a small function, run under no_grad: grad, grad_and_value,
    vmap (of grad too), jvp, vjp, jacrev and jacfwd."""
    x = g.pick(lambda t: t.is_floating_point())
    t = g.value(x)
    out = g.new()
    r = g.rng.random()
    if r < 0.45:
        fn, uses = _func_body(g, _SCALAR_BODIES, x, t)
        how = g.rng.choice(["grad", "grad", "grad_and_value", "vmap_grad"])
        if how == "grad":
            code, defines = f"{out} = torch.func.grad({fn})({x})", (out,)
        elif how == "grad_and_value":
            value = g.new()
            code = f"{out}, {value} = torch.func.grad_and_value({fn})({x})"
            defines = (out, value)
        else:
            code, defines = f"{out} = torch.func.vmap(torch.func.grad({fn}))({x})", (out,)
    elif r < 0.7:
        fn, uses = _func_body(g, _ROW_BODIES, x, t)
        dims = g.rng.choice(["", "", ", in_dims=-1", ", out_dims=-1"])
        code, defines = f"{out} = torch.func.vmap({fn}{dims})({x})", (out,)
    else:
        fn, uses = _func_body(g, _ROW_BODIES[:2], x, t)
        how = g.rng.choice(["jvp", "vjp", "jacrev", "jacfwd"])
        dtype = str(t.dtype).rsplit(".", 1)[-1]
        if how in ("jacrev", "jacfwd"):
            # (jacfwd of a 0-dim input: torch's batched tangents of a Python number's zeros
            # make the Jacobian float64, see docs/difftest.md)
            if t.numel() > 8 or (how == "jacfwd" and t.dim() == 0):
                raise Skip
            code, defines = f"{out} = torch.func.{how}({fn})({x})", (out,)
        elif how == "jvp":
            tangent = g.new()
            code = (f"{out}, {tangent} = torch.func.jvp({fn}, ({x},), "
                    f"({g.literal(tuple(t.shape), dtype)},))")
            defines = (out, tangent)
        else:
            grad = g.new()
            code = (f"{out}, _vjp = torch.func.vjp({fn}, {x})\n"
                    f"{grad}, = _vjp(torch.ones_like({out}))")
            defines = (out, grad)
    # (under no_grad: the graph outer autograd records through a transform of a tensor that
    # requires grad is not torch's yet, see docs/difftest.md; a transform ignores no_grad)
    tag = f"func:{code.split('(')[0].split('= ')[-1]}"
    code = "with torch.no_grad():\n" + "\n".join("    " + line for line in code.splitlines())
    return Step(code, tag, defines, tuple(dict.fromkeys((x,) + uses)))


# -- custom autograd Functions -------------------------------------------------------------
# (forward's body, backward's body, how many tensor inputs, whether it writes its input)
_FUNCTIONS = {
    "saves_result": ("result = x.exp()\n        ctx.save_for_backward(result)",
                     "result, = ctx.saved_tensors\n        return g * result", 1, False),
    "saves_input": ("ctx.save_for_backward(x)\n        result = x.sin()",
                    "x, = ctx.saved_tensors\n        return g * x.cos()", 1, False),
    "cube": ("ctx.save_for_backward(x)\n        result = x ** 3",
             "x, = ctx.saved_tensors\n        return 3 * g * x ** 2", 1, False),
    "wrong_grad": ("result = x * 2", "return g.sum()", 1, False),
    "mark_dirty": ("x.mul_(2)\n        ctx.mark_dirty(x)\n        result = x",
                   "return g * 2", 1, True),
    "dirty_saved": ("x.tanh_()\n        ctx.mark_dirty(x)\n        ctx.save_for_backward(x)"
                    "\n        result = x",
                    "y, = ctx.saved_tensors\n        return g * (1 - y * y)", 1, True),
    "two_inputs": ("ctx.save_for_backward(x, w)\n        result = x * w",
                   "x, w = ctx.saved_tensors\n        return (g * w if ctx.needs_input_grad[0]"
                   " else None,\n                g * x if ctx.needs_input_grad[1] else None)",
                   2, False),
}


@feature(2)
def custom_function(g):
    """A custom autograd Function (its class written in the step), applied to a variable:
    save_for_backward of an input or the result, mark_dirty, needs_input_grad."""
    kind = g.rng.choice(list(_FUNCTIONS))
    fwd, bwd, n, dirty = _FUNCTIONS[kind]
    x = g.pick(lambda t: t.is_floating_point())
    t = g.value(x)
    uses = (x,)
    params = "ctx, x"
    args = x
    if n == 2:
        w = g.pick(lambda u: u.is_floating_point() and g.broadcasts(u.shape, t.shape),
                   strict=False)
        if w is None:
            raise Skip
        uses, params, args = (x, w), "ctx, x, w", f"{x}, {w}"
    cls, out = g.new("Fn"), g.new()
    code = (f"class {cls}(torch.autograd.Function):\n"
            f"    @staticmethod\n    def forward({params}):\n        {fwd}\n"
            f"        return result\n\n"
            f"    @staticmethod\n    def backward(ctx, g):\n        {bwd}\n"
            f"{out} = {cls}.apply({args})")
    observe = (out,) + ((x, ALL_LIVE) if dirty else ())
    return Step(code, f"function:{kind}", (out,), uses, observe)


# ops whose JVP a forward_ad step takes: pointwise ops, reductions, views and shape ops,
# nn.functional. Left out until their tangents are torch's (docs/difftest.md): the matrix
# products, F.linear, std, norm and F.layer_norm (torch's formulas write their tangent in
# place: its _version), pow, **, atan2 and the scans (where the primal holds NaN, inf or
# zeros torch's tangent has other values), and x[key] (torch's tangent of x[...] is no view).
_FORWARD_AD_OPS = frozenset(
    ["exp", "log", "sin", "tanh", "sigmoid", "sqrt", "abs", "reciprocal", "expm1", "atan",
     "erf", "square", "relu", "add", "sub", "mul", "div", "maximum", "hypot",
     "operator+", "operator*", "operator/", "reflected", "unary-", "add_alpha", "clamp",
     "where", "lerp", "addcmul", "pow_scalar", "sum", "mean", "prod", "amax", "logsumexp",
     "view", "transpose", "t", "permute", "unsqueeze", "squeeze", "expand", "flatten",
     "narrow", "select", "slice", "unbind", "split", "diagonal", "movedim", "contiguous",
     "flip", "cat", "cat_self", "index_select", "gather", "F.softmax", "F.normalize",
     "F.pad"])


@feature(2)
def forward_ad(g):
    """A JVP: an op of a dual tensor (a variable and a tangent) inside a dual level, whose
    primal and tangent results are kept. (The op runs under no_grad: the graph a tangent
    records when an operand requires grad is not torch's yet, see docs/difftest.md.)"""
    torch = g.torch
    # (a view, or an expanded tensor, as the primal: torch keeps a view's tangent in its
    # base's, written in with copy_, whose versions, views and refusals ember's do not follow)
    x = g.pick(lambda t: t.dtype in (torch.float32, torch.float64) and t._base is None
               and (t.numel() <= 1 or 0 not in t.stride()))
    t = g.value(x)
    op = g.rng.choice([o for o in catalog.OPS if o.name in _FORWARD_AD_OPS])
    expr, uses = op.render(g, first=("_dual", t))
    if op.outputs != 1:
        raise Skip
    primal, tangent = g.new(), g.new()
    fwad = "torch.autograd.forward_ad"
    dtype = str(t.dtype).rsplit(".", 1)[-1]
    code = (f"with {fwad}.dual_level():\n"
            f"    _dual = {fwad}.make_dual({x}, {g.literal(tuple(t.shape), dtype)})\n"
            f"    with torch.no_grad():\n"
            f"        {primal}, {tangent} = {fwad}.unpack_dual({expr})")
    return Step(code, f"forward_ad:{op.name}", (primal, tangent),
                tuple(dict.fromkeys((x,) + uses)))



@feature(3)
def view_chain(g):
    """Two or three views in a row: written through in place, or taken right after an in-place
    op wrote their base."""
    op = g.rng.choices(catalog.INPLACE, [o.weight for o in catalog.INPLACE])[0]
    target = g.pick(op.target)
    if _a_gradients_layout(g, target):
        raise Skip
    depth = g.rng.randint(2, 3)
    if g.rng.random() < 0.5:
        chain, names = _view_chain(g, (target, g.value(target)), depth)
        code, uses = op.render(g, first=chain)
        if _reads_what_it_writes(g, chain[1], uses):
            raise Skip
        uses = tuple(dict.fromkeys((target,) + uses))
        return Step(code, f"view_chain:{op.name}@{'.'.join(names)}", (), uses,
                    uses + (ALL_LIVE,))
    if op.name == "shape_inplace":  # (the chain is made from the value before the write)
        raise Skip
    code, uses = op.render(g, first=(target, g.value(target)))
    if _reads_what_it_writes(g, g.value(target), uses):
        raise Skip
    (chain, _), names = _view_chain(g, (target, g.value(target)), depth)
    out = g.new()
    uses = tuple(dict.fromkeys((target,) + uses))
    return Step(f"{code}\n{out} = {chain}", f"view_chain:{'.'.join(names)}@{op.name}", (out,),
                uses, (out,) + uses + (ALL_LIVE,))

# -- torch.func transforms of transforms -----------------------------------------------------
@feature(2)
def func_composition(g):
    """One torch.func transform of another (under no_grad, as ``func_transform``): second
    derivatives (``grad`` of ``grad``, ``hessian``, ``jacrev`` of ``jacfwd``, ``jacfwd`` of
    ``grad``), ``vmap`` of ``jvp`` or of ``vmap``, and ``grad`` over two arguments or with an
    auxiliary output."""
    x = g.pick(lambda t: t.is_floating_point())
    t = g.value(x)
    u, c = g.rng.choice(_FUNC_UNARY), g.number()
    f = f"lambda v: (torch.{u}(v) * {c}).sum()"
    fn = "torch.func"
    how = g.rng.choice(["grad_grad", "hessian", "jacrev_jacfwd", "jacfwd_grad", "vmap_jvp",
                        "vmap_vmap", "grad_argnums", "grad_aux"])
    out, uses = g.new(), (x,)
    defines = (out,)
    if how == "grad_grad":  # elementwise second derivatives: vmap over the flattened input
        g2 = f"{fn}.grad({fn}.grad(lambda v: torch.{u}(v) * {c}))"
        code = (f"{out} = {g2}({x})" if t.dim() == 0 else
                f"{out} = {fn}.vmap({g2})({x}.flatten())")
    elif how in ("hessian", "jacrev_jacfwd", "jacfwd_grad"):
        if t.numel() > 6 or t.dim() == 0 and how != "hessian":
            raise Skip
        call = {"hessian": f"{fn}.hessian({f})",
                "jacrev_jacfwd": f"{fn}.jacrev({fn}.jacfwd(lambda v: torch.{u}(v) * {c}))",
                "jacfwd_grad": f"{fn}.jacfwd({fn}.grad({f}))"}[how]
        code = f"{out} = {call}({x})"
    elif how == "vmap_jvp":
        if t.dim() == 0:
            raise Skip
        code = (f"{out} = {fn}.vmap(lambda v: {fn}.jvp(lambda w: torch.{u}(w) * {c}, (v,), "
                f"(torch.ones_like(v),))[1])({x})")
    elif how == "vmap_vmap":
        if t.dim() < 2:
            raise Skip
        code = f"{out} = {fn}.vmap({fn}.vmap(lambda v: torch.{u}(v).sum() * {c}))({x})"
    elif how == "grad_argnums":
        y = g.pick(lambda w: w.is_floating_point() and w.shape == t.shape and w.dtype == t.dtype)
        second = g.new()
        uses, defines = tuple(dict.fromkeys((x, y))), (out, second)
        code = (f"{out}, {second} = {fn}.grad(lambda v, w: (torch.{u}(v) * w).sum(), "
                f"argnums=(0, 1))({x}, {y})")
    else:
        aux = g.new()
        defines = (out, aux)
        code = (f"{out}, {aux} = {fn}.grad(lambda v: ((torch.{u}(v) * {c}).sum(), "
                f"torch.{u}(v)), has_aux=True)({x})")
    # (what grad, hessian and jacobians return are gradients: whether they are views follows
    # torch's buffers, as an autograd.grad's; vmap of grad of grad of abs gives a ZeroTensor's
    # zeros expanded over the batch, a view)
    gradients = how not in ("vmap_jvp", "vmap_vmap", "grad_aux")
    return Step(f"with torch.no_grad():\n    {code}", f"func:{how}", defines, uses,
                gradients=gradients)


# -- nn modules with buffers -------------------------------------------------------------------
_NORM_MODULES = ["BatchNorm1d({c}{opts})", "InstanceNorm1d({c}, affine=True, "
                 "track_running_stats=True{opts})", "BatchNorm1d({c}, affine=False{opts})"]


def _module_names(g):
    return [n for n in g.live() if isinstance(g.ns[n], g.torch.nn.Module)]


@feature(2)
def norm_module(g):
    """A normalisation module with running statistics (``BatchNorm1d``, ``InstanceNorm1d``
    tracking them), made for a variable's channels and called on it in training or eval mode;
    its parameters and buffers become variables, so later steps read and differentiate them."""
    x = g.pick(lambda t: t.dtype in (g.torch.float32, g.torch.float64) and t.dim() in (2, 3))
    t = g.value(x)
    m = g.new("m")
    momentum = g.rng.choice(["", "", ", momentum=0.5", ", momentum=None"])
    dtype = ", dtype=torch.float64" if t.dtype == g.torch.float64 else ""
    kind = g.rng.choice(_NORM_MODULES)
    # (InstanceNorm1d reads a 2-d input as one unbatched (C, L) sample)
    channels = t.shape[0] if "Instance" in kind and t.dim() == 2 else t.shape[1]
    lines = [f"{m} = torch.nn.{kind.format(c=channels, opts=momentum + dtype)}"]
    if g.rng.random() < 0.3:
        lines.append(f"{m}.eval()")
    out = g.new()
    lines.append(f"{out} = {m}({x})")
    names = [out]
    for field in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
        if "affine=False" in kind and field in ("weight", "bias"):
            continue
        name = g.new()
        lines.append(f"{name} = {m}.{field}")
        names.append(name)
    return Step("\n".join(lines), "module:" + kind.split("(")[0], (m, *names), (x,))


_MLPS = ["torch.nn.Linear({i}, {o})", "torch.nn.Linear({i}, {o}, bias=False)",
         "torch.nn.Sequential(torch.nn.Linear({i}, 3), torch.nn.{act}(), torch.nn.Linear(3, {o}))",
         "torch.nn.Sequential(torch.nn.Linear({i}, 3), torch.nn.LayerNorm(3), torch.nn.{act}(), "
         "torch.nn.Dropout(0.0), torch.nn.Linear(3, {o}))"]
_ACTS = ["ReLU", "Tanh", "GELU", "SiLU", "Sigmoid", "LeakyReLU"]


@feature(2)
def linear_module(g):
    """A seeded model (``torch.manual_seed``, then ``nn.Linear`` or a small ``nn.Sequential``
    MLP: its random initial weights are torch's in ember too) called on a float32 variable;
    its parameters become variables, which backward passes, optimizers and gradient clipping
    then use."""
    x = g.pick(lambda t: t.dtype == g.torch.float32 and t.dim() in (1, 2, 3)
               and 0 < t.shape[-1] <= 4)
    m, out = g.new("m"), g.new()
    kind = g.rng.choice(_MLPS).format(i=g.value(x).shape[-1], o=g.rng.randint(1, 3),
                                      act=g.rng.choice(_ACTS))
    lines = [f"torch.manual_seed({g.rng.randint(0, 99)})", f"{m} = {kind}",
             f"{out} = {m}({x})"]
    names = [out]
    for field in ("weight", "bias") if kind.startswith("torch.nn.Linear") else ():
        if "bias=False" in kind and field == "bias":
            continue
        names.append(g.new())
        lines.append(f"{names[-1]} = {m}.{field}")
    if kind.startswith("torch.nn.Sequential"):
        names.append(g.new())
        lines.append(f"{names[-1]} = {m}[0].weight")
    return Step("\n".join(lines), "module:" + kind.split("(")[0].rsplit(".", 1)[-1],
                (m, *names), (x,))


@feature(1)
def clip_grad(g):
    """Gradient clipping of leaves that have a ``.grad`` (``clip_grad_norm_``, its total norm
    kept, or ``clip_grad_value_``), as a training step does before the optimizer's."""
    leaves = g.tensors(lambda t: t.is_leaf and t.requires_grad and t.grad is not None)
    if not leaves:
        raise Skip
    params = g.rng.sample(leaves, g.rng.randint(1, min(2, len(leaves))))
    out = g.new()
    call = g.rng.choice([f"{out} = torch.nn.utils.clip_grad_norm_([{{p}}], {g.number(0.1, 2)})",
                         f"{out} = torch.nn.utils.clip_grad_norm_([{{p}}], 1.0, norm_type=1)",
                         "torch.nn.utils.clip_grad_value_([{p}], 0.5)"])
    code = call.format(p=", ".join(params))
    defines = (out,) if code.startswith(out) else ()
    return Step(code, "clip_grad:" + code.split("(")[0].rsplit(".", 1)[-1], defines,
                tuple(params), defines + (ALL_LIVE,))


def _inputs_of(g, module):
    """What a module made before takes: its channels (``num_features``) or, for a linear
    model, the size of its inputs' last dimension."""
    first = module[0] if isinstance(module, g.torch.nn.Sequential) else module
    if hasattr(first, "in_features"):
        return lambda t: t.dtype == first.weight.dtype and t.dim() in (1, 2, 3) \
            and t.shape[-1] == first.in_features
    channels = getattr(module, "num_features", None)
    return lambda t: t.is_floating_point() and t.dim() in (2, 3) and channels in t.shape[:2]


@feature(2)
def module_again(g):
    """A module made before called again, after switching it to training or eval mode."""
    m = g.rng.choice(_module_names(g) or [None])
    if m is None:
        raise Skip
    module = g.ns[m]
    x = g.pick(_inputs_of(g, module))
    mode = g.rng.choice(["train()", "eval()", "train(False)"])
    out = g.new()
    return Step(f"{m}.{mode}\n{out} = {m}({x})", f"module_again:{type(module).__name__}",
                (out,), (m, x), (out, ALL_LIVE))


# -- optimizers' steps -------------------------------------------------------------------------
_OPTIMIZERS = ["SGD({p}, lr=0.1)", "SGD({p}, lr=0.1, momentum=0.9, weight_decay=0.01)",
               "SGD({p}, lr=0.05, momentum=0.5, nesterov=True)", "Adam({p}, lr=0.01)",
               "Adam({p}, lr=0.01, amsgrad=True, weight_decay=0.1)", "AdamW({p}, lr=0.01)",
               "RMSprop({p}, lr=0.01, momentum=0.5, centered=True)", "Adagrad({p}, lr=0.1)",
               "Adamax({p})", "NAdam({p})", "RAdam({p})", "Rprop({p})", "Adadelta({p})",
               "SGD({p}, lr=0.1, maximize=True)"]


def _optimizer_names(g):
    return [n for n in g.live() if isinstance(g.ns[n], g.torch.optim.Optimizer)]


@feature(2)
def optimizer_step(g):
    """An optimizer over one or two leaves that require grad, and its first ``step()`` (the
    leaves without a ``.grad`` are skipped, as in torch); or another step or ``zero_grad`` of
    one made before."""
    made = _optimizer_names(g)
    if made and g.rng.random() < 0.5:
        o = g.rng.choice(made)
        call = g.rng.choice(["step()", "step()", "zero_grad()", "zero_grad(set_to_none=False)"])
        return Step(f"{o}.{call}", f"optim:{call.split('(')[0]}", (), (o,), (ALL_LIVE,))
    leaves = g.tensors(lambda t: t.requires_grad and t.is_leaf and t.is_floating_point())
    if not leaves:
        raise Skip
    params = g.rng.sample(leaves, g.rng.randint(1, min(2, len(leaves))))
    kind = g.rng.choice(_OPTIMIZERS)
    o = g.new("o")
    code = f"{o} = torch.optim.{kind.format(p='[' + ', '.join(params) + ']')}\n{o}.step()"
    return Step(code, f"optim:{kind.split('(')[0]}", (o,), tuple(params), (ALL_LIVE,))


# -- autocast regions --------------------------------------------------------------------------
_AUTOCAST_OPS = frozenset(["matmul", "matmul_nd", "mv", "dot", "bmm", "einsum", "addmm",
                           "tensordot", "F.linear", "F.conv1d", "F.conv2d",
                           "F.conv_transpose1d", "F.layer_norm", "F.softmax", "sum", "exp",
                           "operator+", "operator*", "F.loss", "F.cross_entropy"])


@feature(2)
def autocast_region(g):
    """An op inside ``torch.autocast("cpu")`` (bfloat16 or float16): the ops autocast lowers
    (matrix products, linear, convolutions) and some it leaves alone or keeps in float32;
    sometimes inside a nested region that turns autocast off again."""
    op = g.rng.choice([o for o in catalog.OPS if o.name in _AUTOCAST_OPS])
    body = _op_step(g, op, "    ")
    dtype = g.rng.choice(["torch.bfloat16", "torch.bfloat16", "torch.float16"])
    head = f'with torch.autocast("cpu", dtype={dtype}):\n'
    if g.rng.random() < 0.2:
        head += '    with torch.autocast("cpu", enabled=False):\n'
        body = Step("    " + body.code, body.tag, body.defines, body.uses, body.observe)
    return Step(head + body.code, f"autocast:{body.tag}", body.defines, body.uses,
                body.observe)


from . import compiled  # noqa: E402,F401 - its features (compiled functions) register here
from . import aliasing  # noqa: E402,F401 - views, hooks on them, out= (registered after it)
from . import functions  # noqa: E402,F401 - torch.func of catalog ops, custom Functions' outputs


def generate(seed: int, torch) -> Program:
    """The program of ``seed``: a few inputs, then ops, in-place updates, backward passes,
    hooks, grad modes and queries, each kept only as torch ran it (errors now and then)."""
    g = Gen(seed, torch)
    for _ in range(g.rng.randint(1, 3)):
        g.add(new_input(g))
    if not g.tensors(is_float):
        name = g.new()
        g.add(Step(f"{name} = {g.literal((2, 3), 'float32', True)}", "input", (name,)))
    target = g.rng.randint(*STEPS)
    makers, weights = zip(*FEATURES)
    attempts = 0
    while len(g.steps) < target and attempts < 8 * target:
        attempts += 1
        make = g.rng.choices(makers, weights)[0]
        try:
            step = make(g)
        except Skip:
            continue
        g.add(step)
    return Program(seed, tuple(g.steps))
