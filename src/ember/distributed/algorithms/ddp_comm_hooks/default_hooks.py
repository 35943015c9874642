"""torch's default DDP communication hooks: plain all-reduce, and all-reduce of a float16 (or
bfloat16) copy of the bucket that is written back afterwards (half the bytes on the wire)."""
from __future__ import annotations

import ember

from ... import _collectives as C
from ..._world import resolve

__all__ = ["allreduce_hook", "bf16_compress_hook", "bf16_compress_wrapper",
           "fp16_compress_hook", "fp16_compress_wrapper"]


def _allreduce_fut(process_group, tensor):
    """Average ``tensor`` across the group; a Future of it."""
    group = resolve(process_group)
    tensor.div_(group.size())
    work = C.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """All-reduce the bucket's gradients and divide by the group's size (DDP's default)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group = resolve(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())
    work = C.all_reduce(compressed, group=group, async_op=True)

    def decompress(fut):
        out = bucket.buffer()
        out.copy_(fut.value()[0])
        return out

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Cast the bucket to float16, divide by the group's size, all-reduce, and write the
    result back in the bucket's dtype."""
    return _compress_hook(ember.float16, process_group, bucket)


def _bfloat16():
    dtype = getattr(ember, "bfloat16", None)
    if dtype is None:
        raise TypeError("BF16 all reduce communication hook required CUDA 11+ and NCCL 2.10+ "
                        "or XPU and XCCL")
    return dtype


def bf16_compress_hook(process_group, bucket):
    """fp16_compress_hook with bfloat16 (needs ember's bfloat16, which ml_dtypes provides)."""
    return _compress_hook(_bfloat16(), process_group, bucket)


def _compress_wrapper(dtype_of, hook):
    def wrapper(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype_of()))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            out = bucket.buffer()
            out.copy_(fut.value())
            return out

        return fut.then(decompress)

    return wrapper


def fp16_compress_wrapper(hook):
    """Wrap ``hook`` so that it communicates a float16 rounding of the bucket."""
    w = _compress_wrapper(lambda: ember.float16, hook)
    w.__name__ = "fp16_compress_wrapper_hook"
    return w


def bf16_compress_wrapper(hook):
    """Wrap ``hook`` so that it communicates a bfloat16 rounding of the bucket."""
    w = _compress_wrapper(_bfloat16, hook)
    w.__name__ = "bf16_compress_wrapper_hook"
    return w
