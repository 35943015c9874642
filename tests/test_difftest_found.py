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


def test_scatter_with_a_reduce_and_index_reduce_warn_once_per_process():
    """Seeds 12 and 25 of the bounded run: torch's deprecation of ``scatter(..., reduce=)``
    with a tensor source and its beta warning of ``index_reduce`` are TORCH_WARN_ONCE (every
    time only under ``set_warn_always(True)``); ember's scatter warned at every call, its
    index_reduce never again even with warnings always on."""
    import warnings

    def body(t):
        x = t.tensor([-1.62, 0.3, -1.21])
        index = t.tensor([2, 0, 2])
        t.scatter(x, -1, index, x, reduce="add")  # (the process's first warning, if any)
        x.index_reduce(0, index[:1], x[:1], "prod")
        with warnings.catch_warnings(record=True) as later:
            warnings.simplefilter("always")
            out = t.scatter(x, -1, index, x, reduce="add"), x.index_reduce(0, index, x, "amax")
            t.set_warn_always(True)
            try:
                t.scatter(x, 0, index, x, reduce="multiply")
                x.index_reduce(0, index, x, "mean")
            finally:
                t.set_warn_always(False)
        return out, [str(w.message).split(" (Triggered")[0] for w in later]
    same(body)
