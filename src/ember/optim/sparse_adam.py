"""SparseAdam: Adam for sparse gradients (ember's parameters get dense ones: refused)."""
from __future__ import annotations

from .._tensor import Tensor
from .optimizer import Optimizer, _closure_loss, _use_grad_for_differentiable

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """SparseAdam: a masked Adam for parameters whose gradients have a sparse layout.

    NOTE: ember gives dense parameters dense gradients (``nn.Embedding(sparse=True)``
    included; sparse COO tensors exist, see docs/sparse.md, but no op makes a dense
    parameter's gradient sparse), and torch refuses dense gradients here: ``step`` raises
    torch's error for any gradient. The constructor accepts
    and checks its arguments as torch does.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Refuse the (dense) gradients, as torch does."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
        return loss
