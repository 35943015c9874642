"""The ``meta`` device against torch: tensors with a shape, a dtype and strides but no data."""
import time
import tracemalloc

import pytest
from oracle import same

import ember


def describe(t):
    """What a meta tensor has: everything but values."""
    fn = t.grad_fn
    return (repr(t), tuple(t.shape), t.stride(), str(t.dtype), str(t.device), t.is_meta,
            t.requires_grad, t.is_leaf, None if fn is None else type(fn).__name__)


def test_factories():
    same(lambda torch: [describe(t) for t in (
        torch.empty(2, 3, device="meta"), torch.zeros(3, dtype=torch.int64, device="meta"),
        torch.ones((), device="meta"), torch.empty(0, device="meta"),
        torch.full((2,), 1.5, device="meta", dtype=torch.float64),
        torch.rand(2, 3, device="meta"), torch.randn(4, device="meta", requires_grad=True),
        torch.randint(0, 5, (3,), device="meta"), torch.arange(5, device="meta"),
        torch.tensor([1.0, 2.0], device="meta"), torch.eye(3, device="meta", dtype=torch.bool),
        torch.empty(2, 3, device=torch.device("meta")).new_zeros(4),
        torch.zeros_like(torch.empty(2, 3, device="meta")),
        torch.empty_like(torch.empty(2, 3, device="meta"), dtype=torch.complex64))])


def test_random_factories_draw_nothing():
    def body(torch):
        torch.manual_seed(0)
        torch.randn(100, device="meta")
        torch.rand(3, device="meta")
        return torch.randn(3)
    same(body)


def test_huge_tensor_costs_nothing():
    tracemalloc.start()
    try:
        start = time.perf_counter()
        x = ember.empty(10 ** 12, device="meta", requires_grad=True)
        y = (x.reshape(10 ** 6, 10 ** 6).t() * 2 + 1).exp().sum(1)
        y.sum().backward()
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert y.shape == (10 ** 6,) and x.grad.shape == (10 ** 12,) and x.grad.is_meta
    assert peak < 50 * 2 ** 20, peak  # (a real float32 array would be 4 TB)
    assert elapsed < 30, elapsed
    same(lambda torch: describe(torch.empty(10 ** 12, device="meta").reshape(10 ** 6, -1)
                                .t()[1:, ::2]))


def test_products_of_huge_meta_tensors_cost_nothing():
    # (a convolution's and a matmul's results here would take terabytes if made)
    def body(torch):
        conv = torch.nn.Conv2d(3, 5, 2, device="meta")
        big = torch.rand(2 ** 10, 3, 2 ** 16, 2 ** 16, device="meta")
        a = torch.empty(7, 1, 10 ** 6, 3, device="meta")
        b = torch.empty(5, 3, 10 ** 6, device="meta")
        return [describe(t) for t in (conv(big), a @ b, a[0, 0] @ b[0, :, 0],
                                      b[0, :, 0] @ b[0], torch.matmul(a, b[0]))]
    same(body)


def test_cat_and_advanced_indexing_cost_nothing():
    """cat, stack and indexing with index tensors give their results' shapes without making
    them (each result here would take tens of gigabytes)."""
    def body(torch):
        a = torch.empty(10 ** 5, 10 ** 5, device="meta", requires_grad=True)
        b = torch.empty(10 ** 5, 10 ** 5, device="meta")
        i = torch.tensor([0, 5, 7])
        m = torch.empty(10 ** 4, dtype=torch.long, device="meta")
        out = (torch.cat([a, b]), torch.cat([a, b], 1), torch.stack([a, b], 1), a[i],
               a[:, i], a[i, i], a[m], a[..., m, None], a[None, m, 3], b[m][:, i])
        out[0].sum().backward()
        return [describe(t) for t in out] + [describe(a.grad)]
    tracemalloc.start()
    try:
        start = time.perf_counter()
        body(ember)
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2 ** 20, peak
    assert elapsed < 30, elapsed
    same(body)


def test_meta_cat_and_indexing_check_shapes():
    def body(torch):
        a, b = torch.empty(3, 4, device="meta"), torch.empty(3, 5, device="meta")
        out = []
        for f in (lambda: torch.cat([a, b]), lambda: torch.stack([a, b]),
                  lambda: a[torch.tensor([3])], lambda: a[0, 0, torch.tensor([0])]):
            try:
                out.append(describe(f()))
            except Exception as e:  # noqa: BLE001 - the type is compared
                out.append(type(e).__name__)
        return out
    same(body)


def test_meta_matmul_checks_shapes():
    same(lambda torch: torch.empty(3, 2, 4, device="meta")
         @ torch.empty(2, 4, 5, device="meta"))


def test_views_and_strides():
    def body(torch):
        x = torch.empty(2, 3, 4, device="meta")
        views = (x.t() if x.dim() == 2 else x.transpose(0, 2), x[:, 1:], x[1], x[..., ::2],
                 x.permute(2, 0, 1), x.unsqueeze(1), x[None].expand(5, 2, 3, 4),
                 x.reshape(6, 4), x.view(-1), x.flatten(1), x.narrow(2, 1, 2), x.select(1, 2),
                 x.diagonal(0, 1, 2), x.unbind(1)[2], x.split(2, 2)[1], x.movedim(0, -1),
                 x.squeeze(), x.mT, x.permute(2, 0, 1).reshape(4, 6))
        return [describe(v) + (v.storage_offset(), v.is_contiguous()) for v in views]
    same(body)


_FORWARD = [
    "x + 1", "x * y", "x.t() * 2", "x - y.double()", "x > 0", "x.int() // 2", "x / 2",
    "torch.exp(x)", "x.sum()", "x.sum(0, keepdim=True)", "x.mean(1)", "x.max()", "x.max(1)",
    "x.argmax(1)", "x.std(0)", "x.cumsum(1)", "x.sort(1)", "x.topk(2, 1)", "x @ y.t()",
    "torch.cat([x, y])", "torch.stack([x, y], 1)", "torch.where(x > 0, x, y)",
    "x.softmax(1)", "torch.log_softmax(x, 0)", "x.clamp(0, 1)", "x.to(torch.float16)",
    "x.gather(1, torch.zeros(2, 2, dtype=torch.long, device='meta'))",
    "x[torch.tensor([1, 0])]", "x.repeat(2, 1)", "x.flip(0)", "x.roll(1, 1)",
    "torch.nn.functional.linear(x, torch.empty(4, 3, device='meta'))",
    ("torch.nn.functional.conv2d(torch.empty(1, 3, 8, 8, device='meta'), "
     "torch.empty(4, 3, 3, 3, device='meta'), padding=1)"),
    "torch.nn.functional.max_pool2d(torch.empty(1, 3, 8, 8, device='meta'), 2)",
    "torch.nn.functional.layer_norm(x, (3,))",
    "torch.nn.functional.cross_entropy(x, torch.zeros(2, dtype=torch.long, device='meta'))",
    "torch.nn.functional.embedding(torch.zeros(4, dtype=torch.long, device='meta'), x)",
    "torch.tensor(2.0) * x", "x + torch.tensor(1.0)", "x.clone().add_(y)", "x.clone().zero_()",
    "torch.einsum('ij,kj->ik', x, y)", "x.abs().sqrt().log1p()", "x.t().contiguous()",
    "x.t() @ y", "torch.where(x.t() > 0, x.t(), 0.0)", "x.t().clamp(0, 1)",
]


@pytest.mark.parametrize("expr", _FORWARD)
def test_op_results(expr):
    def body(torch):
        x = torch.empty(2, 3, device="meta")  # noqa: F841 - read by the expression
        y = torch.empty(2, 3, device="meta")  # noqa: F841
        out = eval(expr)
        outs = out if isinstance(out, tuple) else (out,)
        return [describe(o) for o in outs]
    same(body)


def test_backward_gives_meta_gradients():
    def body(torch):
        w = torch.empty(3, 4, device="meta", requires_grad=True)
        b = torch.zeros(4, device="meta", requires_grad=True)
        x = torch.empty(5, 3, device="meta")
        loss = torch.relu(x @ w + b).pow(2).mean()
        loss.backward()
        g, = torch.autograd.grad((x @ w).sum(), w, create_graph=True)
        return [describe(t) for t in (loss, w.grad, b.grad, g)]
    same(body)


def test_data_access_errors():
    def attempts(torch):
        x = torch.empty(2, 3, device="meta")
        return [lambda: x.item(), lambda: x[0, 0].item(), lambda: x.tolist(),
                lambda: x.numpy(), lambda: x.to("cpu"), lambda: x.cpu(),
                lambda: float(x[0, 0]), lambda: bool(x[0, 0]), lambda: int(x[0, 0]),
                lambda: x.nonzero(), lambda: x[x > 0], lambda: torch.ones(2, 3).copy_(x),
                lambda: x + torch.ones(2, 3), lambda: torch.ones(2, 3) + x,
                lambda: torch.cat([x, torch.ones(2, 3)]), lambda: x.cuda(),
                lambda: torch.equal(x, x), lambda: torch.allclose(x, x)]

    def body(torch):
        out = []
        for attempt in attempts(torch):
            try:
                attempt()
                out.append(None)
            except Exception as e:  # noqa: BLE001 - type and text are compared
                out.append((type(e).__name__, str(e)))
        return out
    same(body)


def test_printing_and_flags():
    def body(torch):
        x = torch.empty(2, 3, device="meta", dtype=torch.float64, requires_grad=True)
        y = x.sum()
        return (repr(x), str(y), repr(torch.empty(2, dtype=torch.int64, device="meta")),
                f"{y}", f"{x}",
                x.is_meta, x.device.type, x.get_device(), x.is_cpu, x.is_cuda,
                torch.empty(2).is_meta, x.data_ptr(), x.untyped_storage().nbytes())
    same(body)


def test_modules_on_meta():
    def body(torch):
        net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
        moved = net.to("meta")
        params = [describe(p) for p in net.parameters()]
        buffers = [describe(b) for b in net.buffers()]
        out = describe(net(torch.empty(5, 3, device="meta")))
        back = net.to_empty(device="cpu")
        return (moved is net, params, buffers, out, back is net,
                [(str(p.device), tuple(p.shape)) for p in net.parameters()])
    same(body)


def test_device_context_and_default_device():
    def body(torch):
        with torch.device("meta"):
            lin = torch.nn.Linear(2, 3)
            made = torch.ones(2)
        after = torch.ones(2)
        torch.set_default_device("meta")
        try:
            default = (torch.zeros(3), torch.get_default_device())
        finally:
            torch.set_default_device(None)
        return (describe(lin.weight), describe(made), str(after.device),
                describe(default[0]), str(default[1]), str(torch.get_default_device()))
    same(body)


def test_skip_init():
    def body(torch):
        lin = torch.nn.utils.skip_init(torch.nn.Linear, 4, 2)
        conv = torch.nn.utils.skip_init(torch.nn.Conv1d, 2, 3, 3, device="meta")
        return ([(str(p.device), tuple(p.shape), p.requires_grad) for p in lin.parameters()],
                [describe(p) for p in conv.parameters()])
    same(body)


def test_functional_call_over_stacked_parameters_with_a_meta_module():
    """A module moved to meta serves as a template: functional_call and vmap run it on real
    stacked parameters, and the results are real."""
    def body(torch):
        functional_call, stack_module_state = (torch.func.functional_call,
                                               torch.func.stack_module_state)
        torch.manual_seed(0)
        nets = [torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                    torch.nn.Linear(8, 2)) for _ in range(3)]
        params, buffers = stack_module_state(nets)
        template = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                       torch.nn.Linear(8, 2)).to("meta")
        x = torch.randn(5, 4)

        def run(p, b, inputs):
            return functional_call(template, (p, b), (inputs,))
        batched = torch.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
        looped = torch.stack([net(x) for net in nets])
        return batched, torch.allclose(batched, looped, atol=1e-6), describe(template[0].bias)
    same(body, rtol=1e-5, atol=1e-6)


def test_in_place_and_copy():
    def body(torch):
        x = torch.empty(2, 3, device="meta")
        y = x.clone()
        y.copy_(torch.ones(2, 3))
        y.mul_(torch.ones(2, 3))
        z = torch.empty(2, 3, device="meta", requires_grad=True) * 1
        z.add_(1)
        return [describe(t) + (t._version,) for t in (y, z)]
    same(body)


def test_meta_device_needs_no_torch():
    x = ember.empty(3, 2, device="meta")
    assert x.is_meta and x.t().stride() == (1, 2)
    with pytest.raises(NotImplementedError, match="no data"):
        x.cpu()


def test_load_state_dict_into_a_meta_module():
    def body(torch):
        with torch.device("meta"):
            lazy = torch.nn.Linear(2, 3)
            copied = torch.nn.Linear(2, 3)
        source = torch.nn.Linear(2, 3)
        lazy.load_state_dict(source.state_dict(), assign=True)
        copied.load_state_dict(source.state_dict())  # (a no-op, with torch's warning)
        return (str(lazy.weight.device), type(lazy.weight).__name__, lazy.weight.requires_grad,
                torch.equal(lazy.weight, source.weight), describe(copied.weight))
    same(body)


def test_save_load_and_pickle():
    def body(torch):
        import io
        import pickle
        buffer = io.BytesIO()
        x = torch.empty(2, 3, device="meta", dtype=torch.float64)
        torch.save({"x": x, "p": torch.nn.Parameter(torch.empty(4, device="meta"))}, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer)
        return (describe(loaded["x"]), describe(loaded["p"]), type(loaded["p"]).__name__,
                describe(pickle.loads(pickle.dumps(x))))
    same(body)


def test_layers_and_optimizers_on_meta():
    def body(torch):
        with torch.device("meta"):
            lstm = torch.nn.LSTM(4, 5, batch_first=True)
            layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
            emb = torch.nn.Embedding(10, 4)
            lin = torch.nn.Linear(2, 3)
        out, (h, c) = lstm(torch.empty(2, 7, 4, device="meta"))
        q = torch.empty(2, 4, 8, device="meta")
        attn = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        opt = torch.optim.Adam(lin.parameters())
        lin(torch.empty(4, 2, device="meta")).sum().backward()
        opt.step()
        return [describe(t) for t in (
            out, h, c, layer(torch.empty(2, 5, 16, device="meta")), attn,
            emb(torch.zeros(3, dtype=torch.long, device="meta")), lin.weight.grad,
            opt.state[lin.weight]["exp_avg"])]
    same(body)


def test_autograd_features_on_meta():
    """Forward mode, vmap, double backward, hooks, checkpointing, jacobians, accumulation
    and gradient clipping all run on meta tensors and give meta results."""
    def body(torch):
        fw_ad = torch.autograd.forward_ad
        x = torch.empty(3, device="meta")
        with fw_ad.dual_level():
            dual = fw_ad.make_dual(x, torch.empty(3, device="meta"))
            tangent = fw_ad.unpack_dual((dual.sin() * 2).sum()).tangent
        batched = torch.vmap(lambda a: a @ a.T)(torch.empty(4, 2, 3, device="meta"))
        w = torch.empty(3, requires_grad=True, device="meta")
        seen = []
        w.register_hook(lambda g: seen.append(tuple(g.shape)))
        g, = torch.autograd.grad((w ** 3).sum(), w, create_graph=True)
        second, = torch.autograd.grad(g.sum(), w)
        for _ in range(2):
            torch.utils.checkpoint.checkpoint(lambda a: a.sin().exp(), w,
                                              use_reentrant=False).sum().backward()
        jac = torch.autograd.functional.jacobian(lambda a: a.sin(), x)
        lin = torch.nn.Linear(3, 2, device="meta")
        lin(torch.empty(1, 3, device="meta")).sum().backward()
        norm = torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
        ints = torch.empty(3, dtype=torch.int32, device="meta")
        return ([describe(t) for t in (tangent, batched, second, w.grad, jac, norm,
                                       lin.weight.grad, ints + 1.5, ints / 2, ints.sum())],
                seen)
    same(body, check_warnings=False)  # (torch warns about its own jit on first use)


@pytest.mark.parametrize("source, target", [("meta", None), ("meta", "cpu"), ("cpu", "meta")])
def test_like_factories_keep_the_layout_of_a_meta_tensor(source, target):
    # a *_like result of a meta tensor, or made on meta, is laid out as for a CPU tensor
    def body(torch):
        base = torch.ones(2, 3, 4, 5, device=source)
        examples = [torch.ones(3, 4, device=source).t(), base.permute(0, 2, 3, 1),
                    base.contiguous(memory_format=torch.channels_last), base[:, :, ::2],
                    torch.ones(3, 1, device=source).expand(3, 4)]
        makers = [torch.empty_like, torch.zeros_like, torch.ones_like, torch.rand_like,
                  torch.randn_like, lambda x, **kw: torch.full_like(x, 2.0, **kw),
                  lambda x, **kw: torch.randint_like(x, 5, **kw)]
        device = {} if target is None else {"device": target}
        out = []
        for x in examples:
            for make in makers:
                for fmt in ({}, {"memory_format": torch.contiguous_format},
                            {"memory_format": torch.channels_last}):
                    try:
                        made = make(x, **device, **fmt)
                        out.append((made.stride(), str(made.device)))
                    except RuntimeError as e:
                        out.append(str(e))
        return out
    same(body)
