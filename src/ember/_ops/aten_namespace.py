"""``ember.ops.aten``: an ``OpOverloadPacket`` per operator of ember's registry, by the aten
name torch gives it (``ember.ops.aten.mm``, ``ember.ops.aten.relu_`` for its in-place form),
so that code written for ``torch.ops.aten`` finds ember's operators: selective checkpointing's
policies compare the op they are given with ``torch.ops.aten.mm.default`` and the like.

NOTE: torch tells an operator's overloads apart (``aten.mul.Tensor``, ``aten.mul.Scalar``);
ember's registry has one op where torch has several overloads, so every overload name of an
operator is the same :class:`OpOverload` object (``ember.ops.aten.mul.Tensor is
ember.ops.aten.mul.default``), the one ember's dispatch reports: a policy written with any of
torch's overload names matches. An overload that ember's registry names itself (the ``p`` of
``aten::bernoulli.p``) is an object of its own.

torch's operators that ember writes with other ops (``aten.linear``, ``aten.matmul``,
``aten.dropout``, ``aten.zeros_like``...) are here too: calling one runs ember's public function
of that name. ember's dispatch never reports them (it reports the ops they run), as torch's
dispatch does not report its composite operators (linear's addmm, matmul's mm).
"""
from __future__ import annotations

from .._arg_parser import _schema_arguments, overloads_error, schema_error
from .._parser_signatures import ATEN_SCHEMAS
from .._tensor import Tensor
from ..ops import OpOverloadPacket, _OpNamespace
from .registry import REGISTRY, dispatch

# torch's aten operators that ember has as public functions (``ember.<name>``, else
# ``Tensor.<name>``) but not as ops of its registry: composite ones, factories, queries.
_COMPOSITE_NAMES = frozenset("""
    absolute absolute_ adaptive_avg_pool1d adaptive_max_pool1d addr addr_ adjoint alias_copy
    allclose alpha_dropout alpha_dropout_ arange arccos arccos_ arccosh arccosh_ arcsin arcsin_
    arcsinh arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_ argwhere as_strided_copy
    as_strided_scatter atleast_1d atleast_2d atleast_3d avg_pool1d bartlett_window batch_norm
    bilinear blackman_window block_diag broadcast_tensors broadcast_to bucketize can_cast
    cartesian_prod cdist chain_matmul chunk clip clip_ column_stack combinations concat
    concatenate contiguous conv1d conv2d conv3d conv_transpose1d conv_transpose2d
    conv_transpose3d corrcoef cosine_embedding_loss cosine_similarity cov cross ctc_loss
    cumulative_trapezoid deg2rad deg2rad_ dense_dim det detach detach_ diag diagflat
    diagonal_scatter diff dim divide divide_ dropout dropout_ dsplit dstack einsum
    embedding_bag embedding_renorm_ empty empty_like empty_permuted empty_strided equal
    expand_as expand_copy eye feature_alpha_dropout feature_alpha_dropout_ feature_dropout
    feature_dropout_ fill_diagonal_ fix fix_ flatten fliplr flipud float_power float_power_
    frobenius_norm full full_like gcd gcd_ ger get_device gradient greater greater_
    greater_equal greater_equal_ grid_sampler group_norm gru gru_cell hamming_window
    hann_window hinge_embedding_loss histc histogramdd hsplit hstack imag indices inner
    instance_norm inverse is_coalesced is_complex is_conj is_contiguous is_floating_point
    is_inference is_neg is_nonzero is_pinned is_same_size is_signed isin istft item
    kaiser_window kl_div kron layer_norm lcm lcm_ ldexp ldexp_ less less_ less_equal
    less_equal_ linspace log_softmax logdet logspace lstm lstm_cell lu_solve
    margin_ranking_loss matmul matrix_exp matrix_power max_pool1d max_pool1d_with_indices
    max_pool2d max_pool3d meshgrid moveaxis movedim msort multinomial multiply multiply_
    nanmean nanquantile narrow native_channel_shuffle native_norm negative negative_ new_empty
    new_empty_strided new_full new_ones new_zeros nonzero nonzero_static norm_except_dim
    not_equal not_equal_ nuclear_norm numel ones ones_like orgqr ormqr outer pairwise_distance
    pdist permute_copy pin_memory pinverse poisson_nll_loss positive prelu promote_types qr
    quantile rad2deg rad2deg_ rand rand_like randint randint_like randn randn_like randperm
    range ravel real renorm renorm_ repeat_interleave requires_grad_ reshape reshape_as resize
    resize_ resize_as resize_as_ resolve_conj resolve_neg result_type retain_grad rms_norm
    rnn_relu rnn_relu_cell rnn_tanh rnn_tanh_cell row_stack rrelu rrelu_ scalar_tensor
    searchsorted select_copy select_scatter selu selu_ signbit size slice_copy slice_inverse
    slice_scatter slogdet softmax sparse_coo_tensor sparse_dim split_copy split_with_sizes_copy
    square square_ squeeze_copy stft storage_offset stride subtract subtract_ sum_to_size svd
    swapaxes swapaxes_ swapdims swapdims_ t_copy tensor_split tensordot tile to transpose_copy
    trapezoid trapz triangular_solve tril_indices triplet_margin_loss triu_indices true_divide
    true_divide_ type_as unbind_copy unflatten unfold_copy unsafe_chunk unsqueeze_copy vander
    view_as view_as_complex_copy view_as_real_copy view_copy vsplit vstack zeros zeros_like
""".split())
# and those it has only in ember.nn.functional, whose parameters are the schema's (not
# l1_loss's: its third is size_average, the schema's an int reduction)
_FUNCTIONAL_NAMES = frozenset(("hardtanh_", "linear", "one_hot", "pad", "relu6",
                               "scaled_dot_product_attention"))


class _AtenPacket(OpOverloadPacket):
    """An aten operator: an overload name ember does not register is its ``default``."""

    # (shown as the class it extends: torch's errors print the type of the packet)
    __module__, __qualname__ = OpOverloadPacket.__module__, OpOverloadPacket.__qualname__

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        overloads = self.__dict__["_overloads"]
        found = overloads.get(key, overloads.get("default"))
        if found is None:  # (only overloads of ember's own naming: none stands for the rest)
            return super().__getattr__(key)
        return found


    def __call__(self, *args, **kwargs):
        # (every overload's schema is tried, as torch's packet tries them: its error names
        # each; the overloads of ember.ops.aten are one operator, run unchecked once matched)
        schemas = ATEN_SCHEMAS.get(self.__name__)
        if schemas is None:
            return super().__call__(*args, **kwargs)
        error = overloads_error(schemas, args, kwargs)
        if error is not None:
            raise error
        return self.default._op.unchecked(*args, **kwargs)


class AtenNamespace(_OpNamespace):
    """``ember.ops.aten``: filled from the op registry, again when a name is missing (ops
    declared by a module imported since)."""

    def __init__(self, name):
        super().__init__(name)
        self._known = 0
        self._refresh()

    def _refresh(self):
        if len(REGISTRY) == self._known:
            return False
        self._known = len(REGISTRY)
        for op in list(REGISTRY.values()):
            name, _, overload = op.aten.partition("::")[2].partition(".")
            self._overload(name, overload or "default", op, False)
            if not overload and hasattr(Tensor, name + "_"):  # (its in-place form)
                self._overload(name + "_", "default", op, True)
        return True

    def _overload(self, name, overload, op, inplace):
        packet = self.__dict__.get(name)
        if not isinstance(packet, _AtenPacket):
            packet = _AtenPacket(self.name, name)
            setattr(self, name, packet)
            self._dir.append(name)
        if overload not in packet._overloads:
            packet._add_overload(overload, None, _runner(op, inplace))

    def __getattr__(self, op_name):
        if not op_name.startswith("__") and self._refresh():
            return getattr(self, op_name)
        if (op_name in _COMPOSITE_NAMES or op_name in _FUNCTIONAL_NAMES
                or op_name in _aten_forms()):
            packet = _AtenPacket(self.name, op_name)
            packet._add_overload("default", None, _schema_errors(_public(op_name), op_name))
            setattr(self, op_name, packet)
            self._dir.append(op_name)
            return packet
        return super().__getattr__(op_name)


def _runner(op, inplace):
    """What calling the overload runs: the public function of the op's name (see _public),
    which binds its arguments as torch's schema does; the registry's op, bound by its own
    parameters, for an op with no public function (its parameters are internal where a public
    function builds them: bernoulli's draws)."""
    name = op.aten.partition("::")[2].partition(".")[0]
    name = name + "_" if inplace else name
    public = _public(name, inplace)
    return _schema_errors(public or (op.inplace if inplace else op), name, public is None)


def _public(name, method_only=False):
    """``ember.<name>``, else the ``Tensor.<name>`` method, else (a name of
    _FUNCTIONAL_NAMES) ``ember.nn.functional.<name>``; None if none is a function."""
    import ember
    form = _aten_forms().get(name)
    if form is not None:  # (an operator of the schema's arguments that ember has not public)
        return form
    public = None if method_only else getattr(ember, name, None)
    if public is None or isinstance(public, type) or not callable(public):
        public = getattr(Tensor, name, None)
    if public is None and name in _FUNCTIONAL_NAMES:
        public = getattr(ember.nn.functional, name)
    # (a function whose defaults are torch's Python binding's, not the schema's, carries the
    # schema's form: torch.kl_div(a, b) is unreduced, torch.ops.aten.kl_div(a, b) a mean)
    public = getattr(public, "schema_form", public)
    return public if callable(public) else None


def _aten_forms():
    """aten_losses.ATEN_FORMS (imported on first use: it imports the losses)."""
    from .aten_losses import ATEN_FORMS
    return ATEN_FORMS


def _schema_errors(fn, name=None, registry_op=False):
    """``fn``, raising a RuntimeError where it raises a TypeError: torch's operators check
    their arguments against the schema and raise RuntimeError for a missing, extra or
    mistyped argument, where its Python functions raise TypeError.

    An operator of _parser_signatures.ATEN_SCHEMAS (the losses) matches its arguments to
    torch's schema first, with torch's errors (a string reduction is one); a registry op of
    them (``registry_op``) is given the schema's defaults and aten's int reduction as its
    name (0 none, 1 mean, 2 sum; another int as each of torch's kernels reads it, see
    _OTHER_REDUCTION)."""
    schemas = ATEN_SCHEMAS.get(name)

    def unchecked(*args, **kwargs):
        if schemas is not None and registry_op:  # (by the op's order: multi_margin_loss's
            # weight is its third parameter, the schema's fifth)
            named = _named_with_reduction(name, schemas[0], args, kwargs)
            args = tuple(named.pop(p) for p in fn.params if p in named)
            kwargs = named
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            raise RuntimeError(str(e)) from None
    if schemas is None:
        return unchecked

    def call(*args, **kwargs):
        error = schema_error(schemas[0], args, kwargs)
        if error is not None:
            raise RuntimeError(error)
        return unchecked(*args, **kwargs)
    call.unchecked = unchecked
    return call


_REDUCTION_NAMES = {0: "none", 1: "mean", 2: "sum"}
# what torch's kernel does with a reduction int other than 0, 1, 2: a sum (the kernels that
# test for none and mean), the unreduced loss (aten's apply_loss_reduction); the others
# (mse_loss's and smooth_l1_loss's internal assert, soft_margin_loss's first element) refuse
_OTHER_REDUCTION = {"nll_loss": "sum", "nll_loss2d": "sum", "multilabel_margin_loss": "sum",
                    "multi_margin_loss": "sum", "binary_cross_entropy": "none",
                    "binary_cross_entropy_with_logits": "none", "huber_loss": "none"}
_LITERALS = {"None": None, "False": False, "True": True}


def _default(text):
    """A schema's default as a Python value (``1.``, ``-100``, ``None``, ``False``)."""
    if text in _LITERALS:
        return _LITERALS[text]
    try:
        return int(text)
    except ValueError:
        return float(text)


def _named_with_reduction(name, schema, args, kwargs):
    """The call's arguments by the schema's names, defaults filled in, the reduction named."""
    named = dict(kwargs)
    for position, (pname, _, default, keyword_only) in enumerate(_schema_arguments(schema)):
        if position < len(args):
            named[pname] = args[position]
        elif pname not in named and default is not None and not keyword_only:
            named[pname] = _default(default)
    if "reduction" in named:
        reduction = int(named["reduction"])
        named["reduction"] = _REDUCTION_NAMES.get(reduction, _OTHER_REDUCTION.get(name))
        if named["reduction"] is None:
            raise RuntimeError(f"aten::{name}: reduction {reduction} is not 0 (none), 1 (mean) "
                               "or 2 (sum)")
    return named


def overload_of(op, inplace=False):
    """The ``ember.ops.aten`` overload that a call of registry op ``op`` is."""
    from .. import ops
    name, _, overload = op.aten.partition("::")[2].partition(".")
    packet = getattr(ops.aten, name + "_" if inplace and not overload else name)
    return getattr(packet, overload or "default")
