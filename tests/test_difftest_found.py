"""Differences the random-program generator (tests/difftest) found, shrunk to the program
steps that show them, each checked against torch (``oracle.same``; skipped without torch).
The docstring of each test names the run that found it."""
from __future__ import annotations

from oracle import same


def test_batch_norm_in_eval_with_a_negative_running_variance_is_quiet():
    """Seed 30000231: NaN where torch gives NaN, without NumPy's sqrt warning."""
    def body(t):
        m = t.nn.BatchNorm1d(4)
        m(t.tensor([[1.54, 0.22, 1.71, -0.6], [1.24, -1.44, 0.77, -0.44]], requires_grad=True))
        m.running_var.neg_()
        m.eval()
        return m(t.ones(4, 4, requires_grad=True))
    same(body)


def test_singular_matrix_error_is_torchs_class():
    """Seed 30000341: torch.linalg.LinAlgError is torch._C._LinAlgError, reported by that
    name."""
    def body(t):
        try:
            t.linalg.inv(t.zeros(2, 3, 3, dtype=t.float64))
        except t.linalg.LinAlgError as e:
            return type(e).__name__, str(e), isinstance(e, RuntimeError)
    same(body)
