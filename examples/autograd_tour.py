"""A tour of ember's autograd: ``python examples/autograd_tour.py``.

Fits a cubic to sin(x) with autograd, then shows the graph autograd recorded, a custom
Function, a second derivative, and the errors that protect you from wrong gradients.
"""
from __future__ import annotations

import math

import ember


def fit_polynomial(steps=2000, lr=1e-6):
    """The classic tutorial: y = a + b x + c x^2 + d x^3 fitted to sin(x) by gradient descent."""
    ember.manual_seed(0)
    x = ember.linspace(-math.pi, math.pi, 2000)
    y = ember.sin(x)
    a, b, c, d = (ember.randn((), requires_grad=True) for _ in range(4))
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        if t % 400 == 399:
            print(f"  step {t + 1:4d}  loss {loss.item():10.3f}")
        loss.backward()
        with ember.no_grad():
            for p in (a, b, c, d):
                p -= lr * p.grad
                p.grad = None
    print(f"  result: y = {a.item():.4f} + {b.item():.4f} x + {c.item():.4f} x^2 "
          f"+ {d.item():.4f} x^3")
    return loss


def show_graph(loss):
    """Walk the graph behind a tensor: each node is named as PyTorch names it."""
    seen, stack = set(), [(loss.grad_fn, 0)]
    while stack:
        fn, depth = stack.pop()
        if fn is None or fn in seen or depth > 5:
            continue
        seen.add(fn)
        label = fn.name()
        if hasattr(fn, "variable"):
            label += f"  (leaf of shape {tuple(fn.variable.shape)})"
        print("  " + "  " * depth + label)
        stack.extend((nxt, depth + 1) for nxt, _ in reversed(fn.next_functions))


class Cube(ember.autograd.Function):
    """A custom op with its own backward, as in torch.autograd.Function."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


def higher_order():
    x = ember.tensor([0.5, 1.0, 2.0], requires_grad=True)
    y = Cube.apply(x).sum()
    (dy,) = ember.autograd.grad(y, x, create_graph=True)
    (d2y,) = ember.autograd.grad(dy.sum(), x)
    print(f"  y = sum(x^3) at x = {x.tolist()}")
    print(f"  dy/dx   = {dy.detach().tolist()}  (3x^2)")
    print(f"  d2y/dx2 = {d2y.tolist()}  (6x)")
    print(f"  y.grad_fn = {y.grad_fn.name()}, fed by {y.grad_fn.next_functions[0][0].name()}")


def safety_checks():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.add_(1)  # exp saved its output for backward; changing it in place breaks that
    try:
        y.sum().backward()
    except RuntimeError as e:
        print("  in-place check:", str(e).split(" Hint")[0])
    try:
        (x * 2).backward()
    except RuntimeError as e:
        print("  implicit gradient:", e)


def main():
    print("ember: define-by-run autograd on NumPy, with PyTorch's API\n")
    print("1. Fit a cubic to sin(x) by gradient descent")
    loss = fit_polynomial()
    print("\n2. The graph autograd recorded for the last loss")
    show_graph(loss)
    print("\n3. A custom Function and a second derivative (create_graph=True)")
    higher_order()
    print("\n4. Errors that keep gradients honest")
    safety_checks()


if __name__ == "__main__":
    main()
