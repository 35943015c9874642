"""A picture of the backward graph behind a tensor, as Graphviz DOT text.

``to_dot(loss, params=dict(model.named_parameters()))`` gives one box per backward node,
labelled with its torch name (``MulBackward0``); leaves (``AccumulateGrad``) show the name
``params`` gives them, their shape and dtype; each output tensor gets its own box. Edges follow
``next_functions`` in the direction data flowed in forward (inputs above, the output at the
bottom). ``show_saved=True`` adds the tensors each node saved for backward (name, shape, dtype,
bytes) and ``show_attrs=True`` the non-tensor values it saved (exponents, shapes, ...).

Node ids are given in breadth-first order from the outputs, so the same graph always gives the
same text. ``render(dot, "graph.svg")`` draws it with the optional ``graphviz`` package.
"""
from __future__ import annotations

from collections import deque

from .._tensor import Tensor
from .graph import AccumulateGrad

__all__ = ["render", "to_dot"]

_HEADER = ['digraph {',
           '\tgraph [rankdir=TB]',
           ('\tnode [shape=box style="filled,rounded" fillcolor=white fontname=monospace '
            'fontsize=10]')]
_LEAF_COLOR = "lightblue"
_OUTPUT_COLOR = "darkolivegreen1"
_SAVED_COLOR = "orange"
_FREED = "(freed by backward)"


def _quote(text):
    """A DOT string literal; ``\\n`` in the label becomes a line break."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _describe(t):
    """``(2, 3) float32``: a tensor's shape and dtype."""
    return f"{tuple(t.shape)} {_dtype_name(t)}"


def _nbytes(t):
    n = int(t._data.nbytes)
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def _saved_values(node):
    """``[(name, value)]`` a node saved for backward (values freed by backward: _FREED)."""
    if getattr(type(node), "_op", None) is not None:  # by the names torch's node shows
        out = []
        for attr in dir(node):
            if attr.startswith("_saved_"):
                try:
                    out.append((attr[len("_saved_"):], getattr(node, attr)))
                except RuntimeError:
                    out.append((attr[len("_saved_"):], _FREED))
        return out
    if hasattr(node, "saved_tensors"):  # a custom Function's node (it is also the ctx)
        try:
            return [(f"saved_tensors[{i}]", t) for i, t in enumerate(node.saved_tensors)]
        except RuntimeError:
            return [("saved_tensors", _FREED)]
    return []


class _DotWriter:
    """Walks the graph breadth-first and emits DOT statements."""

    def __init__(self, params, show_saved, show_attrs):
        self.names = {id(t): name for name, t in (params or {}).items()}
        self.show_saved = show_saved
        self.show_attrs = show_attrs
        self.ids = {}
        self.lines = list(_HEADER)
        self.queue = deque()

    def node_id(self, node):
        """The node's id, declaring and queueing it the first time it is seen."""
        key = id(node)
        if key not in self.ids:
            self.ids[key] = f"n{len(self.ids)}"
            self.queue.append(node)
            self.declare(node, self.ids[key])
        return self.ids[key]

    def declare(self, node, nid):
        if isinstance(node, AccumulateGrad):
            var = node.variable
            name = self.names.get(id(var))
            label = f"{name}\n{_describe(var)}" if name else _describe(var)
            self.lines.append(f"\t{nid} [label={_quote(label)} fillcolor={_LEAF_COLOR}]")
            return
        saved = _saved_values(node) if (self.show_saved or self.show_attrs) else []
        label = node.name()
        attrs = [(n, v) for n, v in saved if not isinstance(v, Tensor)]
        if self.show_attrs and attrs:
            label += "\n" + "\n".join(f"{n}: {v}" for n, v in attrs)
        self.lines.append(f"\t{nid} [label={_quote(label)}]")
        if self.show_saved:
            tensors = [(n, v) for n, v in saved if isinstance(v, Tensor)]
            for j, (name, t) in enumerate(tensors):
                self.saved_tensor(nid, j, name, t)

    def saved_tensor(self, nid, j, name, t):
        known = self.names.get(id(t))
        title = f"{name}: {known}" if known else name
        label = f"{title}\n{_describe(t)}\n{_nbytes(t)}"
        sid = f"{nid}_s{j}"
        self.lines.append(f"\t{sid} [label={_quote(label)} fillcolor={_SAVED_COLOR}]")
        self.lines.append(f"\t{sid} -> {nid} [style=dashed arrowhead=none]")

    def output(self, k, t, label):
        oid = f"out{k}"
        name = self.names.get(id(t), label)
        text = f"{name}\n{_describe(t)}"
        self.lines.append(f"\t{oid} [label={_quote(text)} fillcolor={_OUTPUT_COLOR}]")
        fn = t.grad_fn  # a leaf output has no node above it: it stands alone
        if fn is not None:
            self.lines.append(f"\t{self.node_id(fn)} -> {oid}")

    def walk(self):
        """Declare every node reachable from the queued ones, with its incoming edges."""
        while self.queue:
            node = self.queue.popleft()
            nid = self.ids[id(node)]
            for child, _ in node.next_functions:
                if child is not None:
                    self.lines.append(f"\t{self.node_id(child)} -> {nid}")

    def text(self):
        return "\n".join(self.lines + ["}"]) + "\n"


def to_dot(tensor_or_tensors, params=None, show_saved=False, show_attrs=False) -> str:
    """Graphviz DOT text of the backward graph behind one tensor or several."""
    roots = ([tensor_or_tensors] if isinstance(tensor_or_tensors, Tensor)
             else list(tensor_or_tensors))
    writer = _DotWriter(params, show_saved, show_attrs)
    for k, t in enumerate(roots):
        if not isinstance(t, Tensor):
            raise TypeError(f"to_dot() expects Tensors, got {type(t).__name__}")
        writer.output(k, t, "output" if len(roots) == 1 else f"output {k}")
    writer.walk()
    return writer.text()


def render(dot_text: str, path, format: str = "svg"):
    """Draw DOT text to ``path`` as SVG or PNG (needs the ``graphviz`` package and ``dot``)."""
    try:
        import graphviz
    except ImportError as e:
        raise ImportError("ember.autograd.graphviz.render() needs the optional 'graphviz' "
                          "package: pip install 'ember[graphviz]' (and Graphviz's 'dot' "
                          "program, e.g. apt install graphviz)") from e
    data = graphviz.Source(dot_text).pipe(format=format)
    with open(path, "wb") as f:
        f.write(data)
    return path
