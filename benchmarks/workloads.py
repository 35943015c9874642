"""The workloads of ember's performance targets, written once against the torch API.

Each ``wN(lib, data)`` returns a ``step()`` callable; ``lib`` is ``ember`` or ``torch`` (the
same code runs on both, which is the point), on ``data["device"]`` ("cpu" unless the data was
made for a GPU). ``numpy_floor`` holds hand-written NumPy forward + backward for the workloads
where that floor is meaningful; on a GPU the same functions run on CuPy arrays (NumPy's
functions dispatch to CuPy's), which makes them the hand-written CuPy floor.
"""
from __future__ import annotations

import numpy as np

LR = 0.01
CHAIN = ("mulc", "add", "sin", "exp", "tanh", "mul")


def make_data(name, small=False):
    """Fixed float32 data for a workload (``small``: reduced sizes for the CI smoke run)."""
    rs = np.random.RandomState({"w1": 1, "w2": 2, "w3": 3, "w4": 4, "w5": 5, "w6": 6}[name])
    if name in ("w1", "w4"):
        n = {"w1": 300, "w4": 2000 if small else 20000}[name]
        return {"x": rs.uniform(-1, 1, (16,) if name == "w1" else (4,)).astype(np.float32),
                "n_ops": n}
    if name in ("w2", "w3"):
        batch, dims = (64, [784, 256, 10]) if name == "w2" else (512, [2048, 2048, 2048, 10])
        if small and name == "w3":
            batch, dims = 64, [256, 256, 256, 10]
        d = {"x": rs.randn(batch, dims[0]).astype(np.float32),
             "y": rs.randint(0, dims[-1], batch).astype(np.int64), "Ws": [], "bs": []}
        for a, b in zip(dims, dims[1:]):
            d["Ws"].append((rs.randn(a, b) * np.sqrt(2.0 / a)).astype(np.float32))
            d["bs"].append((rs.randn(b) * 0.01).astype(np.float32))
        return d
    if name == "w5":
        n = 64 if small else 256
        return {"x": rs.randn(n).astype(np.float32),
                "W": (rs.randn(n, n) / np.sqrt(n)).astype(np.float32),
                "v": rs.randn(n).astype(np.float32)}
    if name == "w6":
        batch = 8 if small else 32
        return {"x": rs.randn(batch, 1, 28, 28).astype(np.float32),
                "y": rs.randint(0, 10, batch).astype(np.int64),
                "Wc": (rs.randn(16, 1, 3, 3) * np.sqrt(2.0 / 9)).astype(np.float32),
                "bc": (rs.randn(16) * 0.01).astype(np.float32),
                "Wl": (rs.randn(2704, 10) * np.sqrt(2.0 / 2704)).astype(np.float32),
                "bl": (rs.randn(10) * 0.01).astype(np.float32)}
    raise KeyError(name)


def _tensor(lib, data, key, **kwargs):
    return lib.tensor(data[key], device=data.get("device", "cpu"), **kwargs)


def _host(t):
    return t.cpu().numpy()


def _compiled(lib, fn, compiled):
    """``fn`` itself, or ``lib.compile(fn)`` (the forward/loss function of a compiled step)."""
    return lib.compile(fn) if compiled else fn


def chain(lib, data, compiled=False):
    """W1 / W4: a chain of elementwise ops on one tensor, then backward."""
    x = _tensor(lib, data, "x", requires_grad=True)
    kinds = [CHAIN[i % 6] for i in range(data["n_ops"])]

    def forward(x):
        h = x
        for k in kinds:
            if k == "mulc":
                h = h * 0.9
            elif k == "add":
                h = h + x
            elif k == "sin":
                h = lib.sin(h)
            elif k == "exp":
                h = lib.exp(h)
            elif k == "tanh":
                h = lib.tanh(h)
            else:
                h = h * x
        return h.sum()
    forward = _compiled(lib, forward, compiled)

    def step():
        x.grad = None
        out = forward(x)
        out.backward()
        return out.item(), _host(x.grad)
    return step


def mlp_model(lib, data, compiled=False):
    """W2 / W3's tensors and loss function (ReLU, cross-entropy): ``(x, y, Ws, bs, loss_of)``."""
    F = lib.nn.functional
    x, y = _tensor(lib, data, "x"), _tensor(lib, data, "y")
    dev = data.get("device", "cpu")
    Ws = [lib.tensor(w, requires_grad=True, device=dev) for w in data["Ws"]]
    bs = [lib.tensor(b, requires_grad=True, device=dev) for b in data["bs"]]

    def loss_of(x, y):
        h = x
        for i, (W, b) in enumerate(zip(Ws, bs)):
            h = h @ W + b
            if i < len(Ws) - 1:
                h = h.relu()
        return F.cross_entropy(h, y)
    return x, y, Ws, bs, _compiled(lib, loss_of, compiled)


def mlp(lib, data, compiled=False):
    """W2 / W3: an MLP training step (ReLU, cross-entropy, SGD)."""
    x, y, Ws, bs, loss_of = mlp_model(lib, data, compiled)

    def step():
        loss = loss_of(x, y)
        loss.backward()
        grad = _host(Ws[0].grad).copy()
        with lib.no_grad():
            for p in Ws + bs:
                p -= LR * p.grad
                p.grad = None
        return loss.item(), grad
    return step


def hvp(lib, data, compiled=False):
    """W5: a Hessian-vector product by double backward."""
    x = _tensor(lib, data, "x", requires_grad=True)
    W, v = _tensor(lib, data, "W"), _tensor(lib, data, "v")

    def objective(x):
        return (lib.tanh(W @ x) ** 2).sum()
    objective = _compiled(lib, objective, compiled)

    def step():
        f = objective(x)
        (g,) = lib.autograd.grad(f, [x], create_graph=True)
        (hv,) = lib.autograd.grad((g * v).sum(), [x])
        return f.item(), _host(hv)
    return step


def conv(lib, data, compiled=False):
    """W6: a small CNN step (conv 3x3, ReLU, max-pool, linear, cross-entropy)."""
    F = lib.nn.functional
    x, y = _tensor(lib, data, "x"), _tensor(lib, data, "y")
    params = [_tensor(lib, data, k, requires_grad=True) for k in ("Wc", "bc", "Wl", "bl")]

    def loss_of(x, y):
        Wc, bc, Wl, bl = params
        h = F.max_pool2d(F.conv2d(x, Wc, bc).relu(), 2)
        return F.cross_entropy(h.reshape(h.shape[0], -1) @ Wl + bl, y)
    loss_of = _compiled(lib, loss_of, compiled)

    def step():
        Wc = params[0]
        for p in params:
            p.grad = None
        loss = loss_of(x, y)
        loss.backward()
        return loss.item(), _host(Wc.grad)
    return step


WORKLOADS = {
    "w1": ("W1 op overhead", "us/op", 1e6 / 300, chain),
    "w2": ("W2 small MLP step", "ms", 1e3, mlp),
    "w3": ("W3 big MLP step", "ms", 1e3, mlp),
    "w4": ("W4 deep chain", "s", 1.0, chain),
    "w5": ("W5 Hessian-vector product", "ms", 1e3, hvp),
    "w6": ("W6 conv step", "ms", 1e3, conv),
}


# -- the NumPy floor: the same maths, hand-differentiated ------------------------------------
def numpy_chain(data):
    x0 = data["x"]
    kinds = [CHAIN[i % 6] for i in range(data["n_ops"])]

    def step():
        h, tape = x0, []
        for k in kinds:
            tape.append(h)
            if k == "mulc":
                h = h * np.float32(0.9)
            elif k == "add":
                h = h + x0
            elif k == "sin":
                h = np.sin(h)
            elif k == "exp":
                h = np.exp(h)
            elif k == "tanh":
                h = np.tanh(h)
            else:
                h = h * x0
        out = h.sum()
        g, gx = np.ones_like(h), np.zeros_like(x0)
        for k, a in zip(reversed(kinds), reversed(tape)):
            if k == "mulc":
                g = g * np.float32(0.9)
            elif k == "add":
                gx = gx + g
            elif k == "sin":
                g = g * np.cos(a)
            elif k == "exp":
                g = g * np.exp(a)
            elif k == "tanh":
                g = g * (1 - np.tanh(a) ** 2)
            else:
                gx = gx + g * a
                g = g * x0
        return float(out), gx + g
    return step


def numpy_mlp(data):
    x, y = data["x"], data["y"]
    rows = np.arange(len(y), like=y)  # (made by CuPy when y is a CuPy array)
    Ws = [w.copy() for w in data["Ws"]]
    bs = [b.copy() for b in data["bs"]]

    def step():
        hs, h = [x], x
        for i, (W, b) in enumerate(zip(Ws, bs)):
            h = h @ W + b
            if i < len(Ws) - 1:
                h = np.maximum(h, 0)
            hs.append(h)
        shifted = h - h.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -logp[rows, y].mean()
        g = np.exp(logp)
        g[rows, y] -= 1
        g /= len(y)
        grads = []
        for i in reversed(range(len(Ws))):
            grads.append((hs[i].T @ g, g.sum(0)))
            if i:
                g = (g @ Ws[i].T) * (hs[i] > 0)
        grad0 = grads[-1][0].copy()
        for (gW, gb), W, b in zip(reversed(grads), Ws, bs):
            W -= LR * gW
            b -= LR * gb
        return float(loss), grad0
    return step


NUMPY_FLOOR = {"w1": numpy_chain, "w2": numpy_mlp, "w3": numpy_mlp, "w4": numpy_chain}
