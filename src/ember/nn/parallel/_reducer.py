"""DDP's gradient reduction: buckets of gradients all-reduced while backward still runs.

Parameters are laid out, in reverse order of ``parameters()`` (roughly the order backward
produces their gradients), in flat buckets per dtype: with the default ``bucket_cap_mb`` a
first small one (1 MiB, so communication starts early), then ``bucket_cap_mb`` ones. A post-accumulate-grad hook on each parameter
copies its gradient (divided by the world size) into its bucket; a bucket whose gradients
are all in starts its all-reduce at once, nonblocking, provided every earlier bucket has
started (MPI matches collectives in the order processes start them). A callback queued on
the backward pass (``Variable._execution_engine.queue_callback``) waits for the buckets at
its end and writes the averages into ``.grad``.
"""
from __future__ import annotations

import time

import numpy as np

from ..._backend import asarray_like, get_xp, to_numpy
from ..._tensor import _wrap
from ...autograd.grad_mode import no_grad

FIRST_BUCKET_BYTES = 1024 * 1024


class _Bucket:
    def __init__(self, index, indices, params, dtype):
        self.index = index
        self.indices = indices  # parameter indices, in the bucket's order
        sizes = [p._data.size for p in params]
        # on the parameters' device: CUDA buckets are reduced by NCCL where they are
        self.xp = get_xp(params[0]._data)
        self.flat_tensor = _wrap(self.xp.zeros(sum(sizes), dtype))
        self.flat = self.flat_tensor._data
        self.views, self.view_tensors, pos = [], [], 0
        with no_grad():
            for p, n in zip(params, sizes):
                view = self.flat_tensor[pos:pos + n].view(tuple(p.shape))
                self.view_tensors.append(view)
                self.views.append(view._data)
                pos += n
        self.pending = len(indices)
        self.marked = [False] * len(indices)
        self.future = None

    def reset(self):
        self.pending = len(self.indices)
        self.marked = [False] * len(self.indices)
        self.future = None


def assign_buckets(params, cap_bytes, first_bytes=FIRST_BUCKET_BYTES):
    """Parameter indices per bucket: reverse order, one device and dtype per bucket, the first
    bucket of each capped at ``first_bytes`` and the others at ``cap_bytes``."""
    open_buckets, done = {}, []
    for i in reversed(range(len(params))):
        p = params[i]
        key = (type(p._data), p._data.dtype)
        indices, size, cap = open_buckets.get(key, ([], 0, first_bytes))
        if indices and size + p._data.nbytes > cap:
            done.append((key[1], indices))
            indices, size, cap = [], 0, cap_bytes
        indices.append(i)
        open_buckets[key] = (indices, size + p._data.nbytes, cap)
    done.extend((key[1], indices) for key, (indices, _, _) in open_buckets.items() if indices)
    return done


class Reducer:
    """The buckets and hooks of one DistributedDataParallel module."""

    def __init__(self, params, group, cap_bytes, first_bytes, gradient_as_bucket_view,
                 find_unused, static_graph):
        self.params = params
        self.group = group
        self.as_view = gradient_as_bucket_view
        self.find_unused = find_unused
        self.static_graph = static_graph
        self.buckets = [_Bucket(k, indices, [params[i] for i in indices], dt)
                        for k, (dt, indices) in enumerate(assign_buckets(params, cap_bytes, first_bytes))]
        self.where = {i: (b, slot) for b in self.buckets for slot, i in enumerate(b.indices)}
        self.local_used = np.zeros(len(params), np.int32)
        self.div_factor = group.size()
        self.comm_hook = None
        self.comm_state = None
        self.expect_hooks = False  # a backward pass that reduces is under way
        self.require_finalize = False
        self.first_hook_seen = False
        self.next_bucket = 0
        self.unused = ()
        self.static_unused = None  # (locally, globally) unused, learnt in the first iteration
        self.iterations = 0
        self.wait_seconds = 0.0  # time spent waiting for reductions after backward's last node
        if gradient_as_bucket_view:
            for i, p in enumerate(params):
                if p._grad is not None:  # existing gradients move into the buckets
                    b, slot = self.where[i]
                    b.xp.copyto(b.views[slot], p._grad._data)
                    p._grad = b.view_tensors[slot]
        self.handles = [p.register_post_accumulate_grad_hook(self._hook_for(i))
                        for i, p in enumerate(params)]

    # -- before backward -------------------------------------------------------------------
    def learns_unused(self):
        return self.find_unused or (self.static_graph and self.static_unused is None)

    def prepare_for_backward(self, outputs):
        """Called at the end of a forward that will be followed by a reducing backward."""
        for b in self.buckets:
            b.reset()
        self.next_bucket = 0
        self.first_hook_seen = False
        self.expect_hooks = True
        self.require_finalize = True
        if self.learns_unused():
            reached = _reached_parameters(outputs)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]
        elif self.static_graph:
            self.unused = self.static_unused[0]
        else:
            self.unused = ()

    def unready_indices(self):
        return sorted(i for b in self.buckets for slot, i in enumerate(b.indices)
                      if not b.marked[slot])

    # -- during backward -------------------------------------------------------------------
    def _hook_for(self, index):
        def hook(param):
            self._on_gradient(index, param)
        return hook

    def _on_gradient(self, index, param):
        if self.learns_unused() and param._grad is not None:
            self.local_used[index] = 1  # also under no_sync: accumulated gradients count
        if not self.expect_hooks:
            return
        if not self.first_hook_seen:
            self.first_hook_seen = True
            from ...autograd.engine import queue_callback
            queue_callback(self._finalize)
            for i in self.unused:
                self._mark_ready(i)
        self._mark_ready(index)

    def _mark_ready(self, index):
        bucket, slot = self.where[index]
        if bucket.marked[slot]:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of "
                "the following reasons: 1) Use of a module parameter outside the `forward` "
                "function. 2) Reused parameters in multiple reentrant backward passes. "
                f"Parameter at index {index} has been marked as ready twice.")
        bucket.marked[slot] = True
        self._copy_into_bucket(index, bucket, slot)
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()
        self._progress()

    def _copy_into_bucket(self, index, bucket, slot):
        p = self.params[index]
        g = p._grad
        view = bucket.views[slot]
        scale = None if self.comm_hook is not None else 1.0 / self.div_factor
        xp = bucket.xp
        if g is None:
            view.fill(0)
        elif g is bucket.view_tensors[slot]:
            if scale is not None:
                xp.multiply(view, scale, out=view, casting="unsafe")
        else:
            if scale is not None:
                xp.multiply(g._data, scale, out=view, casting="unsafe")
            else:
                xp.copyto(view, g._data, casting="unsafe")
            if self.as_view:
                p._grad = bucket.view_tensors[slot]

    def _launch_ready(self):
        buckets = self.buckets
        while self.next_bucket < len(buckets) and buckets[self.next_bucket].pending == 0:
            self._launch(buckets[self.next_bucket])
            self.next_bucket += 1

    def _launch(self, bucket):
        if self.comm_hook is None:
            from ...distributed import _collectives as C
            bucket.future = C.all_reduce(bucket.flat_tensor, group=self.group, async_op=True)
            return
        from ...distributed import GradBucket
        grad_bucket = GradBucket(bucket.index, bucket.flat_tensor, list(bucket.view_tensors),
                                 [self.params[i] for i in bucket.indices],
                                 bucket.index == len(self.buckets) - 1)
        bucket.future = self.comm_hook(self.comm_state, grad_bucket)

    def _progress(self):
        """Let MPI move the reductions in flight along (it progresses them only inside its
        calls): this is what overlaps communication with the rest of backward."""
        from ...distributed import Work
        for b in self.buckets[:self.next_bucket]:
            f = b.future
            if isinstance(f, Work):
                f.is_completed()
            elif f is not None:
                f.done()

    # -- at the end of backward ------------------------------------------------------------
    def _finalize(self):
        self.expect_hooks = False
        if self.next_bucket < len(self.buckets):
            return  # some parameters got no gradient: the next forward reports them
        global_unused = self._global_unused()
        for b in self.buckets:
            start = time.perf_counter()
            self._wait(b)
            self.wait_seconds += time.perf_counter() - start
            for slot, i in enumerate(b.indices):
                if global_unused is None or not global_unused[i]:
                    self._write_grad(i, b, slot)
        self.local_used.fill(0)
        self.require_finalize = False
        self.iterations += 1

    def _global_unused(self):
        if self.static_graph and self.static_unused is not None:
            return self.static_unused[1]
        if not self.learns_unused():
            return None
        from ...distributed import _collectives as C
        # (counted on the host; reduced on the parameters' device, which the group serves)
        used = _wrap(asarray_like(self.local_used, self.buckets[0].flat))
        C.all_reduce(used, group=self.group)
        global_unused = to_numpy(used._data) == 0
        if self.static_graph:
            self.static_unused = (list(self.unused), global_unused)
        return global_unused

    def _wait(self, bucket):
        from ...distributed import Work
        f = bucket.future
        if isinstance(f, Work):  # the all-reduce ran on the bucket itself
            f.wait()
            return
        result = f.wait()  # a communication hook's Future of the reduced bucket
        if result is not bucket.flat_tensor:
            bucket.xp.copyto(bucket.flat, result._data.reshape(-1), casting="unsafe")

    def _write_grad(self, index, bucket, slot):
        p = self.params[index]
        view = bucket.view_tensors[slot]
        if self.as_view:
            p._grad = view
        elif p._grad is None:
            p._grad = _wrap(bucket.views[slot].copy())
        else:
            bucket.xp.copyto(p._grad._data, bucket.views[slot])
            p._grad._bump_version()

    # -- a joined process shadows the others' reductions -----------------------------------
    def shadow_backward(self):
        """Take part, with zeros, in the reductions of an iteration this process does not
        run (see Join)."""
        from ...distributed import _collectives as C
        saved = [(b.flat.copy(), b.future) for b in self.buckets]
        for b in self.buckets:
            b.flat.fill(0)
            self._launch(b)
        for b in self.buckets:
            self._wait(b)
        for b, (flat, future) in zip(self.buckets, saved):
            b.xp.copyto(b.flat, flat)
            b.future = future
        if self.learns_unused():
            zeros = self.buckets[0].xp.zeros(len(self.params), np.int32)
            C.all_reduce(_wrap(zeros), group=self.group)


def _reached_parameters(outputs):
    """ids of the leaves the autograd graph of ``outputs`` reaches."""
    from ...autograd.graph import AccumulateGrad
    seen, reached = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    for t in outputs:
        if t.grad_fn is None and t.requires_grad:
            reached.add(id(t))
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if isinstance(fn, AccumulateGrad):
            reached.add(id(fn.variable))
        for nxt, _ in fn.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)
    return reached
