"""Memory layouts of copies against torch: clone, the *_like factories, dtype casts and
contiguous() follow preserve_format (a dense input keeps its strides, one with gaps or
expanded dimensions gets compact strides in its own dimension order), and the
contiguous_format / channels_last arguments."""
import pytest

from oracle import error_of, same

INPUTS = {
    "t": lambda torch: torch.arange(6.).reshape(2, 3).t(),
    "permute": lambda torch: torch.arange(24.).reshape(2, 3, 4).permute(2, 0, 1),
    "mT": lambda torch: torch.arange(24.).reshape(2, 3, 4).mT,
    "gaps": lambda torch: torch.arange(24.).reshape(2, 3, 4)[:, :, ::2],
    "gaps_permuted": lambda torch: torch.arange(24.).reshape(2, 3, 4)[:, :, ::2].permute(2, 0, 1),
    "expanded": lambda torch: torch.arange(3.).expand(4, 3),
    "expanded_column": lambda torch: torch.arange(3.).reshape(3, 1).expand(3, 4),
    "size1": lambda torch: torch.arange(3.).reshape(1, 3).t(),
    "size1_permuted": lambda torch: torch.arange(6.).reshape(3, 1, 2).permute(2, 1, 0),
    "offset_t": lambda torch: torch.arange(12.).reshape(3, 4)[1:].t(),
    "zero_d": lambda torch: torch.tensor(1.5),
    "contiguous": lambda torch: torch.arange(6.).reshape(2, 3),
    "channels_last": lambda torch: torch.arange(120.).reshape(2, 3, 4, 5).to(
        memory_format=torch.channels_last),
}


def _layout(t):
    return t.stride(), t.is_contiguous(), t.shape


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_copies_keep_torch_layout(name):
    def body(torch):
        x = INPUTS[name](torch)
        made = {"clone": x.clone(), "empty_like": torch.empty_like(x),
                "zeros_like": torch.zeros_like(x), "ones_like": torch.ones_like(x),
                "full_like": torch.full_like(x, 2.0), "rand_like": torch.rand_like(x),
                "randn_like": torch.randn_like(x), "randint_like": torch.randint_like(x, 5),
                "double": x.double(), "to_int": x.to(torch.int32), "type": x.type(torch.float64),
                "contiguous": x.contiguous(),
                "clone_contiguous": x.clone(memory_format=torch.contiguous_format),
                "neg": -x, "exp": x.exp()}
        if name != "size1":  # (torch's x * 2 keeps a size-1 dimension's stride; ember's not)
            made["mul"] = x * 2
        out = {k: _layout(v) for k, v in made.items()}
        out["values"] = (made["clone"], made["double"], made["contiguous"], made["full_like"])
        return out
    same(body)


def test_gradient_through_clone_of_permuted():
    def body(torch):
        x = torch.arange(24., requires_grad=True).reshape(2, 3, 4)
        x.retain_grad()
        y = x.permute(2, 0, 1).clone()
        z = y.transpose(0, 2).contiguous().view(-1)  # (valid only in the preserved layout)
        (z * torch.arange(24.)).sum().backward()
        return y.stride(), y.grad_fn.name(), z, x.grad
    same(body)


def test_memory_format_arguments():
    def body(torch):
        x = torch.arange(120., requires_grad=True).reshape(2, 3, 4, 5)
        cl = x.to(memory_format=torch.channels_last)
        p = torch.arange(120.).reshape(2, 4, 5, 3).permute(0, 3, 1, 2)
        return {"to": (_layout(cl), cl.grad_fn.name(), cl.to(memory_format=torch.channels_last) is cl),
                "is_cl": (cl.is_contiguous(memory_format=torch.channels_last),
                          x.is_contiguous(memory_format=torch.channels_last),
                          torch.zeros(2, 3, 1, 1).is_contiguous(memory_format=torch.channels_last)),
                "cast": _layout(x.to(torch.float64, memory_format=torch.channels_last)),
                "double": _layout(x.detach().double(memory_format=torch.channels_last)),
                "back": (_layout(cl.contiguous()), cl.contiguous().grad_fn.name()),
                "contig_cl": (_layout(x.contiguous(memory_format=torch.channels_last)),
                              x.contiguous(memory_format=torch.channels_last).grad_fn.name()),
                "clone_cl": _layout(p.clone(memory_format=torch.channels_last)),
                "p_clone": _layout(p.clone()), "p_cl_is": p.is_contiguous(memory_format=torch.channels_last),
                "like_cl": _layout(torch.zeros_like(x, memory_format=torch.channels_last)),
                "like_cf": _layout(torch.empty_like(p, memory_format=torch.contiguous_format)),
                "rand_cl": _layout(torch.rand_like(x, memory_format=torch.channels_last))}
    same(body)


def test_memory_format_errors():
    def body(torch):
        x = torch.zeros(2, 3).t()
        return [error_of(f) for f in (
            lambda: x.contiguous(memory_format=torch.preserve_format),
            lambda: x.clone(memory_format=torch.channels_last),
            lambda: torch.zeros_like(x, memory_format=torch.channels_last))]
    same(body)


def test_forward_ad_through_clone_of_permuted():
    def body(torch):
        fwAD = torch.autograd.forward_ad
        x = torch.arange(6., dtype=torch.float64).reshape(2, 3)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, torch.ones(2, 3, dtype=torch.float64))
            y = d.t().clone().t().reshape(-1)
            p, t = fwAD.unpack_dual(y)
            return p, t
    same(body, check_warnings=False)


def test_elementwise_results_of_inputs_of_one_layout_keep_it():
    """Inputs that agree on their layout (broadcast ones and numbers agree with any): the
    result has it, as torch's. (Mixed layouts: test_torch_exact_result_layout.py.)"""
    def body(torch):
        z = torch.arange(24.).reshape(2, 3, 4).permute(2, 0, 1)
        xt = torch.arange(12.).reshape(3, 4).t()
        made = {"z_z": z + z, "z_row": z * torch.arange(3.), "row_z": torch.arange(3.) - z,
                "z_0d": z / torch.tensor(2.), "xt_col": xt + torch.arange(4.)[:, None],
                "col_xt": torch.arange(4.)[:, None] + xt, "cmp": xt > xt,
                "where": torch.where(xt > 3, xt, 0.5), "lerp": torch.lerp(xt, xt, 0.25),
                "pow": xt ** xt.t().t()}
        return {k: _layout(v) for k, v in made.items()}
    same(body)
