"""A compiled function's call of a custom operator checks the sizes and strides of the tensors
the kernel returns against those its fake kernel gives, at every call, as torch.compile's
generated code does (inductor's ``assert_size_stride`` after each custom op: a fake kernel
that disagrees with the real one raises its AssertionError, torch.compile's first call
included). torch's side runs that very check, ``torch._C._dynamo.guards.assert_size_stride``,
on the eager kernel's result and the fake's layout for meta tensors (torch.compile itself
needs a C++ compiler and half a minute; its message was checked to be this one). A call
that passes the check is recorded (no fallback, whose notice torch does not give). Skipped
without torch.
"""

import pytest
from oracle import same

import ember

# the kernel, and the fake kernel, of each case (a function of the library and the input)
CASES = {
    "transposed": (lambda t, x: (x * 2).t().contiguous().t(), lambda t, x: t.empty_like(x)),
    "another shape": (lambda t, x: x * 2, lambda t, x: x.new_empty(4, 3)),
    "another rank": (lambda t, x: x * 2, lambda t, x: x.new_empty(12)),
    "strided input, agreeing": (lambda t, x: x * 2, lambda t, x: t.empty_like(x)),
    "sliced input, agreeing": (lambda t, x: x * 2, lambda t, x: t.empty_like(x)),
    "a size-1 dim's stride": (lambda t, x: (x[:1] * 2).t().contiguous().t(),
                              lambda t, x: t.empty_like(x[:1])),
    "empty, other strides": (lambda t, x: (x[:0] * 2).t().contiguous().t(),
                             lambda t, x: x.new_empty(0, 7)),
    "second output": (lambda t, x: (x * 2, (x * 3).t().contiguous().t()),
                      lambda t, x: (t.empty_like(x), t.empty_like(x))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_custom_op_checks_its_fake_kernels_layout(case):
    kernel, fake = CASES[case]
    two = case == "second output"
    name = "layout_" + "".join(c if c.isalnum() else "_" for c in case)

    def body(t):
        Tensor = t.Tensor
        if two:
            @t.library.custom_op(f"t38g::{name}", mutates_args=())
            def op(x: Tensor) -> tuple[Tensor, Tensor]:
                return kernel(t, x)
        else:
            @t.library.custom_op(f"t38g::{name}", mutates_args=())
            def op(x: Tensor) -> Tensor:
                return kernel(t, x)
        op.register_fake(lambda x: fake(t, x))

        def f(x):
            out = op(x)
            return (out[0] + out[1]) if two else out + 1
        if t is ember:
            call = ember.compile(f)
        else:  # torch.compile's generated code: the op, then each output's check
            from torch._C._dynamo.guards import assert_size_stride

            def call(x):
                outs = op(x)
                fakes = fake(t, x.to("meta"))
                for o, m in zip(outs if two else (outs,), fakes if two else (fakes,)):
                    assert_size_stride(o, tuple(m.shape), m.stride(),
                                       f"torch.ops.t38g.{name}.default")
                return (outs[0] + outs[1]) if two else outs + 1
        g = t.Generator().manual_seed(0)
        x = {"strided": lambda: t.randn(4, 3, generator=g).t(),
             "sliced i": lambda: t.randn(3, 8, generator=g)[:, ::2]}.get(
            case[:8], lambda: t.randn(3, 4, generator=g))()
        out = []
        for _ in range(3):  # (recorded, then replayed)
            try:
                out.append(call(x))
            except AssertionError as e:
                out.append(str(e))
        return out
    same(body)


@pytest.mark.parametrize("into", ["outside tensors", "tensors it made"])
def test_compiled_custom_op_writing_a_list_of_tensors_is_recorded(into):
    """A custom operator that writes into a list of tensors (``mutates_args`` naming a list
    argument) is recorded as one call run again at every replay, as one writing a tensor
    argument (ember broke the graph there; torch.compile compiles it): eager's values and
    versions at every call, no fallback."""
    def body(t):
        Tensor = t.Tensor
        name = "fill_list_" + into.split()[0]

        @t.library.custom_op(f"t38g::{name}", mutates_args={"outs"})
        def fill(x: Tensor, outs: list[Tensor]) -> None:
            for k, o in enumerate(outs):
                o.copy_(x * (k + 1))

        a, b = t.zeros(3), t.zeros(3)

        def f(x):
            outs = [a, b] if into == "outside tensors" else [t.zeros(3), t.zeros(3)]
            fill(x, outs)
            return outs[0] + outs[1] * 10
        call = t.compile(f) if t is ember else f
        out = []
        for k in range(3):  # (recorded, then replayed)
            x = t.tensor([1.0, 2.0, 3.0]) * (k + 1)
            out.append([call(x), a.clone(), b.clone(), a._version, b._version])
        return out
    same(body)


def test_compiled_custom_op_writing_with_its_own_inplace_ops_bumps_versions_as_eager():
    """A custom operator whose kernel writes its mutated argument with an in-place op: eager
    bumps its version twice a call (the op's own bump, then the kernel's ``copy_``); a replay
    bumped it once."""
    def body(t):
        @t.library.custom_op("t38g::fill_one", mutates_args={"o"})
        def fill(x: t.Tensor, o: t.Tensor) -> None:
            o.copy_(x * 2)

        a = t.zeros(3)

        def f(x):
            fill(x, a)
            return a + 1
        call = t.compile(f) if t is ember else f
        return [(call(t.ones(3) * k), a._version) for k in range(3)]
    same(body)
