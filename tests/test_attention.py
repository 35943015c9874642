"""scaled_dot_product_attention against torch's CPU kernels, nn.attention's kernel switches and
nn.attention.bias's causal masks."""
from __future__ import annotations

import importlib

import pytest

import ember
from oracle import error_of, graph_tree, same


def _qkv(torch, dtype, shape_q=(2, 3, 5, 8), n_kv=None, heads_kv=None):
    torch.manual_seed(0)
    q = torch.rand(*shape_q, dtype=dtype)
    kv_shape = list(shape_q)
    if n_kv is not None:
        kv_shape[-2] = n_kv
    if heads_kv is not None:
        kv_shape[-3] = heads_kv
    return q, torch.rand(*kv_shape, dtype=dtype), torch.rand(*kv_shape, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("kind", ["plain", "causal", "bool_mask", "float_mask", "scale", "3d"])
def test_sdpa_rounds_as_torchs_cpu_kernels(dtype, kind):
    """Half and bfloat16 results to the last bit: the flash kernel rounds its weights to the
    input's dtype before the product with v, the math kernel computes in float32."""
    def body(torch):
        F = torch.nn.functional
        q, k, v = _qkv(torch, getattr(torch, dtype), n_kv=7)
        kw = {"causal": {"is_causal": True}, "scale": {"scale": 0.3},
              "bool_mask": {"attn_mask": torch.rand(5, 7) > 0.3},
              "float_mask": {"attn_mask": torch.rand(5, 7, dtype=q.dtype)}}.get(kind, {})
        if kind == "3d":
            q, k, v = q[0], k[0], v[0]
        return F.scaled_dot_product_attention(q, k, v, **kw)
    tol = {"float32": 1e-6, "float64": 1e-12}.get(dtype, 0)
    same(body, rtol=tol, atol=tol)


@pytest.mark.parametrize("dims", [3, 4])
def test_sdpa_row_masked_out_entirely_gives_zeros_and_zero_gradients(dims):
    def body(torch):
        torch.manual_seed(0)
        q = torch.rand(1, 1, 2, 4, requires_grad=True)
        x = q if dims == 4 else q[0]
        mask = torch.tensor([[False, False], [True, False]])
        y = torch.nn.functional.scaled_dot_product_attention(x, x, x, attn_mask=mask)
        y.sum().backward()
        return y.detach(), q.grad
    same(body, atol=1e-6)


def test_sdpa_gradients_and_dropout_path():
    def body(torch):
        torch.manual_seed(0)
        x = torch.rand(2, 5, 8, requires_grad=True)
        y = torch.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=0.5)
        y.sum().backward()
        return y, x.grad
    same(body, rtol=1e-5, atol=1e-6)


def test_sdpa_grouped_query_attention():
    def body(torch):
        q, k, v = _qkv(torch, torch.float32, shape_q=(2, 4, 5, 8), heads_kv=2)
        F = torch.nn.functional
        out = [F.scaled_dot_product_attention(q, k, v, enable_gqa=True)]
        try:
            F.scaled_dot_product_attention(q, k[:, :1].expand(2, 3, 5, 8).contiguous(),
                                           v[:, :1].expand(2, 3, 5, 8).contiguous(),
                                           enable_gqa=True)
        except RuntimeError as e:
            out.append(str(e))
        return out
    same(body)


@pytest.mark.parametrize("call", [
    "F.scaled_dot_product_attention(q, q.double(), q)",
    "F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(5, 5, dtype=torch.int64))",
    "F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)",
])
def test_sdpa_argument_errors(call):
    def body(torch):
        q = torch.rand(2, 3, 5, 8)
        return eval(call, {"torch": torch, "F": torch.nn.functional, "q": q})
    same(body)


def test_sdpa_output_follows_the_querys_memory_order():
    """Heads split from one projection and transposed back can be viewed, as in torch."""
    def body(torch):
        torch.manual_seed(0)
        x = torch.rand(2, 5, 12)
        q = x.view(2, 5, 3, 4).transpose(1, 2)
        y = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        z = torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.0)
        return y.stride(), y.transpose(1, 2).view(2, 5, 12), z.stride()
    same(body)


def test_sdpa_kernel_switches_and_restores_backends():
    def body(torch):
        SDPBackend, sdpa_kernel = torch.nn.attention.SDPBackend, torch.nn.attention.sdpa_kernel
        cuda = torch.backends.cuda
        q = torch.rand(1, 2, 3, 4)
        out = [repr(SDPBackend.MATH), str(SDPBackend.FLASH_ATTENTION), int(SDPBackend.ERROR)]
        for backends in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION,
                         SDPBackend.EFFICIENT_ATTENTION, [SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION],
                         []):
            with sdpa_kernel(backends) as ctx:
                out.append((ctx, cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(),
                            cuda.mem_efficient_sdp_enabled(), cuda.cudnn_sdp_enabled()))
                try:
                    out.append(torch.nn.functional.scaled_dot_product_attention(q, q, q))
                except RuntimeError as e:
                    out.append(str(e))
        out.append((cuda.flash_sdp_enabled(), cuda.math_sdp_enabled()))
        try:
            with sdpa_kernel("math"):
                pass
        except AssertionError as e:
            out.append(str(e))
        return out
    same(body, rtol=1e-5)


def test_causal_bias_masks():
    def body(torch):
        bias = importlib.import_module(torch.__name__ + ".nn.attention.bias")
        CausalBias, CausalVariant = bias.CausalBias, bias.CausalVariant
        causal_lower_right, causal_upper_left = bias.causal_lower_right, bias.causal_upper_left
        F = torch.nn.functional
        q, k, v = _qkv(torch, torch.float16, shape_q=(2, 3, 2, 8), n_kv=10)
        upper, lower = causal_upper_left(2, 10), causal_lower_right(2, 10)
        out = [type(upper).__name__, isinstance(lower, torch.Tensor), repr(upper), repr(lower),
               int(upper.variant), upper.variant.name, lower.seq_len_q, lower.seq_len_kv, tuple(upper.shape),
               F.scaled_dot_product_attention(q, k, v, upper),
               F.scaled_dot_product_attention(q, k, v, lower),
               F.scaled_dot_product_attention(q, k, v, is_causal=True),
               F.scaled_dot_product_attention(q[0], k[0], v[0], lower)]
        try:
            F.scaled_dot_product_attention(q, k, v, upper, is_causal=True)
        except ValueError as e:
            out.append(str(e))
        for make in (lambda: causal_upper_left(2, 3, 4), lambda: CausalBias(1, 2, 3)):
            try:
                make()
            except AssertionError as e:
                out.append(str(e))
        out.append(repr(CausalBias(CausalVariant.LOWER_RIGHT, 4, 2)))  # (and its warning)
        return out
    same(body)


def test_causal_bias_without_torch():
    from ember.nn.attention.bias import causal_lower_right
    mask = causal_lower_right(2, 4)._materialize()
    assert mask.tolist() == [[True, True, True, False], [True, True, True, True]]
    assert isinstance(causal_lower_right(1, 1), ember.Tensor)


def _leaves(torch, dtype, shape_q=(2, 4, 5, 8), heads_kv=4, n_kv=6):
    return [t.requires_grad_() for t in _qkv(torch, dtype, shape_q, n_kv, heads_kv)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("kind", ["plain", "causal", "bool_mask", "float_mask", "gqa",
                                  "strided", "3d", "mask_with_grad", "dropout"])
def test_sdpa_graph_and_gradients(dtype, kind):
    """The flash kernel is one node over q, k and v (no casts, masks or heads of its own in the
    graph); the math kernel's result keeps torch's composite graph (its _safe_softmax)."""
    def body(torch):
        F = torch.nn.functional
        q, k, v = _leaves(torch, getattr(torch, dtype), heads_kv=2 if kind == "gqa" else 4)
        mask = torch.rand(5, 6)
        kw = {"causal": {"is_causal": True}, "gqa": {"enable_gqa": True},
              "bool_mask": {"attn_mask": mask > 0.3},
              "float_mask": {"attn_mask": mask.to(q.dtype)},
              "mask_with_grad": {"attn_mask": mask.to(q.dtype).clone().requires_grad_()},
              "dropout": {"dropout_p": 0.5}}.get(kind, {})
        x, y, z = q, k, v
        if kind == "3d":
            x, y, z = q[0], k[0], v[0]
        if kind == "strided":
            x, y, z = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
        torch.manual_seed(0)
        out = F.scaled_dot_product_attention(x, y, z, **kw)
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        return graph_tree(out.grad_fn), out.detach(), grads
    tol = {"float32": 1e-5, "float64": 1e-12}.get(dtype, 1e-2)
    same(body, rtol=tol, atol=tol)


def test_sdpa_flash_node_saves_torchs_arguments():
    def body(torch):
        q, k, v = _leaves(torch, torch.float32)
        fn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).grad_fn
        return (fn.name(), fn._saved_is_causal, fn._saved_dropout_p, fn._saved_scale,
                fn._saved_query, fn._saved_key, fn._saved_value)
    same(body)


def test_sdpa_flash_kernel_has_no_second_derivative_nor_forward_ad():
    """torch's flash backward has no derivative and its forward has no forward-mode rule: a
    second backward and a JVP fail, where a composite would silently differentiate."""
    def body(torch):
        F = torch.nn.functional
        q, k, v = _leaves(torch, torch.float32)
        dq, = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v).sum(), q,
                                  create_graph=True)
        out = [dq.requires_grad, dq.grad_fn.name(),
               error_of(lambda: torch.autograd.grad(dq.sum(), q))]
        plain = [t.detach() for t in (q, k, v)]
        out.append(error_of(lambda: torch.func.jvp(
            lambda x: F.scaled_dot_product_attention(x, *plain[1:]), (plain[0],),
            (torch.ones_like(plain[0]),))))
        fwAD = torch.autograd.forward_ad
        with fwAD.dual_level():
            dual = fwAD.make_dual(plain[0], torch.ones_like(plain[0]))
            out.append(error_of(lambda: F.scaled_dot_product_attention(dual, *plain[1:])))
        # the math kernel (3-D inputs) differentiates twice, as torch's composite does
        x = q[0].detach().double().requires_grad_()
        dx, = torch.autograd.grad(F.scaled_dot_product_attention(x, x, x).sum(), x,
                                  create_graph=True)
        out.append(torch.autograd.grad((dx * dx).sum(), x))
        return out
    same(body, rtol=1e-9, atol=1e-10, check_warnings=False)  # (torch.func's own warnings)


def test_flash_output_written_in_place_refuses_backward():
    """The flash kernel's node saves its output (as torch's): writing into it in place makes
    backward refuse with torch's error."""
    def body(torch):
        q = torch.ones(1, 2, 3, 4, requires_grad=True)
        out = torch.nn.functional.scaled_dot_product_attention(q, q * 1, q * 1)
        out.add_(1)
        out.sum().backward()
    same(body)
