"""The graph picture: DOT text of known small graphs, checked node by node."""
import re
import shutil
import sys

import pytest

import ember
from ember.autograd.graphviz import render, to_dot

HEADER = [
    'digraph {',
    '\tgraph [rankdir=TB]',
    '\tnode [shape=box style="filled,rounded" fillcolor=white fontname=monospace fontsize=10]',
]


def body(dot):
    lines = dot.splitlines()
    assert lines[:3] == HEADER and lines[-1] == "}"
    return lines[3:-1]


def small_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    w = ember.tensor([3.0, 4.0], requires_grad=True)
    loss = (x * w).exp().sum()
    return x, w, loss


def test_known_graph_node_by_node():
    x, w, loss = small_graph()
    assert body(to_dot(loss, params={"x": x, "w": w})) == [
        '\tout0 [label="output\\n() float32" fillcolor=darkolivegreen1]',
        '\tn0 [label="SumBackward0"]',
        '\tn0 -> out0',
        '\tn1 [label="ExpBackward0"]',
        '\tn1 -> n0',
        '\tn2 [label="MulBackward0"]',
        '\tn2 -> n1',
        '\tn3 [label="x\\n(2,) float32" fillcolor=lightblue]',
        '\tn3 -> n2',
        '\tn4 [label="w\\n(2,) float32" fillcolor=lightblue]',
        '\tn4 -> n2',
    ]


def test_text_is_deterministic_and_a_str():
    loss = small_graph()[2]
    dot = to_dot(loss)
    assert isinstance(dot, str) and dot == to_dot(loss)
    loss2 = small_graph()[2]
    assert to_dot(loss2) == dot


def test_unnamed_leaves_show_shape_and_dtype():
    x = ember.ones(2, 3, dtype=ember.float64, requires_grad=True)
    dot = to_dot(x.sum())
    assert '\tn1 [label="(2, 3) float64" fillcolor=lightblue]' in body(dot)


def test_saved_tensors_and_attributes():
    x, w, loss = small_graph()
    lines = body(to_dot(loss, params={"x": x, "w": w}, show_saved=True, show_attrs=True))
    assert '\tn0 [label="SumBackward0\\nself_sym_sizes: (2,)"]' in lines
    assert '\tn1_s0 [label="result\\n(2,) float32\\n8 B" fillcolor=orange]' in lines
    assert '\tn1_s0 -> n1 [style=dashed arrowhead=none]' in lines
    # MulBackward0 saved both inputs; they are the parameters x and w
    saved = [line for line in lines if line.startswith("\tn2_s")]
    assert '\tn2_s0 [label="other: w\\n(2,) float32\\n8 B" fillcolor=orange]' in saved
    assert '\tn2_s1 [label="self: x\\n(2,) float32\\n8 B" fillcolor=orange]' in saved


def test_attributes_only_when_asked():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    assert '\tn1 [label="PowBackward0"]' in body(to_dot(y))
    assert '\tn1 [label="PowBackward0\\nexponent: 3"]' in body(to_dot(y, show_attrs=True))
    assert not any("_s0" in line for line in body(to_dot(y, show_attrs=True)))


def test_saved_values_after_backward_are_marked_freed():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    y.backward()
    lines = body(to_dot(y, show_saved=True, show_attrs=True))
    assert '\tn1 [label="ExpBackward0\\nresult: (freed by backward)"]' in lines


def test_shared_subgraph_appears_once_and_edges_follow_next_functions():
    x = ember.tensor([1.0], requires_grad=True)
    h = x * 2.0
    y = (h + h).sum()
    lines = body(to_dot(y, params={"x": x}))
    labels = re.findall(r'label="([^"]*)"', "\n".join(lines))
    assert labels.count("MulBackward0") == 1
    add = next(line for line in lines if "AddBackward0" in line).split()[0]
    mul = next(line for line in lines if "MulBackward0" in line).split()[0]
    assert lines.count(f"\t{mul} -> {add}") == 2


def test_several_outputs_and_leaf_output():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a, b = x.exp(), x.sin()
    lines = body(to_dot([a, b, x], params={"x": x}))
    assert lines[0] == '\tout0 [label="output 0\\n(2,) float32" fillcolor=darkolivegreen1]'
    assert '\tout1 [label="output 1\\n(2,) float32" fillcolor=darkolivegreen1]' in lines
    assert '\tout2 [label="x\\n(2,) float32" fillcolor=darkolivegreen1]' in lines
    assert sum(1 for line in lines if line.endswith("-> out2")) == 0
    leaf_nodes = [line for line in lines if "lightblue" in line]
    assert len(leaf_nodes) == 1  # x's AccumulateGrad is shared by both branches


def test_custom_function_nodes_and_their_saved_tensors():
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, grad):
            (t,) = ctx.saved_tensors
            return 2 * t * grad

    x = ember.tensor([3.0], requires_grad=True)
    lines = body(to_dot(Square.apply(x), show_saved=True))
    assert '\tn0 [label="SquareBackward"]' in lines
    assert '\tn0_s0 [label="saved_tensors[0]\\n(1,) float32\\n4 B" fillcolor=orange]' in lines


def test_labels_are_escaped():
    x = ember.tensor([1.0], requires_grad=True)
    dot = to_dot(x.exp(), params={'my "x"\\': x})
    assert '[label="my \\"x\\"\\\\\\n(1,) float32" fillcolor=lightblue]' in dot


def test_deep_graph_does_not_recurse():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    dot = to_dot(y)
    assert dot.count("MulBackward0") == 5000


def test_rejects_non_tensors():
    with pytest.raises(TypeError, match="to_dot\\(\\) expects Tensors, got int"):
        to_dot([1])


def test_render_without_graphviz_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"pip install 'ember\[graphviz\]'"):
        render(to_dot(small_graph()[2]), tmp_path / "g.svg")


def test_render_svg(tmp_path):
    pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed")
    path = render(to_dot(small_graph()[2]), tmp_path / "g.svg")
    assert "<svg" in path.read_text()
