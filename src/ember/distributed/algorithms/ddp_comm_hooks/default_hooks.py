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


def bf16_compress_hook(process_group, bucket):
    """fp16_compress_hook with bfloat16 (float32's range, 8 bits of precision)."""
    return _compress_hook(ember.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapper(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            out = bucket.buffer()
            out.copy_(fut.value())
            return out

        return fut.then(decompress)

    return wrapper


def fp16_compress_wrapper(hook):
    """Wrap ``hook`` so that it communicates a float16 rounding of the bucket."""
    w = _compress_wrapper(ember.float16, hook)
    w.__name__ = "fp16_compress_wrapper_hook"
    return w


def bf16_compress_wrapper(hook):
    """Wrap ``hook`` so that it communicates a bfloat16 rounding of the bucket."""
    w = _compress_wrapper(ember.bfloat16, hook)
    w.__name__ = "bf16_compress_wrapper_hook"
    return w
