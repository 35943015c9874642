"""``ember.backends``: torch.backends' switches and queries.

ember computes with NumPy (CuPy on a GPU) and uses none of the libraries these switches steer
(cuDNN, cuBLAS, oneDNN, MKL, MPS): the queries answer for what ember has (``cudnn``, ``mps``,
``mkldnn`` are not available), and the switches are kept and read back as torch keeps them,
so programs that set them run; they change no result. See docs/programs.md.
"""
from . import cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
