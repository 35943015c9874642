"""Lazy modules against torch 2.13: sizes read from the first input, the module becoming the
ordinary one (hooks and mode kept), uninitialized parameters refusing their shape."""
from oracle import same


def test_lazy_modules():
    def body(torch):
        nn = torch.nn
        m = nn.LazyLinear(3)
        before = (repr(m), type(m.weight).__name__, repr(nn.UninitializedParameter()))
        try:
            m.weight.shape
        except RuntimeError as e:
            err = str(e)
        calls = []
        m.register_forward_hook(lambda mod, i, o: calls.append(type(mod).__name__))
        m(torch.ones(2, 5))
        linear = (type(m).__name__, m.weight.shape, repr(m), calls)
        c = nn.LazyConv2d(4, 3)
        c(torch.ones(1, 2, 5, 5))
        c1 = nn.LazyConv1d(4, 3, bias=False)
        c1(torch.ones(2, 5))
        ct = nn.LazyConvTranspose2d(4, 3, groups=2)
        ct(torch.ones(1, 2, 5, 5))
        convs = (type(c).__name__, c.weight.shape, c1.weight.shape, c1.bias, ct.weight.shape)
        b = nn.LazyBatchNorm1d()
        b_repr = repr(b)
        b(torch.ones(4, 3))
        i = nn.LazyInstanceNorm2d(affine=True)
        i(torch.ones(2, 3, 4, 4))
        norms = (b_repr, type(b).__name__, b.running_mean.shape, b.num_batches_tracked,
                 type(i).__name__, i.weight.shape)
        s = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
        s.eval()
        seq = (s(torch.ones(3, 6)).shape, s[0].training, len(list(s.parameters())))
        return before, err, linear, convs, norms, seq
    same(body, grad_fn=False)


def test_lazy_modules_build_with_the_placeholders_dtype():
    def body(torch):
        f64 = torch.float64
        out = []
        for make, x in [(lambda: torch.nn.LazyLinear(3, dtype=f64), torch.ones(2, 4, dtype=f64)),
                        (lambda: torch.nn.LazyLinear(3).double(), torch.ones(2, 4, dtype=f64)),
                        (lambda: torch.nn.LazyLinear(3, dtype=f64).float(), torch.ones(2, 4)),
                        (lambda: torch.nn.LazyBatchNorm1d().double(), torch.ones(2, 4, dtype=f64)),
                        (lambda: torch.nn.LazyConv2d(2, 3).double(),
                         torch.ones(1, 1, 4, 4, dtype=f64))]:
            m = make()
            m(x)
            out.append([(n, t.dtype) for n, t in [*m.named_parameters(), *m.named_buffers()]])
        norm = torch.nn.InstanceNorm2d(3, affine=True).double()
        out.append((norm.weight.dtype, norm(torch.ones(1, 3, 2, 2, dtype=f64)).dtype))
        return out
    same(body, grad_fn=False)
