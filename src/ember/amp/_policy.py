"""Which ops autocast casts, and how: torch's op lists for the CPU and for CUDA.

Names are torch's op names (``linalg_*``/``fft_*`` name the functions of ``ember.linalg`` and
``ember.fft``); ``_entry_points`` finds the functions and methods users call for each.
"""
from __future__ import annotations

LOWER, FP32, FP32_SET_OPT_DTYPE, PROMOTE = "lower", "fp32", "fp32_set_opt_dtype", "promote"

_CPU = {
    LOWER: "conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear matmul "
           "conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d prelu "
           "scaled_dot_product_attention",
    FP32: "avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile stft "
          "cdist trace view_as_complex cholesky cholesky_inverse cholesky_solve inverse "
          "lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d max_unpool3d "
          "adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d "
          "replication_pad2d replication_pad3d mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss "
          "poisson_nll_loss smooth_l1_loss cross_entropy_loss l1_loss huber_loss "
          "margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss "
          "ctc_loss kl_div multilabel_margin_loss binary_cross_entropy_with_logits fft_fft "
          "fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 "
          "fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft linalg_cond linalg_matrix_rank "
          "linalg_solve linalg_cholesky linalg_svdvals linalg_eigvals linalg_eigvalsh "
          "linalg_inv linalg_householder_product linalg_tensorinv linalg_tensorsolve geqrf "
          "qr svd triangular_solve fractional_max_pool2d fractional_max_pool3d "
          "adaptive_max_pool3d linalg_qr linalg_cholesky_ex linalg_svd linalg_eig linalg_eigh "
          "linalg_lstsq linalg_inv_ex",
    PROMOTE: "stack cat index_copy",
}
_CUDA = {
    LOWER: "conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d "
           "prelu addmm addmv addr matmul einsum mm mv linalg_vecdot linear addbmm baddbmm "
           "bmm chain_matmul linalg_multi_dot lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell "
           "scaled_dot_product_attention",
    FP32: "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow "
          "softplus layer_norm group_norm frobenius_norm nuclear_norm cosine_similarity "
          "poisson_nll_loss cosine_embedding_loss nll_loss hinge_embedding_loss kl_div "
          "l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
          "multilabel_margin_loss soft_margin_loss triplet_margin_loss multi_margin_loss "
          "binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp "
          "upsample_nearest1d upsample_nearest2d upsample_nearest3d upsample_linear1d "
          "upsample_bilinear2d upsample_trilinear3d upsample_bicubic2d",
    FP32_SET_OPT_DTYPE: "prod softmax log_softmax cumprod cumsum linalg_vector_norm "
                        "linalg_matrix_norm sum",
    PROMOTE: "addcdiv addcmul atan2 bilinear cross dot grid_sampler index_put scatter_add "
             "tensordot",
}


def _table(lists):
    return {name: rule for rule, names in lists.items() for name in names.split()}


RULES = {"cpu": _table(_CPU), "cuda": _table(_CUDA)}

# Python names of ops whose torch name differs (F.cross_entropy runs cross_entropy_loss, ...).
_PYTHON_NAMES = {"cross_entropy_loss": ("cross_entropy",), "grid_sampler": ("grid_sample",),
                 "matmul": ("matmul", "__matmul__", "__rmatmul__"),
                 "linalg_vecdot": ("vecdot",)}


def rule(kind, name):
    table = RULES.get(kind)
    return None if table is None else table.get(name)


def _namespaces():
    import ember
    from ember import fft, linalg
    from ember.nn import functional
    return ember, functional, linalg, fft, ember.Tensor


def _entry_points(name):
    """(namespace, attribute) pairs where users reach op ``name``."""
    ember, functional, linalg, fft, tensor = _namespaces()
    if name.startswith("linalg_") or name.startswith("fft_"):
        module = linalg if name.startswith("linalg_") else fft
        spaces, attrs = (module,), (name.split("_", 1)[1],)
        if name == "linalg_vecdot":
            spaces = (module, ember)
            attrs = ("vecdot",)
    else:
        spaces, attrs = (ember, functional, tensor), _PYTHON_NAMES.get(name, (name,))
    for space in spaces:
        for attr in attrs:
            if attr in vars(space):
                yield space, attr


_installed: dict = {}  # (id(namespace), attribute) -> (namespace, attribute, original)
_wrappers: dict = {}  # (id(namespace), attribute) -> (original, its wrapper), made once
_points: dict = {}  # device type -> its ops' entry points


class _CallerSlot:
    """A registry op's generated Tensor path (``op.caller``) as a wrappable attribute: every
    call of the op on tensors takes it, ember's own composites' calls included, as every
    call of a listed op reaches torch's autocast."""

    def __init__(self, op):
        self.op = op

    def get(self):
        from .._ops.registry import tensor_caller
        return tensor_caller(self.op)

    def set(self, value):
        self.op.caller = value


def _wanted(kind):
    from .._ops.registry import REGISTRY
    points = _points.get(kind)
    if points is None:
        points = _points[kind] = {}
        for name in RULES.get(kind, {}):
            for space, attr in _entry_points(name):
                points[(id(space), attr)] = (space, attr, name)
            op = REGISTRY.get(name)
            if op is not None:
                points[(id(op), "caller")] = (_CallerSlot(op), None, name)
    return points


def _get(space, attr):
    return space.get() if attr is None else vars(space)[attr]


def _set(space, attr, value):
    if attr is None:
        space.set(value)
    else:
        setattr(space, attr, value)


def install(wrap, kinds):
    """Wrap the entry points of the ops listed for device types ``kinds`` (and restore the
    others): ``wrap(function, name)`` gives the casting function (``wrap(caller, name,
    True)`` for a registry op's caller, which takes its arguments as one tuple)."""
    wanted = {}
    for kind in sorted(kinds):
        wanted.update(_wanted(kind))
    for key in list(_installed):
        if key not in wanted:
            space, attr, original = _installed.pop(key)
            _set(space, attr, original)
    for key, (space, attr, name) in wanted.items():
        if key in _installed:
            continue
        original = _get(space, attr)
        made = _wrappers.get(key)
        if made is None or made[0] is not original:
            made = _wrappers[key] = (original, wrap(original, name, attr is None))
        _installed[key] = (space, attr, original)
        _set(space, attr, made[1])
