"""ember.fft, stft / istft, window functions, ember.special and the new linalg functions
against torch, beyond the op table: factories (frequencies, windows), argument errors,
warnings, derivatives torch refuses, and gradients through whole spectral pipelines.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

import ember


def catch(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - the error is the result
        return (type(e).__name__, str(e))


# -- frequencies, shifts, windows ----------------------------------------------------------------
def test_frequencies():
    def body(torch):
        return [torch.fft.fftfreq(5), torch.fft.fftfreq(6, d=0.3, dtype=torch.float64),
                torch.fft.rfftfreq(7, 2.0), torch.fft.rfftfreq(4, requires_grad=True),
                torch.fft.fftfreq(4, dtype=torch.complex64),
                catch(lambda: torch.fft.fftfreq(4, dtype=torch.int64))]
    same(body)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
def test_windows(name):
    def body(torch):
        f = getattr(torch, name)
        return [f(0), f(1), f(6), f(7, False), f(5, dtype=torch.float64, requires_grad=True),
                catch(lambda: f(4, dtype=torch.int64)), catch(lambda: f(-1))]
    same(body)


def test_window_parameters():
    def body(torch):
        return [torch.hamming_window(6, False, 0.5, 0.4), torch.kaiser_window(6, True, 5.0),
                torch.kaiser_window(7, False, 2.0, dtype=torch.float64)]
    same(body)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "cosine", "exponential", "gaussian",
                                  "general_hamming", "hamming", "hann", "kaiser", "nuttall"])
def test_signal_windows(name):
    def body(torch):
        f = getattr(torch.signal.windows, name)
        return [f(0), f(1), f(6), f(7, sym=False), f(5, dtype=torch.float64, requires_grad=True),
                catch(lambda: f(-1)), catch(lambda: f(3, dtype=torch.int64))]
    same(body)


def test_signal_window_errors():
    def body(torch):
        w = torch.signal.windows
        return [w.general_cosine(5, a=[0.5, 0.3, 0.2]), catch(lambda: w.general_cosine(3, a=3)),
                catch(lambda: w.gaussian(4, std=-1.0)), catch(lambda: w.exponential(4, tau=0.0)),
                catch(lambda: w.exponential(4, center=1.0)), catch(lambda: w.kaiser(3, beta=-1.0)),
                w.exponential(5, sym=False, center=1.0, tau=2.0)]
    same(body)


# -- fft argument errors and dtypes ---------------------------------------------------------------
def test_fft_errors_and_dtypes():
    def body(torch):
        x = torch.tensor(np.arange(6.0).reshape(2, 3))
        z = torch.complex(x, x)
        F = torch.fft
        return [F.fft(torch.arange(4)), F.fft(torch.tensor([True, False])),
                F.rfft(x.float()), F.irfft(z.to(torch.complex64)), F.fftn(torch.tensor(2.0)),
                catch(lambda: F.rfft(z)), catch(lambda: F.rfftn(z)), catch(lambda: F.ihfftn(z)),
                catch(lambda: F.fft(x, n=0)), catch(lambda: F.fft(x, norm="bad")),
                catch(lambda: F.fft(x, dim=2)), catch(lambda: F.fft(torch.tensor(1.0))),
                catch(lambda: F.rfft(x.half())), catch(lambda: F.fftn(x, dim=(0, 0))),
                catch(lambda: F.fftn(x, s=(1, 2, 3))), catch(lambda: F.fftn(x, s=(2,), dim=(0, 1))),
                catch(lambda: F.rfftn(torch.tensor(2.0))), catch(lambda: F.irfftn(x, s=(1, 0)))]
    same(body)


def test_spectral_pipeline_gradients():
    """A power spectrogram loss through stft, and a filter applied in the frequency domain."""
    def body(torch):
        rng = np.random.default_rng(0)
        x = torch.tensor(rng.standard_normal((2, 40)), requires_grad=True)
        h = torch.tensor(rng.standard_normal(21), requires_grad=True)
        w = torch.hann_window(16, dtype=torch.float64)
        S = torch.stft(x, 16, hop_length=4, window=w, return_complex=True)
        power = (S.abs() ** 2).log1p().mean()
        y = torch.fft.irfft(torch.fft.rfft(x) * torch.complex(h, h * 0.5), n=40)
        loss = power + (y ** 2).sum() + torch.istft(S, 16, hop_length=4, window=w).sum()
        gx, gh = torch.autograd.grad(loss, (x, h), create_graph=True)
        ggx, = torch.autograd.grad((gx ** 2).sum() + gh.sum(), x)
        return [loss, gx, gh, ggx]
    same(body)


def test_stft_warnings_and_errors():
    from ember._ops import spectral
    spectral._WARNED.clear()  # (warned once per process, as torch)

    def body(torch):
        x = torch.tensor(np.linspace(-1, 1, 64))
        return [catch(lambda: torch.stft(x, 16)),
                torch.stft(x, 8, return_complex=False, window=torch.ones(8, dtype=torch.float64)),
                catch(lambda: torch.stft(x.long(), 16, return_complex=True)),
                catch(lambda: torch.stft(x, 16, hop_length=0, return_complex=True)),
                catch(lambda: torch.stft(x.view(1, 1, 64), 16, return_complex=True)),
                catch(lambda: torch.istft(x.view(8, 8), 16))]
    same(body, check_warnings=False)


# -- special functions: what torch refuses to differentiate -----------------------------------
def test_special_derivative_refusals():
    def body(torch):
        a = torch.tensor([1.5, 2.5], requires_grad=True)
        x = torch.tensor([0.5, 2.0], requires_grad=True)
        sp = torch.special
        return [catch(lambda: torch.autograd.grad(sp.zeta(a + 1, x).sum(), a)),
                catch(lambda: torch.autograd.grad(sp.gammainc(a, x).sum(), a)),
                catch(lambda: torch.autograd.grad(sp.gammaincc(a, x).sum(), a)),
                torch.autograd.grad(sp.gammainc(a, x).sum(), x),
                catch(lambda: sp.gammainc(a, 2.0)), sp.bessel_j0(x).requires_grad,
                sp.airy_ai(x).requires_grad, sp.chebyshev_polynomial_t(x, 3).requires_grad,
                catch(lambda: torch.mvlgamma(x, 0)), torch.mvlgamma(x, 3)]
    same(body)


def test_numpy_only_kernels_match_scipy():
    """ember's own Bessel, Airy, erfcx, ndtri and incomplete gamma kernels (used without
    SciPy) against SciPy over wide ranges."""
    sps = pytest.importorskip("scipy.special")
    from ember._ops import special_numpy as SN
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-40, 40, 400), np.geomspace(1e-8, 1e3, 60),
                        -np.geomspace(1e-8, 1e3, 60), [0.0, 2.0, 25.0, 30.0]])
    pos = x[x > 0]

    def close(a, b, rtol, floor=0.0):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * floor)
    close(SN.bessel_i_scaled(x, 0), sps.i0e(x), 1e-13)
    close(SN.bessel_i_scaled(x, 1), sps.i1e(x), 1e-13)
    close(SN.bessel_k_scaled(pos, 0), sps.k0e(pos), 1e-13)
    close(SN.bessel_k_scaled(pos, 1), sps.k1e(pos), 1e-13)
    close(SN.bessel_j(x, 0), sps.j0(x), 1e-11, 1.0)
    close(SN.bessel_j(x, 1), sps.j1(x), 1e-11, 1.0)
    close(SN.bessel_y(pos, 0), sps.y0(pos), 1e-11, 1.0)
    close(SN.bessel_y(pos, 1), sps.y1(pos), 1e-11, 1.0)
    small = x[np.abs(x) < 100]
    close(SN.airy_ai(small), sps.airy(small)[0], 1e-10, 1.0)
    close(SN.erfcx(x, np.vectorize(__import__("math").erfc, otypes=[float])), sps.erfcx(x),
          1e-14)
    a = rng.uniform(0.05, 60, 300)
    z = a * rng.uniform(0.05, 3, 300)
    p, q = SN.igamma_pair(a, z, sps.gammaln)
    close(p, sps.gammainc(a, z), 1e-11, 1e-300)
    close(q, sps.gammaincc(a, z), 1e-11, 1e-300)


# -- linalg: errors and what torch does not differentiate ------------------------------------
def test_linalg_errors():
    def body(torch):
        L = torch.linalg
        sing = torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
        return [catch(lambda: L.lu_factor(sing)), tuple(L.lu_factor_ex(sing)),
                catch(lambda: L.lu_factor_ex(sing[0], check_errors=True)),
                catch(lambda: L.lu_factor(torch.ones(3))),
                catch(lambda: L.lu_factor(torch.ones(2, 2, dtype=torch.int64))),
                catch(lambda: torch.lu_unpack(sing[0], torch.tensor([1, 2]))),
                catch(lambda: L.eig(torch.ones(2, 3))),
                catch(lambda: L.eig(torch.full((2, 2), float("nan")))),
                catch(lambda: L.matrix_exp(torch.ones(2, 2, dtype=torch.int64))),
                catch(lambda: L.householder_product(torch.ones(2, 3), torch.ones(1))),
                catch(lambda: L.householder_product(torch.ones(2, 3, 2), torch.ones(3, 1))),
                catch(lambda: L.matrix_power(torch.ones(2, 3), 2)),
                catch(lambda: L.vander(torch.ones(3), N=1)),
                catch(lambda: torch.vander(torch.ones(2, 2))),
                catch(lambda: L.tensorinv(torch.ones(3, 3), ind=0)),
                catch(lambda: L.tensorinv(torch.ones(2, 3))),
                catch(lambda: L.tensorsolve(torch.ones(2, 3, 5), torch.ones(2, 3))),
                tuple(L.inv_ex(torch.zeros(2, 2))),
                tuple(L.solve_ex(torch.zeros(2, 2), torch.ones(2))),
                tuple(L.cholesky_ex(-torch.eye(2))),
                catch(lambda: L.ldl_factor(torch.ones(2, 3)))]
    same(body)


def test_ldl_is_not_differentiable():
    def body(torch):
        a = torch.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=torch.float64, requires_grad=True)
        LD, pivots = torch.linalg.ldl_factor(a)
        return [LD.grad_fn.name(), catch(lambda: torch.autograd.grad(LD.sum(), a))]
    same(body)


def test_conj_view_bit_version_and_numpy_as_torch():
    # conj's result: the bit toggles (conj of conj clears it), numpy() refuses it, and it
    # shares its input's version counter (see _ops/complex.py for what NumPy cannot share)
    def body(torch):
        z = torch.tensor(np.array([1 + 2j, 3 - 1j]))
        c = z.conj()
        cc = c.conj()
        same_values = cc.resolve_conj().tolist() == z.tolist()
        z.mul_(2)
        versions = (c._version, z._version, cc._version)
        c.add_(1)
        r = torch.tensor([1.0, 2.0])
        w = torch.tensor(np.array([1j]), requires_grad=True)
        return [cc.is_conj(), same_values, versions, z._version,
                catch(lambda: c.numpy()), c.resolve_conj().numpy().dtype.name,
                c.numpy(force=True).shape, catch(lambda: np.asarray(c)),
                catch(lambda: w.conj().numpy()), w.conj().grad_fn.name(), r.conj() is r,
                torch.tensor([1, 2]).conj().is_conj(), (c + 1).is_conj(), c.clone().is_conj()]
    same(body)


def test_version_of_conj_input_checked_by_the_node_that_saved_its_conjugate():
    def body(torch):
        z = torch.tensor(np.array([1 + 2j, 3 - 1j]), requires_grad=True)
        x = z * 1
        y = x.conj() * x.conj()  # (mul saves both of its operands)
        x.mul_(2)  # (an in-place write of conj's input bumps the saved conjugate's version)
        try:
            y.abs().sum().backward()
        except RuntimeError as e:  # (torch names a conj view's type CPUComplexDoubleType)
            return str(e).split("[")[0], str(e).split("]")[-1]
        return None
    same(body)


def test_eig_phase_dependent_loss_is_refused():
    def body(torch):
        a = torch.tensor(np.array([[1.0, 2.0, 0.0], [-1.0, 0.5, 1.0], [0.0, 0.3, 2.0]]),
                         requires_grad=True)
        vectors = torch.linalg.eig(a).eigenvectors
        return [catch(lambda: torch.autograd.grad(vectors.real.sum(), a)),
                torch.autograd.grad(vectors.abs().sum(), a)]
    same(body)


def test_conj_bit_reads_as_torch():
    def body(torch):
        z = torch.tensor(np.array([1 + 2j, 3 - 1j]))
        c = z.conj()
        return [c.is_conj(), z.is_conj(), c.resolve_conj().is_conj(), torch.conj(z.real) is None,
                z.resolve_neg().is_neg(), c]
    same(body)
