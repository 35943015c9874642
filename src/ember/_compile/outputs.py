"""A recording's ``finish(tensors, outs, saved)``: the replay's output arrays made tensors, as
one generated straight-line function.

What it does at each call (written out once per recording, so a call builds no lists or
loops over the recording's plans): the outputs that require grad share one new
``CompiledFunctionBackward`` node, whose edges lead to the sources' gradient edges and which
notes the version of every outside tensor the forward read (and of each output its backward
reads: modified in place, the backward raises eager's error); each output array becomes a new
Tensor; and the function's result is rebuilt around them (the same tuple, list or dict as
eager mode returned). A view among the outputs is made again through its view ops
(``Entry._leaves``).
"""
from __future__ import annotations


from .._backend import fp_errors
from .._ops.registry import _sequence
from .._state import state
from .._tensor import Tensor
from ..autograd.graph import gradient_edge


def generate_finish(entry, node_class):
    """The ``finish`` of recording ``entry`` (see the module docstring)."""
    w = _Lines(entry)
    w.scope.update(state=state, new=object.__new__, Tensor=Tensor, Node=node_class,
                   edge=gradient_edge, sequence=_sequence)
    outputs = [f"r{j}" for j in range(len(entry.out_info))]
    # (written for the grad and inference modes of the recording, which its guards check:
    # finish runs after them, or right after the recording, in those modes)
    if entry.grad_outputs:  # (some: grad mode was on)
        _node_lines(w, entry)
        _output_lines(w, entry, outputs, with_node=True)
    else:
        _output_lines(w, entry, outputs, with_node=False)
    w.add(f"return {_result(w, entry, outputs)}")
    return w.build()


def generate_replay(entry, finish):
    """``replay(tensors)``: the forward program's lines and ``finish``'s in one function (a
    frame and the arrays' tuples fewer per call), silenced as ``Entry.replay`` silences the
    forward program (NumPy's errors off and NaNs noted while the kernels run)."""
    forward = entry.program.forward
    *body, last = forward.lines
    assert last.startswith("return ")
    body.append("outs, saved = " + last[len("return "):])
    if entry.quiet:
        body = (fp_errors.silence_noting_lines("quiet") + ["try:"]
                + ["    " + line for line in body] + ["finally:", "    restore(quiet)"])
    text = ("def replay(tensors):\n" + "".join(f"    {line}\n" for line in body)
            + finish.source.split("\n", 1)[1])
    # (in finish's own scope, which its kept edges are refreshed into, see _refresh_edges)
    scope = finish.__globals__
    names = {k: v for k, v in forward.__globals__.items() if k != "__builtins__"}
    names.update(fp_errors.NOTING_SCOPE)
    clash = [k for k in names if k in scope and scope[k] is not names[k]]
    assert not clash, clash  # (the two generators name their objects apart)
    scope.update(names)
    exec(compile(text, "<ember compiled>", "exec"), scope)  # noqa: S102 - generated
    fn = scope["replay"]
    fn.source = text  # what it runs, for readers (print(fn.source))
    return fn


MISS = object()  # what a call gives when its guards fail


def generate_call(entry, matches, replay):
    """``call(args, kwargs)``: the guard's checks (``matches``'s lines), then ``replay``'s
    lines on the tensors they bind, in one function (a frame and two calls fewer per call
    than the guard's and the replay's); it gives the result, or MISS where a check fails."""
    body = replay.source.split("\n", 1)[1]
    text = ("def call(args, kwargs):\n" + "".join(f"    {line}\n" for line in matches.lines)
            + body)
    scope = replay.__globals__
    names = {k: v for k, v in matches.__globals__.items()
             if k not in ("__builtins__", "_fail")}
    clash = [k for k in names if k in scope and scope[k] is not names[k]]
    assert not clash, clash  # (the guard's writers and the replay's name their objects apart)
    scope.update(names)
    scope["_fail"] = MISS
    exec(compile(text, "<ember compiled>", "exec"), scope)  # noqa: S102 - generated
    fn = scope["call"]
    fn.source = text  # what it runs, for readers (print(fn.source))
    return fn


class _Lines:
    def __init__(self, entry):
        self.entry = entry
        self.lines = []
        self.indent = 1
        self.scope = {"entry": entry}
        self.count = 0

    def add(self, line):
        self.lines.append("    " * self.indent + line)

    def bind(self, obj):
        self.count += 1
        name = f"o{self.count}"
        self.scope[name] = obj
        return name

    def build(self):
        text = "def finish(tensors, outs, saved):\n" + "\n".join(self.lines) + "\n"
        exec(compile(text, "<ember compiled>", "exec"), self.scope)  # noqa: S102 - generated
        fn = self.scope["finish"]
        fn.source = text  # what it runs, for readers (print(fn.source))
        return fn


def _tensor(w, kind, k):
    """An input (``("in", k)``) or outside tensor (``("cap", t)``) as an expression."""
    return f"tensors[{k}]" if kind == "in" else w.bind(k)


def _node_lines(w, entry):
    """The backward node: edges, metadata, and the versions of the outside tensors now."""
    w.add("node = new(Node)")
    _edge_lines(w, entry)
    w.add(f"node._meta = {w.bind(entry.source_meta)}  # (shapes and dtypes are guarded)")
    w.add("node._seq = next(sequence)")
    w.add("node._entry = entry")
    w.add("node._saved = saved")
    w.add("node._tensors = tensors")
    if len(entry.grad_outputs) > 1:
        w.add(f"node._out_meta = {w.bind(entry.out_meta)}")
    if not entry.fresh:
        w.add("node._fresh_outputs = False")
    if not entry.usual_grads:
        w.add("node._usual_grads = False")
    # the version of every outside tensor now, as (counter, version, tensor): the backward
    # checks those it reads (a create_graph pass, which reads them all again, checks them
    # all). NOTE: written out tensor by tensor: mapped attrgetter/itemgetter calls and a
    # zip (fewer bytecodes) took three times as long for W2's six tensors (1.0 us to 0.34).
    if not entry.outside_plan:
        w.add("node._outside = node._checks = []")
        return
    tensors = [_tensor(w, kind, k) for kind, k in entry.outside_plan]
    counters = [f"vc_{k}" for k in range(len(tensors))]
    for v, t in zip(counters, tensors):
        w.add(f"{v} = {t}._vc")
    w.add(f"if {' or '.join(f'{v} is None' for v in counters)}:"
          "  # (a tensor without a counter yet: given one)")
    w.add(f"    {''.join(v + ', ' for v in counters)}= "
          f"{w.bind(_counters)}(({''.join(t + ', ' for t in tensors)}))")
    w.add("node._outside = outside = ["
          + ", ".join(f"({v}, {v}[0], {t})" for v, t in zip(counters, tensors)) + "]")
    w.add(f"node._checks = [{''.join(f'outside[{j}], ' for j in entry.checked_outside)}]")


def _counters(tensors):
    """Each tensor's version counter, a new one (at version 0) for a tensor without one."""
    counters = []
    for t in tensors:
        vc = t._vc
        if vc is None:
            vc = t._vc = [0]
        counters.append(vc)
    return counters


def _edge_lines(w, entry):
    """``node._next``: each source's gradient edge. An outside leaf's edge (its
    AccumulateGrad node) is kept from call to call, in the function's scope, while the leaf
    holds the same accumulator and no history (its shape, dtype, requires_grad and
    view-ness are guarded): no call and no new tuple per call. The kept edge holds the
    accumulator, as the last call's graph would."""
    kept = {}  # source position -> (tensor name, edge name, accumulator-reference name)
    for j, (kind, k) in enumerate(entry.sources):
        if kind == "cap" and k._grad_fn is None and k._base is None:
            # (the reference is no accumulator's until the first call computes the edge)
            kept[j] = (w.bind(k), w.bind(None), w.bind(_NOT_YET))
    edges = [kept[j][1] if j in kept else f"edge({_tensor(w, kind, k)})"
             for j, (kind, k) in enumerate(entry.sources)]
    if not kept:
        w.add(f"node._next = ({''.join(e + ', ' for e in edges)})")
        return
    whole = None if len(kept) < len(edges) else w.bind(None)
    # (each kept leaf's accumulator reference and grad_fn, compared by identity with the
    # reference kept and None, written out: a mapped attrgetter took 2.5 times as long for
    # W2's four leaves. A new reference to the same accumulator computes the same edge.)
    changed = " or ".join(f"{t}._grad_acc is not {ref} or {t}._grad_fn is not None"
                          for t, _, ref in kept.values())
    w.add(f"if {changed}:")
    w.add(f"    {w.bind(_refresh_edges(w.scope, list(kept.values()), whole))}()")
    w.add(f"node._next = {whole}" if whole is not None
          else f"node._next = ({''.join(e + ', ' for e in edges)})")


_NOT_YET = object()  # a kept edge's accumulator reference before the first call


def _refresh_edges(scope, kept, whole):
    """Computes the kept edges again into the generated function's scope (``whole``: the
    name of the tuple of them all, when every edge is kept), with the leaves' accumulator
    references they were computed with."""
    def refresh():
        for t, e, ref in kept:
            tensor = scope[t]
            scope[e] = gradient_edge(tensor)
            scope[ref] = tensor._grad_acc
        if whole is not None:
            scope[whole] = tuple(scope[e] for _, e, _ in kept)
    return refresh


def _output_lines(w, entry, outputs, with_node):
    nr = 0
    checks = []
    for j, (name, (requires_grad, version, read)) in enumerate(zip(outputs, entry.out_info)):
        w.add(f"{name} = new(Tensor)")
        w.add(f"{name}._data = outs[{j}]")
        if version:
            w.add(f"{name}._vc = [{version}]")
        if with_node and requires_grad:
            w.add(f"{name}._grad_fn = node")
            w.add(f"{name}._output_nr = {nr}")
            w.add(f"{name}._requires_grad = True")
            nr += 1
            if read:  # (the backward reads it: modified in place, it raises)
                checks.append(f"({name}._version_counter(), {version}, {name})")
        elif not with_node and state.inference:  # (the recording's mode: guarded)
            w.add(f"{name}._is_inference = True")
    if checks:
        w.add(f"node._checks += [{', '.join(checks)}]")


def _result(w, entry, outputs):
    """The expression of the function's result around the output tensors."""
    if any(kind == "view" for kind, _ in entry.leaf_kinds):
        # (a view made again through its view ops: the generic way)
        return (f"{w.bind(_rebuild_with_views)}(entry, tensors, "
                f"[{''.join(f'{r}, ' for r in outputs)}])")
    leaves = []
    for kind, x in entry.leaf_kinds:
        leaves.append(outputs[x] if kind == "out" else f"tensors[{x}]" if kind == "in"
                      else w.bind(x) if kind == "obj" else leaves[x])
    return _template_expr(w, entry.template, leaves)


def _template_expr(w, template, leaves):
    kind = template[0]
    if kind == "T":
        return leaves[template[1]]
    if kind == "V":
        return w.bind(template[1])
    if kind == "list":
        return "[" + "".join(_template_expr(w, x, leaves) + ", " for x in template[2]) + "]"
    if kind == "tuple":
        items = "".join(_template_expr(w, x, leaves) + ", " for x in template[2])
        cls = template[1]
        if cls is tuple:
            return f"({items})"
        return (f"{w.bind(cls)}({items})" if hasattr(cls, "_fields")
                else f"{w.bind(cls)}(({items}))")
    return "{" + "".join(f"{w.bind(key)}: {_template_expr(w, x, leaves)}, "
                         for key, x in zip(template[1], template[2])) + "}"


def _rebuild_with_views(entry, tensors, results):
    from .compiled import _rebuild
    return _rebuild(entry.template, entry._leaves(tensors, results))
