"""torch.autograd.graph's public API: GradientEdge / get_gradient_edge (as autograd.grad's and
backward's inputs and outputs), register_multi_grad_hook, allow_mutation_on_saved_tensors.

Each body runs on torch 2.13 and on ember (``same``): values, gradients, hook calls, errors.
"""
import pytest
from oracle import same
from test_function import functions


def _chain(lib):
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x.sin()
    z = y * y.exp()
    return x, y, z


# -- GradientEdge and get_gradient_edge -------------------------------------------------------
def test_gradient_edge_fields():
    def body(lib):
        x, y, _ = _chain(lib)
        G = lib.autograd.graph
        e, ex = G.get_gradient_edge(y), G.get_gradient_edge(x)
        a, b = lib.tensor([1., 2., 3., 4.], requires_grad=True).split(2)
        eb = G.get_gradient_edge(b)
        return (G.GradientEdge._fields, e.node is y.grad_fn, e.output_nr,
                e.ownership_token is None, ex.node.name(), ex.output_nr, eb.output_nr,
                eb.node is b.grad_fn, isinstance(e, tuple), e == (y.grad_fn, 0, None))
    same(body)


def test_get_gradient_edge_of_tensor_without_grad():
    same(lambda lib: lib.autograd.graph.get_gradient_edge(lib.ones(2)))


@pytest.mark.parametrize("which", ["interior", "leaf", "second_output", "dict"])
def test_grad_wrt_edge(which):
    def body(lib):
        G = lib.autograd.graph
        x, y, z = _chain(lib)
        if which == "interior":
            return lib.autograd.grad(z.sum(), G.get_gradient_edge(y))
        if which == "leaf":
            return (lib.autograd.grad(z.sum(), [G.get_gradient_edge(x), x]))
        if which == "dict":
            return lib.autograd.grad(z.sum(), {"y": G.get_gradient_edge(y), "x": x})
        a, b = x.unsqueeze(0).expand(2, 3).unbind(0)
        return lib.autograd.grad((a * b.cos()).sum(), G.get_gradient_edge(b))
    same(body)


def test_edge_from_next_functions_and_grad_fn_identity():
    def body(lib):
        x, y, z = _chain(lib)
        # an edge made by hand from next_functions: the gradient flowing into MulBackward0's
        # first input, i.e. into y through z's first use of it
        node, nr = z.grad_fn.next_functions[0]
        g_in = lib.autograd.grad(z.sum(), lib.autograd.graph.GradientEdge(node, nr),
                                 retain_graph=True)
        return g_in, lib.autograd.grad(z.sum(), y)
    same(body)


@pytest.mark.parametrize("grad", ["given", "implicit", "wrong_shape", "complex", "int"])
def test_edge_as_output(grad):
    def body(lib):
        G = lib.autograd.graph
        x, y, z = _chain(lib)
        e = G.get_gradient_edge(y)
        if grad == "given":
            return lib.autograd.grad(e, x, lib.tensor([1., 2., 3.]))
        if grad == "implicit":
            s = y.sum()
            return lib.autograd.grad(G.get_gradient_edge(s), x)
        if grad == "wrong_shape":
            return lib.autograd.grad(e, x, lib.ones(2))
        if grad == "complex":
            return lib.autograd.grad(e, x, lib.ones(3, dtype=lib.complex64))
        return lib.autograd.grad(e, x, [3])
    same(body)


@pytest.mark.parametrize("rows", [3, 4])
def test_batched_grads_of_edge_output(rows):
    def body(lib):
        x, y, _ = _chain(lib)
        e = lib.autograd.graph.get_gradient_edge(y)
        batched = lib.autograd.grad(e, x, lib.ones(2, rows), is_grads_batched=True,
                                    retain_graph=True)
        return batched, lib.autograd.grad(y, e, lib.ones(2, 3), is_grads_batched=True)
    same(body)


def test_implicit_grad_of_non_scalar_edge():
    def body(lib):
        x, y, _ = _chain(lib)
        return lib.autograd.grad(lib.autograd.graph.get_gradient_edge(y), x)
    same(body)


def test_backward_with_edges():
    def body(lib):
        G = lib.autograd.graph
        x, y, z = _chain(lib)
        # an edge to an interior node as backward's input: nothing is accumulated anywhere
        z.sum().backward(inputs=[G.get_gradient_edge(y)], retain_graph=True)
        first = (x.grad, y.grad, y.retains_grad)
        z.sum().backward(inputs=G.get_gradient_edge(x), retain_graph=True)
        second = x.grad.clone()
        lib.autograd.backward(G.get_gradient_edge(y), lib.ones(3))
        return first, second, x.grad
    same(body)


def test_edge_of_multi_output_and_leaf_as_output():
    def body(lib):
        G = lib.autograd.graph
        x = lib.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        vals, idx = x.max(1)
        out = (vals * 3).sum()
        implicit = lib.autograd.grad(G.get_gradient_edge(out), x, retain_graph=True)
        e = G.GradientEdge(out.grad_fn.next_functions[0][0].next_functions[0][0], 0)
        given = lib.autograd.grad(e, x, lib.tensor([1., -1.]))
        leaf = lib.autograd.grad(G.get_gradient_edge(x), x, lib.ones(2, 2))
        return implicit, given, leaf
    same(body)


def test_materialize_grads_with_edges():
    def body(lib):
        G = lib.autograd.graph
        x, y, z = _chain(lib)
        w = lib.ones(3, requires_grad=True)
        used = lib.autograd.grad(z.sum(), [G.get_gradient_edge(y)], materialize_grads=True,
                                 retain_graph=True)
        try:
            lib.autograd.grad(z.sum(), [G.get_gradient_edge(w)], materialize_grads=True,
                              retain_graph=True)
        except RuntimeError as e:
            unused = str(e)
        both = lib.autograd.grad(z.sum(), [G.get_gradient_edge(w), w], allow_unused=True)
        return used, unused, both
    same(body)


def test_non_tensor_input_error_names_edges():
    def body(lib):
        x, y, z = _chain(lib)
        return lib.autograd.grad(z.sum(), [3])
    same(body)


def test_hand_built_edge_to_single_output_op_node_needs_its_shape():
    # ember's op nodes do not keep their output's shape (torch's keep input metadata): such an
    # edge as an output raises rather than take a gradient of any shape unchecked
    import ember
    x = ember.tensor([1., 2.], requires_grad=True)
    y = x.sin()
    edge = ember.autograd.graph.GradientEdge(y.grad_fn, 0)
    with pytest.raises(RuntimeError, match="the shape of output 0 of SinBackward0 is not known"):
        ember.autograd.grad(edge, x, ember.ones(2))


# -- register_multi_grad_hook -----------------------------------------------------------------
def _flags(grads):
    return [None if g is None else g for g in grads]


def test_multi_grad_hook_all_documented_example():
    def body(lib):
        a = lib.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        b = lib.tensor([[.5, .5, 1.], [2., -1., 0.]], requires_grad=True)
        c, d = a * b, a * b
        calls = []
        lib.autograd.graph.register_multi_grad_hook((a, b, c, d), lambda gs: calls.append(
            [g is not None for g in gs]))
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        lib.autograd.grad(d.sum(), [d], retain_graph=True)
        calls.append("leaf in grad")
        lib.autograd.grad(c.sum(), b)  # torch's engine cannot say whether a leaf runs there
        return calls
    same(body)


def test_multi_grad_hook_all_values_and_order():
    def body(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        w = lib.tensor([3., -1.], requires_grad=True)
        h = x * w
        out = (h.exp() * x).sum()
        log = []
        x.register_hook(lambda g: log.append(("x", g)))
        h.register_hook(lambda g: log.append(("h", g)))
        handle = lib.autograd.graph.register_multi_grad_hook(
            [x, h, w], lambda gs: log.append(("multi", list(gs))))
        out.backward(retain_graph=True)
        first = list(log)
        log.clear()
        out.backward(retain_graph=True)  # again: called once per pass
        second = len(log)
        handle.remove()
        log.clear()
        out.backward()
        return first, second, log, type(handle).__name__
    same(body)


def test_multi_grad_hook_unused_tensor_and_unreached():
    def body(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        y = lib.tensor([3., 4.], requires_grad=True)  # never used: None, not waited for
        z = x.sin()
        seen = []
        lib.autograd.graph.register_multi_grad_hook((x, y, z), lambda gs: seen.append(
            _flags(gs)))
        z.sum().backward()
        return seen
    same(body)


def test_multi_grad_hook_any():
    def body(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        c = lib.tensor([5., 6.])  # needs no grad: skipped in "any" mode
        h = x * 2
        seen = []
        handle = lib.autograd.graph.register_multi_grad_hook((x, c, h), seen.append,
                                                             mode="any")
        (h ** 2).sum().backward(retain_graph=True)
        (h ** 2).sum().backward(retain_graph=True)
        handle.remove()
        (h ** 2).sum().backward()
        return seen
    same(body)


def test_multi_grad_hook_in_grad_with_inputs():
    def body(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        w = lib.tensor([0.5, 0.25], requires_grad=True)
        h = (x * w).tanh()
        u = x.exp()
        out = (h * u).sum()
        seen = []
        lib.autograd.graph.register_multi_grad_hook((h, u), lambda gs: seen.append(
            _flags(gs)))
        g = lib.autograd.grad(out, [h], retain_graph=True)
        gu = lib.autograd.grad(out, [u, h], retain_graph=True)
        gw = lib.autograd.grad(out, [w])  # (u does not lead to w: its node does not run)
        return seen, g, gu, gw
    same(body)


@pytest.mark.parametrize("case", ["bad_mode", "no_grad_tensor_all", "multi_output",
                                  "outside_backward"])
def test_multi_grad_hook_errors_and_edges(case):
    def body(lib):
        G = lib.autograd.graph
        x = lib.tensor([1., 2., 3., 4.], requires_grad=True)
        if case == "bad_mode":
            return G.register_multi_grad_hook((x,), print, mode="some")
        if case == "no_grad_tensor_all":
            return G.register_multi_grad_hook((x, lib.ones(2)), print)
        if case == "outside_backward":  # a hook called by hand, not by a backward pass
            G.register_multi_grad_hook((x,), print)
            hooks = x._backward_hooks if lib.__name__ == "torch" else x._hooks
            return next(iter(hooks.values()))(lib.ones(4))
        a, b = x.split(2)  # one node, two outputs: b gets no gradient in this pass
        seen = []
        G.register_multi_grad_hook((a, b), lambda gs: seen.append(_flags(gs)))
        (a * 2).sum().backward(retain_graph=True)
        (a * b).sum().backward()
        return seen
    same(body)


# -- allow_mutation_on_saved_tensors ----------------------------------------------------------
@pytest.mark.parametrize("case", ["documented", "untouched", "view_at_start", "saved_output",
                                  "twice", "custom_function"])
def test_allow_mutation_on_saved_tensors(case):
    def body(lib):
        G = lib.autograd.graph
        with G.allow_mutation_on_saved_tensors() as ctx:
            a = lib.tensor([[1., 2., 3.], [0.5, -1., 2.]], requires_grad=True)
            b = a.clone()
            if case == "documented":
                out = (b ** 2).sum()
                mutated = b.sin_()
            elif case == "untouched":
                out = (b.exp() * b).sum()
                mutated = None
            elif case == "view_at_start":  # the write goes through a view of the saved tensor
                out = (b ** 3).sum()
                mutated = b[0].mul_(10)
            elif case == "saved_output":  # exp saves its result, which is then zeroed
                e = b.exp()
                out = (e * 2).sum()
                mutated = e.zero_()
            elif case == "twice":
                out = (b * b).sum()
                b.add_(1)
                mutated = b.mul_(3)
            else:
                exp = functions(lib)[0]  # a custom Function that saves its output
                y = exp.apply(b)
                out = y.sum()
                mutated = y.neg_()
            out.backward()
            return mutated, a.grad, type(ctx).__name__
    same(body)


def test_allow_mutation_errors():
    def body(lib):
        G = lib.autograd.graph
        errors = []
        with G.allow_mutation_on_saved_tensors():
            try:
                with G.allow_mutation_on_saved_tensors():
                    pass
            except RuntimeError as e:
                errors.append(str(e))
        with G.allow_mutation_on_saved_tensors():
            a = lib.tensor([1., 2.], requires_grad=True)
            out = (a.clone() ** 2).sum()
        try:  # the context is gone, its saved tensors with it
            out.backward()
        except AssertionError as e:
            errors.append(str(e))
        b = a.clone()  # outside the context: torch's version error as usual
        out = (b ** 2).sum()
        b.add_(1)
        try:
            out.backward()
        except RuntimeError as e:
            errors.append(str(e)[:60])
        return errors
    same(body)


def test_allow_mutation_through_view_at_offset_keeps_gradient_right():
    # torch clones a saved tensor only when a write goes to the same data pointer (the saved
    # tensor or a view at its start): a write through d[2:] is missed and torch's gradient is
    # silently wrong ([2, 4, 60, 80]). ember copies every saved tensor: the right gradient.
    import ember
    with ember.autograd.graph.allow_mutation_on_saved_tensors():
        a = ember.tensor([1., 2., 3., 4.], requires_grad=True)
        d = a.clone()
        out = (d ** 2).sum()
        d[2:].mul_(10)
        out.backward()
    assert a.grad.tolist() == [2., 4., 6., 8.]


def test_multi_grad_hook_on_leaves_of_one_node():
    # a pass from one node straight into leaves (the engine's shortest path) tells the hook
    # which leaves it reaches as a longer pass does
    def body(lib):
        a = lib.tensor([1., 2.], requires_grad=True)
        b = lib.tensor([3., 4.], requires_grad=True)
        w = lib.tensor([3., 4.], requires_grad=True)
        seen = []
        lib.autograd.graph.register_multi_grad_hook((a, b, w), lambda gs: seen.append(
            _flags(gs)))
        (a * b).backward(lib.ones(2), retain_graph=True)
        (a * 2).sum().backward()
        a.add(b).backward(lib.ones(2))
        return seen
    same(body)


@pytest.mark.parametrize("grad_size", [2, 3])
def test_hand_built_edge_to_custom_function_node(grad_size):
    # a custom Function's node knows its outputs' shapes: an edge to it built by hand works
    # as an output, with torch's shape check
    def body(lib):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        y = functions(lib)[0].apply(x)
        z = (y * 2).sum()
        e = lib.autograd.graph.GradientEdge(z.grad_fn.next_functions[0][0].next_functions[0][0],
                                            0)
        return (e.node.name(), lib.autograd.grad(z, e, retain_graph=True),
                lib.autograd.grad(e, x, lib.ones(grad_size)))
    same(body)
