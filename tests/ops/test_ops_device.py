"""The op table on a ``cuda`` device: every op's forward, first-order gradients (raw arrays),
second-order gradients (create_graph) and forward-mode JVPs, computed on the device and
compared with the same computation on the CPU.

Without a GPU the device is ``fake_cupy``: arrays that refuse implicit conversion to NumPy and
mixing with NumPy arrays, as CuPy's do, so any op path that falls back to host NumPy fails
here. One dtype per row keeps the run short: float64 where the row has it (else its first
dtype, forward only for non-float rows). Values must agree with the CPU's to 1e-12 relative:
both run the same kernels (samplers, which draw from the device's own generator, are compared
on shapes, dtypes and devices only).
"""
from __future__ import annotations

import traceback
import warnings

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD

from .op_db import OP_DB
from .test_ops import _main_dtype, _samples, _seed, bind, outputs

TOL = dict(rtol=1e-12, atol=1e-12)
# On the CPU a whole float32 sum adds in torch's CPU order (to agree with torch to the last
# bit); a device adds in its own library's order, as torch's CUDA kernels do: a few ulps apart.
_SINGLE_TOL = dict(rtol=1e-6, atol=1e-7)
_TEST = "test_device"


def device_cases():
    params = []
    for row in OP_DB:
        if _TEST in row.skips:
            params.append(pytest.param(row, 0, None, id=row.name,
                                       marks=pytest.mark.skip(reason=row.skips[_TEST])))
            continue
        dt = _main_dtype(row)
        for i, s in enumerate(_samples(row.name, dt)):
            reason = row.xfail_reason(_TEST, s.name, dt)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            params.append(pytest.param(row, i, dt, id=f"{row.name}-{i}:{s.name}-{dt}",
                                       marks=marks))
    return params


def _moved(value, dev, leaves):
    """``value`` with every tensor in it copied to ``dev`` (leaves stay leaves)."""
    if isinstance(value, ember.Tensor):
        t = value.detach().to(dev).requires_grad_(value.requires_grad)
        leaves[id(value)] = t
        return t
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_moved(v, dev, leaves) for v in value)
    return value


def _host(t):
    # (the values: a result with torch's conjugate bit, ifft's of a real input, resolved)
    return None if t is None else t.detach().cpu().resolve_conj().resolve_neg().numpy()


def _device_of(t):
    return None if t is None else str(t.device)


class _Run:
    """One sample run on one device: what it raised, or its values, gradients and JVPs."""

    def __init__(self, row, sample, dev):
        self.error = self.trace = None
        args, kwargs, diff = bind(sample, ember, row.differentiable)
        self.input_devices = [dev] * len(diff)
        if dev != "cpu":
            leaves = {}
            args = [a if k in row.host_args else _moved(a, dev, leaves)
                    for k, a in enumerate(args)]
            kwargs = {k: _moved(v, dev, leaves) for k, v in kwargs.items()}
            diff = [leaves[id(t)] for t in diff]
        self.values, self.devices = [], []
        self.grads = self.second = self.tangents = ()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._run(row, sample, args, kwargs, diff)
            except Exception as err:  # noqa: BLE001 - compared between the devices
                self.error = (type(err), str(err))
                self.trace = traceback.format_exc()

    def _run(self, row, sample, args, kwargs, diff):
        outs = [o for o in outputs(row.op(*args, **kwargs)) if isinstance(o, ember.Tensor)]
        self.values = [_host(o) for o in outs]
        self.devices = [_device_of(o) for o in outs]
        live = [o for o in outs if o.requires_grad]
        if not (diff and live):
            return
        rng = np.random.default_rng(_seed(row.name, sample.name, "device"))
        gos = [ember.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype).to(o.device)
               for o in live]
        raw = ember.autograd.grad(live, diff, gos, retain_graph=True, allow_unused=True)
        self.grads = [(_host(g), _device_of(g)) for g in raw]
        if row.gradgrad and not sample.no_gradcheck:
            self._second_order(live, diff, gos, rng)
        if not sample.no_gradcheck:
            self._jvp(row, args, kwargs, diff, rng)

    def _second_order(self, live, diff, gos, rng):
        gos = [g.detach().requires_grad_() for g in gos]
        first = ember.autograd.grad(live, diff, gos, create_graph=True, allow_unused=True)
        total = None
        for g, x in zip(first, diff):
            w = ember.tensor(rng.standard_normal(tuple(x.shape))).to(x.dtype).to(x.device)
            if g is not None and g.requires_grad:
                term = (g * w).sum()
                total = term if total is None else total + term
        if total is not None:
            second = ember.autograd.grad(total, diff + gos, allow_unused=True)
            self.second = [(_host(g), _device_of(g)) for g in second]

    def _jvp(self, row, args, kwargs, diff, rng):
        index = {id(t): k for k, t in enumerate(diff)}
        tans = [ember.tensor(rng.standard_normal(tuple(x.shape))).to(x.dtype).to(x.device)
                for x in diff]
        with fwAD.dual_level():
            duals = {}

            def dual(v):
                k = index.get(id(v))
                if k is None:
                    return v
                duals[k] = fwAD.make_dual(v.detach().clone().requires_grad_(), tans[k])
                return duals[k]
            a = [dual(v) if isinstance(v, ember.Tensor) else
                 type(v)(dual(x) for x in v) if isinstance(v, (list, tuple)) and any(
                     isinstance(x, ember.Tensor) for x in v) else v for v in args]
            k = {n: dual(v) for n, v in kwargs.items()}
            outs = [o for o in outputs(row.op(*a, **k)) if isinstance(o, ember.Tensor)]
            self.tangents = [(_host(t), _device_of(t)) for t in
                             (fwAD.unpack_dual(o).tangent for o in outs)]


def _same(a, b, what, values=True, tol=TOL):
    assert (a is None) == (b is None), f"{what}: None on one device only"
    if a is None:
        return
    assert a.shape == b.shape and a.dtype == b.dtype, (
        f"{what}: {a.shape} {a.dtype} on the device, {b.shape} {b.dtype} on the CPU")
    if not values:
        return
    if a.dtype.kind in "fc":
        if tol is TOL and a.dtype.itemsize <= 4 * (1 + (a.dtype.kind == "c")):
            tol = _SINGLE_TOL
        np.testing.assert_allclose(a, b, equal_nan=True, err_msg=what, **tol)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def _same_pairs(dev_pairs, cpu_pairs, dev, what, values=True, tol=TOL):
    assert len(dev_pairs) == len(cpu_pairs), f"{what}: count differs"
    for k, ((a, da), (b, _)) in enumerate(zip(dev_pairs, cpu_pairs)):
        _same(a, b, f"{what} {k}", values, tol)
        assert a is None or da == dev, f"{what} {k} is on {da}, not on {dev}"


def check_on_device(row, i, dt, device, tol=TOL):
    """Run sample ``i`` of ``row`` on the CPU and on ``device`` and compare everything."""
    sample = _samples(row.name, dt)[i]
    cpu = _Run(row, sample, "cpu")
    dev = _Run(row, sample, device)
    if cpu.error is not None or dev.error is not None:
        assert dev.error == cpu.error, (f"raised {dev.error} on the device, {cpu.error} on the "
                                        f"CPU\n{dev.trace or cpu.trace}")
        return
    values = not row.random  # (a sampler draws from the device's own generator)
    assert len(dev.values) == len(cpu.values)
    for k, (a, b) in enumerate(zip(dev.values, cpu.values)):
        _same(a, b, f"output {k}", values, tol)
        assert dev.devices[k] == device, f"output {k} is on {dev.devices[k]}"
    _same_pairs(dev.grads, cpu.grads, device, "gradient", values, tol)
    _same_pairs(dev.second, cpu.second, device, "second-order gradient", values, tol)
    _same_pairs(dev.tangents, cpu.tangents, device, "tangent", values, tol)


@pytest.mark.parametrize("row,i,dt", device_cases())
def test_device(row, i, dt, cuda_device):
    check_on_device(row, i, dt, cuda_device)
