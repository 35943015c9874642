"""LAPACK's QR in Householder form: ``geqrf`` (the reflectors below R's diagonal and their
scales ``tau``, from the array library's ``qr(mode='raw')``, which runs LAPACK geqrf) and
``ormqr`` (the product of those reflectors' Q with another matrix).

As in torch, geqrf has no derivative (its node raises); ormqr is differentiable in all three
inputs: it is computed here as the full Q of ``householder_product`` (padded with identity
reflectors) times ``other``, so its gradients come from householder_product's and matmul's.
"""
from __future__ import annotations

__all__ = ["geqrf", "ormqr"]

from .._backend import get_xp
from .linalg import matmul
from .linalg_decomp import _result, mH, refuse_low_precision
from .linalg_eig import householder_product
from .pointwise import refuse_forward_ad
from .registry import NONE, op

GeqrfResult = _result("geqrf", ["a", "tau"])


@op("geqrf", promote=NONE, outputs=2, node="GeqrfBackward0")
def _geqrf(self):
    xp = get_xp(self)
    h, tau = xp.linalg.qr(self, mode="raw")  # h: the reflectors and R, transposed
    return xp.ascontiguousarray(xp.swapaxes(h, -1, -2)), tau.astype(self.dtype, copy=False)


@_geqrf.grad("self")
def _(grad):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def geqrf(input, *, out=None):  # noqa: A002
    """``(a, tau)``: ``input``'s QR decomposition as LAPACK geqrf stores it (R on and above the
    diagonal of ``a``, the Householder vectors below it, their scales in ``tau``)."""
    if input.ndim < 2:
        raise RuntimeError("ember.geqrf: input must have at least 2 dimensions.")
    if input._data.dtype.kind not in "fc":
        raise NotImplementedError(f'"geqrf_cpu" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    refuse_low_precision(input, "geqrf_cpu")
    return GeqrfResult(*_geqrf(input))


def _full_q(input, tau):  # noqa: A002
    """The m x m Q of the first ``k = tau.shape[-1]`` reflectors of ``input`` (m x n): the
    reflectors beyond k are the identity (a zero tau)."""
    from .._creation import zeros
    from .shape import cat
    m, k = input.shape[-2], tau.shape[-1]
    a = input[..., :k]
    if m > k:
        pad = zeros(tuple(input.shape[:-2]) + (m, m - k), dtype=input.dtype,
                    device=input.device)
        a = cat([a, pad], -1)
        tau = cat([tau, zeros(tuple(tau.shape[:-1]) + (m - k,), dtype=tau.dtype,
                              device=tau.device)], -1)
    return householder_product(a, tau)


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):  # noqa: A002
    """``Q @ other`` (``Q^H`` with ``transpose``; ``other @ Q`` with ``left=False``) for the Q
    of geqrf's ``(input, tau)``, without forming it in torch (here: formed, then multiplied).
    torch's binding names tau ``input2`` and other ``input3``: so do these parameters."""
    name = "ember.ormqr"
    if input.ndim < 2 or input3.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input3.dtype != input.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but input "
                           f"has dtype{input.dtype.scalar_name} and other has dtype "
                           f"{input3.dtype.scalar_name}")
    if input2.dtype != input.dtype:
        raise RuntimeError(f"{name}: Expected input and tau to have the same dtype, but input "
                           f"has dtype{input.dtype.scalar_name} and tau has dtype "
                           f"{input2.dtype.scalar_name}")
    side = -2 if left else -1
    if input3.shape[side] != input.shape[-2]:
        what = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(f"{name}: {what} must be equal to input.shape[-2]")
    if input2.shape[-1] > input.shape[-1]:
        raise RuntimeError(f"{name}: tau.shape[-1] must be less than or equal to "
                           "input.shape[-1]")
    if input2.shape[-1] != min(input3.shape[side], input.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[-2], "
                           "input.shape[-1])")
    refuse_low_precision(input, "ormqr_cpu")
    refuse_forward_ad("ormqr", input, input2, input3)  # (torch's kernel has no formula)
    q = _full_q(input, input2)
    if transpose:
        q = mH(q)
    return matmul(q, input3) if left else matmul(input3, q)

