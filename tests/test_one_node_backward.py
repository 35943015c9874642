"""A backward pass through one node whose edges all lead to leaves (a compiled function's
node into its parameters, a custom Function of leaves) skips the engine's dependency count
and ready queue (engine._execute_into_leaves). What it must keep, as torch: the order in which
the leaves are given their gradients (seen by their hooks and post-accumulate hooks), which
gradient a leaf takes over and which it copies (one passed to two leaves), accumulation into
an existing ``.grad``, versions, and the general path for a leaf with hooks.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

import ember


def _leaf_function(t):
    """A custom Function of five leaves with one node: its gradient for ``a`` is the very
    tensor it passes to ``b`` too."""
    class Spread(t.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c, d, e):
            return a * 1 + b * 2 + c * 3 + d * 4 + e * 5

        @staticmethod
        def backward(ctx, g):
            return g, g, g * 3, g * 4, g * 5
    return Spread.apply


def _backward_from(out):
    """``out.backward()`` from the node itself (no ``sum()``'s node above it)."""
    out.backward(out.detach() * 0 + 1)


def _leaves(t, n=5):
    return [t.tensor([1.5, -2.0, 0.25], requires_grad=True) for _ in range(n)]


def test_leaves_hooks_run_in_torchs_order():
    def body(t):
        leaves = _leaves(t)
        names = "abcde"
        log = []
        for k in (0, 2, 4):
            leaves[k].register_hook(lambda g, k=k: log.append(("hook", names[k], g.tolist())))
        for k in (1, 3):
            leaves[k].register_post_accumulate_grad_hook(
                lambda p, k=k: log.append(("post", names[k], p.grad.tolist())))
        _backward_from(_leaf_function(t)(*leaves))
        return log, [p.grad for p in leaves]
    same(body)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 9])
def test_post_accumulate_hooks_order(n):
    def body(t):
        leaves = _leaves(t, n)
        log = []
        for k, p in enumerate(leaves):
            p.register_post_accumulate_grad_hook(lambda p, k=k: log.append(k))

        class Many(t.autograd.Function):
            @staticmethod
            def forward(ctx, *xs):
                return sum(x * (k + 1) for k, x in enumerate(xs))

            @staticmethod
            def backward(ctx, g):
                return tuple(g * (k + 1) for k in range(n))
        _backward_from(Many.apply(*leaves))
        return log
    same(body)


def test_plain_leaves_take_over_or_copy():
    def body(t):
        leaves = _leaves(t)
        leaves[2].grad = t.tensor([10.0, 20.0, 30.0])
        before = leaves[2].grad
        _backward_from(_leaf_function(t)(*leaves))
        grads = [p.grad for p in leaves]
        # (not the versions of d's and e's: a custom Function's own new gradients are copied
        # by ember, version 1, where torch takes them over)
        return (grads, [g._version for g in grads[:3]], before is leaves[2].grad,
                grads[0].data_ptr() == grads[1].data_ptr())
    same(body)


def test_leaf_that_stopped_requiring_grad_gets_nothing():
    def body(t):
        leaves = _leaves(t)
        out = _leaf_function(t)(*leaves)
        leaves[3].requires_grad_(False)
        _backward_from(out)
        return [p.grad for p in leaves]
    same(body)


def test_compiled_node_into_parameters_as_eager():
    """A compiled loss's one node into its parameters: the same ``.grad`` values, versions
    and hook calls as the eager function's backward."""
    rs = np.random.RandomState(0)
    data = [rs.randn(4, 3).astype(np.float32), rs.randn(3).astype(np.float32),
            rs.randn(3, 2).astype(np.float32), rs.randn(2).astype(np.float32)]
    x = ember.tensor(rs.randn(5, 4).astype(np.float32))

    def run(compiled):
        params = [ember.tensor(a, requires_grad=True) for a in data]
        log = []
        params[1].register_hook(lambda g: log.append(("hook", g.tolist())))
        params[2].register_post_accumulate_grad_hook(lambda p: log.append(("post", 2)))

        def loss_of(x):
            return ((x @ params[0] + params[1]).relu() @ params[2] + params[3]).sum()
        fn = ember.compile(loss_of) if compiled else loss_of
        for _ in range(3):  # (recorded, then replayed; .grad accumulates)
            fn(x).backward()
        return [p.grad.numpy() for p in params], [p.grad._version for p in params], log

    eager, compiled = run(False), run(True)
    for a, b in zip(eager[0], compiled[0]):
        np.testing.assert_array_equal(a, b)
    assert eager[1:] == compiled[1:]


def _function_of(t, backward):
    """A custom Function of three tensors whose backward is ``backward(g)``."""
    class Three(t.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            return a * 1 + b * 2 + c * 3

        @staticmethod
        def backward(ctx, g):
            return backward(t, g)
    return Three.apply


def _path_of(out):
    """Whether ember's backward from ``out`` runs by the one-node path (None under torch)."""
    if not isinstance(out, ember.Tensor):
        return None
    from ember.autograd import engine
    return engine._leaves_below(out.grad_fn) is not None


def test_edge_to_nothing_keeps_the_one_node_path():
    """An input that does not require grad is an edge to nothing: the leaves after it keep
    their positions in the queue's order and get their own gradients."""
    def body(t):
        a, c = _leaves(t, 2)
        b = t.tensor([4.0, 5.0, 6.0])
        log = []
        for name, p in (("a", a), ("c", c)):
            p.register_post_accumulate_grad_hook(lambda p, name=name: log.append(name))
        out = _function_of(t, lambda t, g: (g * 2, g * 3, g * 4))(a, b, c)
        path = _path_of(out)
        _backward_from(out)
        return log, a.grad, b.grad, c.grad, path in (None, True)
    same(body)


def test_one_leaf_twice_leaves_the_one_node_path():
    """A node with two edges to one leaf sums their gradients first (the general path)."""
    def body(t):
        a, c = _leaves(t, 2)
        out = _function_of(t, lambda t, g: (g * 2, g * 3, g * 4))(a, a, c)
        path = _path_of(out)
        _backward_from(out)
        return a.grad, c.grad, a.grad._version, path in (None, False)
    same(body)


def test_edge_to_an_op_node_leaves_the_one_node_path():
    def body(t):
        a, b, c = _leaves(t, 3)
        out = _function_of(t, lambda t, g: (g * 2, g * 3, g * 4))(a, b * 2, c)
        path = _path_of(out)
        _backward_from(out)
        return a.grad, b.grad, c.grad, path in (None, False)
    same(body)


@pytest.mark.parametrize("case", ["dtype", "broadcast", "scalar", "grad_dtype"])
def test_gradients_to_validate_on_the_one_node_path(case):
    """Gradients that are not their input's shape and dtype (a custom Function's float64
    gradient of a float32 leaf, one to sum over a broadcast dimension, a leaf with a
    grad_dtype) are validated as the general path validates them."""
    def body(t):
        a, b, c = _leaves(t, 3)
        if case == "grad_dtype":
            b.grad_dtype = t.float64

        def backward(t, g):
            if case == "dtype":
                return g * 2, (g * 3).double(), g * 4
            if case == "broadcast":
                return g * 2, (g * 3).expand(2, 3), g * 4
            if case == "scalar":
                return g * 2, g * 3, g.sum()
            return g * 2, g * 3, g * 4
        out = _function_of(t, backward)(a, b, c)
        path = _path_of(out)
        _backward_from(out)
        return a.grad, b.grad, c.grad, [p.grad._version for p in (a, b, c)], path in (None, True)
    same(body)


@pytest.mark.parametrize("case", ["transposed gradient", "transposed leaf", "expanded gradient",
                                  "written gradient", "root gradient passed on"])
def test_leaves_that_leave_the_one_node_paths_take_over(case):
    """Gradients a leaf must not take over as they are, on the one-node path (each a test
    of its shortcut that fails and hands the leaf to the general one): laid out otherwise
    than the leaf (copied with the leaf's strides), expanded (copied), written by its
    formula (version 1, where it is taken over), the root gradient itself (copied)."""
    def body(t):
        a = t.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        if case == "transposed leaf":
            a = t.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).t().detach().requires_grad_()
        b = t.tensor([[1.5, -2.0, 0.25], [0.5, 1.0, 2.0]], requires_grad=True)

        class Two(t.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2 + b * 3

            @staticmethod
            def backward(ctx, g):
                if case == "transposed gradient":
                    return (g * 2).t().contiguous().t(), g * 3
                if case == "expanded gradient":
                    return (g * 2)[:1].expand(2, 3), g * 3
                if case == "written gradient":
                    z = t.zeros_like(g)
                    z[0] = g[0] * 2
                    z[1] = g[1] * 2
                    return z, g * 3
                if case == "root gradient passed on":
                    return g, g * 3
                return g * 2, g * 3
        out = Two.apply(a, b)
        path = _path_of(out)
        _backward_from(out)
        return ([p.grad for p in (a, b)], [p.grad.stride() for p in (a, b)],
                [p.grad.is_contiguous() for p in (a, b)], b.grad._version, path in (None, True))
    same(body)


@pytest.mark.parametrize("case", ["float64 gradient", "second output", "implicit"])
def test_root_gradients_that_leave_the_one_node_shortcut(case):
    """The root gradient the one-node path puts in the node's buffer itself only when it is
    an array of its output's dtype for a node of one output; a gradient of another dtype
    (cast first, so the formula runs in float32) and a node of two outputs take the general
    seeding, with the same gradients as torch."""
    def body(t):
        a, b = _leaves(t, 2)
        seen = []  # (the dtype of the gradient One's formula is given)

        class Two(t.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2 + b, a - b * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2 + g2, g1 - g2 * 3

        class One(t.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return (a * 2 + b).sum()

            @staticmethod
            def backward(ctx, g):
                seen.append(g.dtype)
                return g * 2 * t.ones(3), g * t.ones(3)
        if case == "second output":
            out = Two.apply(a, b)[1]
            out.backward(t.tensor([1.0, 2.0, 3.0]))
        elif case == "float64 gradient":
            out = One.apply(a, b)
            out.backward(t.tensor(0.1, dtype=t.float64))
        else:
            out = One.apply(a, b)
            out.backward()
        return (a.grad, b.grad, [p.grad._version for p in (a, b)], [str(d) for d in seen],
                _path_of(out) in (None, True))
    same(body)


def _compiled_loss(t, params, x):
    """A compiled loss of ``params`` under ember (its one node into them: the one-node
    path), the same function eagerly under torch."""
    def loss_of(x):
        return ((x @ params[0] + params[1]).relu() @ params[2] + params[3]).sum()
    return ember.compile(loss_of) if t is ember else loss_of


def _mlp_params(t):
    rs = np.random.RandomState(0)
    shapes = ((4, 3), (3,), (3, 2), (2,))
    params = [t.tensor(rs.randn(*s).astype(np.float32), requires_grad=True) for s in shapes]
    return params, t.tensor(rs.randn(5, 4).astype(np.float32))


@pytest.mark.parametrize("case", ["retain_grad", "second backward", "retain_graph",
                                  "grad set", "grad set transposed", "root hook",
                                  "leaf hook", "final callback", "hook raises",
                                  "leaf transposed", "post-accumulate hook", "hook removed",
                                  "other terms"])
def test_compiled_loss_cases_the_one_node_path_hands_on(case):
    """What the one-node path must leave to the general steps, or keep as torch, on a
    compiled loss's node (recorded, then replayed): the loss's retained gradient, a second
    backward through a freed graph (torch's error), one through a retained graph, a
    ``.grad`` already set (accumulated into, in its own layout), hooks on the loss and on a
    leaf, a callback queued from a hook, and a hook that raises (grad mode and the pass
    state restored after it)."""
    def body(t):
        params, x = _mlp_params(t)
        loss_of = _compiled_loss(t, params, x)
        log = []
        for k in range(3):
            for p in params:
                p.grad = None
            if case == "grad set":
                params[0].grad = t.ones(4, 3)
            elif case == "grad set transposed":
                params[0].grad = t.ones(3, 4).t()
            elif case == "leaf hook":
                params[2].register_hook(lambda g: g * 2)
            elif case == "leaf transposed":  # (a .grad laid out as its leaf: a copy)
                params[2].data = params[2].data.t().contiguous().t()
            elif case == "post-accumulate hook":
                params[3].register_post_accumulate_grad_hook(
                    lambda p: log.append(p.grad.clone()))
            elif case == "hook removed":  # (an empty set of hooks: the plain leaf's path)
                params[1].register_hook(lambda g: g * 2).remove()
            elif case in ("final callback", "hook raises"):
                def hook(g):
                    if case == "hook raises":
                        raise ValueError("from the hook")
                    t.autograd.Variable._execution_engine.queue_callback(
                        lambda: log.append("callback"))
                params[1].register_hook(hook)
            # (made first: the compiled node runs first, and its bias gradients, views in
            # torch, are the ones the others' are summed with, out of place; the second
            # pass on the one-node path)
            other = None
            if case == "other terms" and k != 1:
                other = (params[1] * 2).sum() + (params[3] ** 2).sum()
            loss = loss_of(x)
            if other is not None:
                loss = other + loss
            if case == "retain_grad":
                loss.retain_grad()
            elif case == "root hook":
                loss.register_hook(lambda g: g * 3)
            if case == "hook raises":
                try:
                    loss.backward()
                except ValueError as e:
                    log.append((str(e), t.is_grad_enabled()))
                continue
            loss.backward(retain_graph=case == "retain_graph")
            log.append([p.grad.clone() for p in params])
            log.append([p.grad.stride() for p in params])
            log.append([p.grad._version for p in params])
            if case == "retain_grad":
                log.append(loss.grad)
            if case == "second backward":
                # (torch's eager graph gives b1 its gradient before it meets a freed node:
                # the .grad after the error is not compared, as a compiled node has one node)
                with pytest.raises(RuntimeError) as e:
                    loss.backward()
                log.append(str(e.value))
            elif case == "retain_graph":
                loss.backward()
                log.append([p.grad for p in params])
        return log
    def warned_always(t):  # (torch's once-per-process warnings given every time: the
        t.set_warn_always(True)  # transposed .grad's layout warning)
        try:
            return body(t)
        finally:
            t.set_warn_always(False)
    same(warned_always, rtol=1e-5, atol=1e-6)


def test_compiled_loss_backward_in_threads():
    """Backward passes of a compiled loss in several threads at once, into the same
    parameters: each leaf's lock makes every gradient count (a first one taken over, the
    others summed in), as in torch."""
    import threading

    def body(t):
        params, x = _mlp_params(t)
        loss_of = _compiled_loss(t, params, x)
        loss_of(x).backward()  # (ember: recorded; the threads replay)
        for p in params:
            p.grad = None
        losses = [loss_of(x) for _ in range(16)]
        start = threading.Barrier(4)

        def work(k):
            start.wait()
            for loss in losses[k::4]:
                loss.backward()
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return [p.grad for p in params]
    same(body, rtol=1e-5, atol=1e-5)


def test_compiled_loss_backward_waits_for_a_leafs_lock():
    """A backward pass whose leaf's lock another thread holds waits for it (it gives no
    gradient while the lock is held), then gives every leaf the gradient an undisturbed pass
    gives."""
    import threading

    params, x = _mlp_params(ember)
    loss_of = _compiled_loss(ember, params, x)
    loss_of(x).backward()  # (recorded; the next calls replay)
    expected = [p.grad.numpy().copy() for p in params]
    for p in params:
        p.grad = None
    loss = loss_of(x)
    lock = loss.grad_fn.next_functions[2][0].lock
    with lock:
        worker = threading.Thread(target=loss.backward)
        worker.start()
        worker.join(0.2)
        assert worker.is_alive()
        assert params[2].grad is None
    worker.join()
    for p, e in zip(params, expected):
        np.testing.assert_array_equal(p.grad.numpy(), e)


@pytest.mark.parametrize("case", ["0-d float32", "0-d float64", "shape (1,)", "shape (1, 1)",
                                  "two elements", "float16"])
def test_compiled_loss_implicit_gradients(case):
    """``loss.backward()`` with no gradient given, of compiled losses of each one-element
    kind (the engine makes the implicit ones itself on the one-node path) and of two elements
    (torch's error); the leaves' gradients and versions as torch's."""
    def body(t):
        params, x = _mlp_params(t)
        dtype = {"0-d float64": t.float64, "float16": t.float16}.get(case, t.float32)
        params = [p.detach().to(dtype).requires_grad_() for p in params]
        x = x.to(dtype)

        def loss_of(x):
            h = (x @ params[0] + params[1]).relu() @ params[2] + params[3]
            if case == "two elements":
                return h.sum(0)
            s = h.sum()
            return s.reshape(1) if case == "shape (1,)" else (
                s.reshape(1, 1) if case == "shape (1, 1)" else s)
        fn = t.compile(loss_of) if isinstance(x, ember.Tensor) else loss_of
        out = []
        for _ in range(3):  # (recorded, then replayed; .grad accumulates after the first)
            loss = fn(x)
            try:
                loss.backward()
            except RuntimeError as e:
                out.append(str(e))
            out.append([p.grad for p in params])
            out.append([None if p.grad is None else p.grad._version for p in params])
        return out
    same(body, rtol=1e-2, atol=1e-2)



@pytest.mark.parametrize("case", ["one leaf", "two leaves", "a leaf and a product"])
def test_compiled_loss_that_hands_on_the_implicit_gradient(case):
    """A compiled loss whose backward program hands the implicit gradient itself to its
    leaves (add passes its gradient on): no leaf takes that array over (the pass's own
    array, which its task does not note as borrowed: implicit_backward holds it), each
    ``.grad`` is an array of its own, with torch's values and versions, accumulated after
    the first call."""
    def body(t):
        a = t.tensor(1.5, requires_grad=True)
        b = t.tensor(-2.0, requires_grad=True)

        def loss_of(a, b):
            if case == "one leaf":
                return a + 0.0
            if case == "two leaves":
                return a + b
            return a + b * 3.0
        fn = t.compile(loss_of) if isinstance(a, ember.Tensor) else loss_of
        out = []
        for _ in range(3):  # (recorded, then replayed)
            fn(a, b).backward()
            out.append([p.grad for p in (a, b)])
            out.append([None if p.grad is None else p.grad._version for p in (a, b)])
        if b.grad is not None:  # (an array of its own: writing one leaves the other)
            a.grad.add_(10.0)
            out.append([a.grad, b.grad])
        return out
    same(body)


def test_compiled_output_gradient_of_another_shape_refused_before_the_program():
    """An output gradient of another shape than the recording's (the output's ``.data``
    replaced) is validated as torch validates a root gradient, against the shape the node
    recorded: torch's error, naming no node, before the program runs (which used to run its
    products on it: NumPy's matmul error), so the node still vouches for its gradients
    (Node._usual_grads)."""
    vouched = []  # (ember's nodes: whether each vouched for its gradients)

    def body(t):
        W = t.ones(3, 2, requires_grad=True)
        b = t.ones(2, requires_grad=True)
        x = t.ones(4, 3)

        def f(x):
            return x @ W + b
        fn = t.compile(f) if t is ember else f
        out = []
        for k in range(3):  # (recorded, replayed, then the unusual gradient)
            y = fn(x)
            g = t.ones(4, 2)
            if k == 2:
                y.data = t.ones(1, 2) * 2
                g = t.ones(1, 2)
            try:
                y.backward(g)
            except RuntimeError as e:
                out.append(str(e))
            if t is ember:
                vouched.append(y.grad_fn._usual_grads)
            out.append([W.grad, b.grad])
            W.grad = b.grad = None
        return out
    same(body)
    assert vouched == [True, True, True]


def test_compiled_node_vouches_for_its_gradients_as_recorded():
    """A recording whose program hands every source an array of its shape and dtype vouches
    for them (the one-node path then takes them without a look); one where a source gets no
    gradient does not (the engine looks, and gives that leaf nothing); torch's gradients
    either way."""
    vouched = []

    def body(t):
        W = t.ones(3, 2, requires_grad=True)
        b = t.ones(2, requires_grad=True)
        s = t.tensor(2.0, requires_grad=True)
        x = t.ones(4, 3)

        def every(x):
            return (x @ W + b).sum() * s

        def one_left(x):
            return (x @ W).sum() * s + (b > 0).sum()
        out = []
        for f in (every, one_left):
            fn = t.compile(f) if t is ember else f
            for _ in range(2):  # (recorded, then replayed)
                loss = fn(x)
                loss.backward()
                if t is ember:
                    vouched.append((fn.entries[0].usual_grads, loss.grad_fn._usual_grads))
                out.append([W.grad, b.grad, s.grad])
                W.grad = b.grad = s.grad = None
        return out
    same(body)
    assert vouched == [(True, True)] * 2 + [(False, False)] * 2


@pytest.mark.parametrize("path", ["one node", "general"])
def test_compiled_node_frees_its_saved_arrays_after_backward(path):
    """A backward without retain_graph frees what the compiled node saved (the engine clears
    it on the one-node path, the node's _release on the general one), and a second backward
    or a create_graph one then raises torch's error; with retain_graph it keeps them."""
    import gc
    import weakref

    def body(t):
        params, x = _mlp_params(t)
        loss_of = _compiled_loss(t, params, x)
        out = []
        for k in range(3):  # (recorded, then replayed)
            loss = loss_of(x)
            if path == "general":
                loss = loss + (params[3] ** 2).sum()
            if t is ember:
                node = loss.grad_fn if path == "one node" else loss.grad_fn.next_functions[0][0]
                kept = [weakref.ref(a) for a in node._saved
                        if type(a) is np.ndarray and a.base is None]
                made = [r for r in kept if not any(r() is p._data for p in params + [x])]
            loss.backward(retain_graph=k == 1)
            if t is ember:
                gc.collect()
                out.append(bool(made) and all((r() is None) is (k != 1) for r in made))
            else:
                out.append(True)
            for create_graph in (False, True):
                try:
                    t.autograd.grad(loss, params[0], create_graph=create_graph)
                    out.append("ran")
                except RuntimeError as e:
                    out.append(str(e))
        return out
    same(body)
