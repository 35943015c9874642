"""Random numbers on the (fake) ``cuda`` device: CUDA generators beside the CPU generator.

A GPU tensor's draws come from a CUDA generator (``generator=`` or the default generator of
its GPU) and are made on the GPU; the CPU stream never moves for them, so CPU draws stay
torch's bit for bit. CUDA values are cuRAND's, not torch's: the tests check reproducibility,
state handling, devices, dtypes, ranges and rough statistics, and torch's errors.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember

F = ember.nn.functional


def _cuda_samples(dev):
    """One draw of every sampler on ``dev`` (a list of tensors)."""
    x = ember.rand(40, device=dev) + 0.1
    probs = ember.tensor([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]], device=dev)
    return [
        ember.rand(5, device=dev), ember.randn(2, 3, device=dev),
        ember.randint(-3, 9, (6,), device=dev), ember.randperm(7, device=dev),
        ember.normal(0.5, 2.0, (4,), device=dev), ember.rand_like(x), ember.randn_like(x),
        ember.randint_like(x, 4), ember.normal(x, 1.0), ember.normal(x, x),
        ember.normal(1.0, x), ember.bernoulli(x.clamp(max=1)), x.clone().bernoulli_(0.3),
        x.clone().bernoulli_(x.clamp(max=1)), ember.multinomial(probs, 3),
        ember.multinomial(probs, 9, replacement=True), ember.poisson(x * 4),
        ember._standard_gamma(x), ember._sample_dirichlet(x.reshape(8, 5)),
        ember.distributions.Binomial(ember.full((6,), 9.0, device=dev),
                                     ember.full((6,), 0.4, device=dev)).sample(),
        x.clone().uniform_(-2, 3), x.clone().normal_(1, 3), x.clone().exponential_(2),
        x.clone().geometric_(0.3), x.clone().log_normal_(), x.clone().cauchy_(),
        x.clone().random_(), x.clone().random_(5), x.clone().random_(-4, 4),
        ember.empty(3, dtype=ember.int64, device=dev).random_(-(1 << 63), None),
        F.dropout(ember.ones(30, device=dev), 0.5), F.alpha_dropout(x, 0.2, True),
        F.dropout2d(ember.ones(2, 3, 4, 4, device=dev), 0.5),
        F.rrelu(-x, training=True), ember.rand(2, 2, dtype=ember.complex64, device=dev),
        ember.randn(3, dtype=ember.float16, device=dev)]


def check_every_sampler_repeats(dev):
    """Every sampler draws on ``dev`` and draws the same again from the same seed or state
    (also run on a real GPU by test_cuda.py)."""
    ember.manual_seed(0)
    state = ember.cuda.get_rng_state()
    first = _cuda_samples(dev)
    assert all(t.device == ember.device(dev) for t in first)
    ember.manual_seed(0)
    again = _cuda_samples(dev)
    ember.cuda.set_rng_state(state)
    from_state = _cuda_samples(dev)
    for a, b, c in zip(first, again, from_state):
        assert a.dtype == b.dtype and a.tolist() == b.tolist() == c.tolist()
    assert ember.cuda.get_rng_state().tolist() != state.tolist()


def test_every_sampler_draws_on_the_device_and_repeats_from_a_state(cuda_device):
    check_every_sampler_repeats(cuda_device)


def test_gpu_draws_leave_the_cpu_stream_alone(cuda_device):
    ember.manual_seed(0)
    cpu_only = [ember.rand(4).tolist(), ember.randn(3).tolist()]
    ember.manual_seed(0)
    cpu_state = ember.get_rng_state()
    _cuda_samples(cuda_device)
    assert ember.get_rng_state().tolist() == cpu_state.tolist()
    assert [ember.rand(4).tolist(), ember.randn(3).tolist()] == cpu_only
    state = ember.get_rng_state()
    ember.cuda.manual_seed(5)  # (only the GPUs' generators)
    ember.cuda.manual_seed_all(6)
    ember.cuda.seed()
    assert ember.get_rng_state().tolist() == state.tolist()


def test_cuda_seeding_functions(cuda_device):
    c = ember.cuda
    c.manual_seed(7)
    assert c.initial_seed() == 7
    state = c.get_rng_state()
    assert (state.dtype, tuple(state.shape), state.device.type) == (ember.uint8, (16,), "cpu")
    assert state[:8].tolist() == list((7).to_bytes(8, "little"))
    assert state[8:].tolist() == [0] * 8
    a = ember.rand(3, device="cuda")
    offset = int.from_bytes(bytes(c.get_rng_state()[8:].tolist()), "little")
    assert offset > 0 and offset % 4 == 0
    c.manual_seed(7)
    assert ember.rand(3, device="cuda").tolist() == a.tolist()
    c.seed()
    assert c.initial_seed() != 7
    c.manual_seed_all(9)
    assert c.initial_seed() == 9 and [s[:8].tolist() for s in c.get_rng_state_all()] == [
        list((9).to_bytes(8, "little"))]
    c.set_rng_state_all([state])
    assert c.get_rng_state().tolist() == state.tolist()
    ember.manual_seed(11)  # (seeds every device)
    assert c.initial_seed() == 11


def test_cuda_generator_objects(cuda_device):
    g = ember.Generator("cuda").manual_seed(3)
    default_state = ember.cuda.get_rng_state()
    a = ember.rand(4, device="cuda", generator=g)
    assert ember.cuda.get_rng_state().tolist() == default_state.tolist()
    assert g.get_offset() > 0 and g.initial_seed() == 3 and g.device == ember.device("cuda")
    assert ember.rand(4, device="cuda", generator=g.manual_seed(3)).tolist() == a.tolist()
    g.manual_seed(3)
    clone = g.clone_state()
    shared = g.graphsafe_get_state()
    b = ember.randn(5, device="cuda", generator=g)
    assert shared.get_offset() == g.get_offset() != clone.get_offset()
    assert ember.randn(5, device="cuda", generator=clone).tolist() == b.tolist()
    restored = pickle.loads(pickle.dumps(g))
    assert restored.get_state().tolist() == g.get_state().tolist()
    g.set_offset(0)
    g.manual_seed(3)
    g.set_state(ember.tensor(list((3).to_bytes(8, "little")), dtype=ember.uint8))  # seed only
    assert g.get_offset() == 0
    assert ember.rand(4, device="cuda", generator=g).tolist() == a.tolist()


def test_cuda_generator_errors(cuda_device):
    g = ember.Generator("cuda")
    with pytest.raises(RuntimeError, match="^offset must be a multiple of 4$"):
        g.set_offset(3)
    with pytest.raises(RuntimeError, match="^RNG state is wrong size$"):
        g.set_state(ember.zeros(12, dtype=ember.uint8))
    with pytest.raises(TypeError, match="RNG state must be a ember.ByteTensor"):
        g.set_state(ember.zeros(16, dtype=ember.uint8, device="cuda"))
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but "
                                           "found 'cpu'"):
        ember.rand(2, device="cuda", generator=ember.Generator())
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but "
                                           "found 'cuda'"):
        ember.rand(2, generator=g)
    x = ember.zeros(3, dtype=ember.int64, device="cuda")
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cuda\" not implemented for "
                                                  "'Long'"):
        x.normal_()
    with pytest.raises(RuntimeError, match="random_full_64_bits_range_kernel_cuda handles only"):
        x.to(ember.int32).random_(-(1 << 63), None)


def test_distributions_and_ranges(cuda_device):
    check_distributions(cuda_device)


def check_distributions(dev):
    """Ranges and rough moments of draws on ``dev`` (also run on a real GPU by test_cuda.py)."""
    ember.manual_seed(1)
    n = 20000
    u = ember.empty(n, device=dev).uniform_(2, 5).cpu().numpy()
    assert 2 <= u.min() and u.max() < 5 and abs(u.mean() - 3.5) < 0.05
    z = ember.randn(n, dtype=ember.float64, device=dev).cpu().numpy()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
    k = ember.randint(3, 7, (n,), device=dev).cpu().numpy()
    assert set(np.unique(k)) == {3, 4, 5, 6}
    assert sorted(ember.randperm(50, device=dev).tolist()) == list(range(50))
    e = ember.empty(n, device=dev).exponential_(2).cpu().numpy()
    assert e.min() > 0 and abs(e.mean() - 0.5) < 0.03
    geo = ember.empty(n, device=dev).geometric_(0.25).cpu().numpy()
    assert geo.min() >= 1 and abs(geo.mean() - 4) < 0.2
    pois = ember.poisson(ember.full((n,), 3.0, device=dev)).cpu().numpy()
    assert abs(pois.mean() - 3) < 0.1
    gam = ember._standard_gamma(ember.full((n,), 2.0, device=dev)).cpu().numpy()
    assert abs(gam.mean() - 2) < 0.1
    probs = ember.tensor([0.0, 0.2, 0.0, 0.8], device=dev)
    picks = ember.multinomial(probs, n, replacement=True).cpu().numpy()
    assert set(np.unique(picks)) == {1, 3} and abs((picks == 3).mean() - 0.8) < 0.02
    two = ember.multinomial(probs.expand(500, 4), 2).cpu().numpy()
    assert (np.sort(two, 1) == [1, 3]).all()
    mask = F.dropout(ember.ones(n, device=dev), 0.3).cpu().numpy()
    assert set(np.unique(mask)) <= {0, np.float32(1 / 0.7)} and abs((mask == 0).mean() - 0.3) < 0.02


def test_poisson_node_and_gradient(cuda_device):
    rates = ember.full((4,), 2.0, device="cuda", requires_grad=True)
    out = ember.poisson(rates)
    assert type(out.grad_fn).__name__ == "PoissonBackward0" and out.is_cuda
    out.sum().backward()
    assert rates.grad.is_cuda and rates.grad.tolist() == [0.0] * 4
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        ember.poisson(ember.tensor([-1.0], device="cuda"))


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_replays_the_gpu_draws(cuda_device, use_reentrant):
    from ember.utils.checkpoint import checkpoint
    x = ember.rand(6, dtype=ember.float64, device="cuda", requires_grad=True)

    def fn(a):
        return (a.exp() * F.dropout(ember.ones_like(a), 0.5)).sum()
    ember.manual_seed(3)
    fn(x).backward()
    ref, x.grad = x.grad.tolist(), None
    ember.manual_seed(3)
    out = checkpoint(fn, x, use_reentrant=use_reentrant)
    state_after_forward = ember.cuda.get_rng_state()
    out.backward()
    assert x.grad.tolist() == ref
    assert ember.cuda.get_rng_state().tolist() == state_after_forward.tolist()


def test_fork_rng_restores_the_gpu_generator(cuda_device):
    ember.cuda.manual_seed(4)
    before = ember.cuda.get_rng_state()
    with ember.random.fork_rng(devices=[0]):
        ember.rand(3, device="cuda")
    assert ember.cuda.get_rng_state().tolist() == before.tolist()
