"""DistributedDataParallel: one model replica per process, gradients averaged across them.

The module is the wrapped model: parameters and buffers are broadcast from rank 0 when it is
built, buffers again before each training forward (``broadcast_buffers``), and gradients are
averaged during backward by the Reducer (``_reducer.py``). The engine knows nothing of it:
everything goes through post-accumulate-grad hooks and an end-of-backward callback.
"""
from __future__ import annotations

import contextlib

from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...distributed.algorithms.join import Join, Joinable, JoinHook, _JoinConfig
from ..modules.module import Module
from ._reducer import FIRST_BUCKET_BYTES, Reducer

_UNUSED_HELP = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. ")
_UNUSED_TAIL = (
    "\nIf you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n")


def _find_tensors(obj):
    """The tensors in a forward's output (nested lists, tuples, dicts)."""
    from ..._tensor import Tensor
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    return []


class _DDPJoinHook(JoinHook):
    def __init__(self, ddp, divide_by_initial_world_size):
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self):
        """Shadow one iteration of the processes still active."""
        ddp = self.ddp
        any_sync = ddp._agree_on_grad_sync(False)
        if ddp._will_sync_buffers():
            ddp._sync_buffers()
        ddp.require_forward_param_sync = any_sync
        if any_sync:
            ddp.reducer.shadow_backward()

    def post_hook(self, is_last_joiner):
        """Every process takes the model of the (highest-ranked) last joiner."""
        self.ddp._sync_final_model(is_last_joiner)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism across processes: each process runs the module on its share of the
    batch; backward averages the gradients across processes, overlapped with the rest of
    backward."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()
        from ... import distributed as dist
        params = _unique(p for p in module.parameters() if p.requires_grad)
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p.device for p in params}
        if (device_ids or output_device is not None) and all(d.type == "cpu" for d in devices):
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work "
                "with single-device/multiple-device GPU modules or CPU modules, but got "
                f"device_ids {device_ids}, output_device {output_device}, and module "
                f"parameters {devices}.")
        self.module = module
        self.process_group = process_group if process_group is not None else \
            dist.group.WORLD
        if self.process_group is None:
            dist.get_rank()  # torch's "Default process group has not been initialized"
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb)
                                    * 1024 * 1024)
        self._divide_by_initial_world_size = True
        self._join_active = None
        self._module_buffers = [b for b in module.buffers()]
        if init_sync:
            self._verify_same_model(params)
            self._sync_module_states(0)
        first_bytes = FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self.reducer = Reducer(params, self.process_group, self.bucket_bytes_cap, first_bytes,
                               gradient_as_bucket_view, find_unused_parameters, static_graph)

    # -- forward -----------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        grad_sync = is_grad_enabled() and self.require_backward_grad_sync
        if grad_sync:
            self._ensure_prior_reduction_finished()
        if self._join_config.enable:
            Join.notify_join_context(self)
            self._agree_on_grad_sync(grad_sync)
        self.reducer.div_factor = self._div_factor()
        if self._will_sync_buffers():
            self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if grad_sync:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(_find_tensors(output))
        else:
            self.require_forward_param_sync = False
        return output

    def _div_factor(self):
        size = self.process_group.size()
        if self._divide_by_initial_world_size or not self._join_config.enable:
            return size
        return sum(self._join_active) if self._join_active else size

    def _ensure_prior_reduction_finished(self):
        reducer = self.reducer
        if not reducer.require_finalize:
            return
        missing = " ".join(str(i) for i in reducer.unready_indices())
        rank = self.process_group.rank()
        reducer.require_finalize = False
        if self.static_graph:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your training graph has changed in this "
                "iteration, e.g., one parameter is used in first iteration, but then got "
                "unused in the second iteration. this is not compatible with static_graph "
                f"set to True.\nParameter indices which did not receive grad for rank {rank}: "
                f"{missing}")
        if self.find_unused_parameters:
            middle = ("Since `find_unused_parameters=True` is enabled, this likely  means that "
                      "not all `forward` outputs participate in computing loss. You can fix "
                      "this by making sure all `forward` function outputs participate in "
                      "calculating loss. ")
        else:
            middle = ("You can enable unused parameter detection by passing the keyword "
                      "argument `find_unused_parameters=True` to "
                      "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all "
                      "`forward` function outputs participate in calculating loss. ")
        raise RuntimeError(
            _UNUSED_HELP + middle + _UNUSED_TAIL
            + f"Parameter indices which did not receive grad for rank {rank}: {missing}\n In "
            "addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either "
            "INFO or DETAIL to print out information about which particular parameters did "
            "not receive gradient on this rank as part of this error")

    # -- state synchronisation -----------------------------------------------------------------
    def _verify_same_model(self, params):
        """torch's check that every process wraps the same model: as many parameters, and
        each with process 0's sizes and strides (raised where they differ, as torch's
        messages say it)."""
        from ... import distributed as dist
        rank = self.process_group.rank()
        mine = _shape_metadata(params)
        everyone = [None] * self.process_group.size()
        dist.all_gather_object(everyone, (len(params), mine), group=self.process_group)
        for r, (count, _) in enumerate(everyone):
            if count != len(params):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} "
                                   f"has {len(params)} params, while rank {r} has "
                                   f"inconsistent {count} params.")
        control = iter(everyone[0][1])
        # NOTE: walked position by position as torch walks process 0's metadata, so a
        # parameter of other dimensions is reported where torch reports it.
        for i, p in enumerate(params):
            for n in p.shape:
                if next(control, None) != n:
                    raise RuntimeError(f"[{rank}]: params[{i}] in this process with sizes "
                                       f"{list(p.shape)} appears not to match sizes of the "
                                       "same param in process 0.")
            for n in p.stride():
                if next(control, None) != n:
                    raise RuntimeError(f"params[{i}] in this process with sizes "
                                       f"{list(p.shape)} appears not to match strides of the "
                                       "same param in process 0.")

    def _sync_module_states(self, src):
        from ...distributed._coalesced import broadcast_coalesced
        with no_grad():
            tensors = list(self.module.parameters()) + self._module_buffers
            broadcast_coalesced(_unique(tensors), src, self.process_group)

    def _will_sync_buffers(self):
        return (self.require_forward_param_sync and self.broadcast_buffers
                and len(self._module_buffers) > 0 and self.process_group.size() > 1)

    def _sync_buffers(self):
        from ...distributed._coalesced import broadcast_coalesced
        src = 0
        if self._join_config.enable and self._join_active:
            src = max(r for r, active in enumerate(self._join_active) if active)
        broadcast_coalesced(self._module_buffers, src, self.process_group)

    def _agree_on_grad_sync(self, mine):
        """Whether any process reduces gradients this iteration (joined ones need to know)."""
        from ... import distributed as dist
        from ..._creation import tensor
        flag = tensor([int(bool(mine))])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.process_group)
        return bool(flag.item())

    def _sync_final_model(self, is_last_joiner):
        from ... import distributed as dist
        from ..._creation import tensor
        rank = tensor([self.process_group.rank() if is_last_joiner else -1])
        dist.all_reduce(rank, op=dist.ReduceOp.MAX, group=self.process_group)
        self._sync_module_states(int(rank.item()))

    # -- public API ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without reducing them; the first
        backward after it reduces everything accumulated."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """Reduce each bucket with ``hook(state, bucket) -> Future[Tensor]`` instead of the
        built-in all-reduce (see distributed.algorithms.ddp_comm_hooks)."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        # NOTE: torch refuses the bf16 hooks in builds without CUDA and NCCL 2.10+ (a
        # TypeError); ember's MPI backend reduces bfloat16 on the CPU, so they run anywhere.
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        self.reducer.comm_hook = hook
        self.reducer.comm_state = state

    def _set_static_graph(self):
        self.static_graph = True
        self.reducer.static_graph = True

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """A context manager for training with uneven inputs (see Join)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return next(iter(self.module.parameters())).device

    @property
    def join_process_group(self):
        return self.process_group


def _shape_metadata(params):
    """Each parameter's sizes then strides, one flat list (what torch compares)."""
    return [n for p in params for n in (*p.shape, *p.stride())]


def _unique(tensors):
    seen, out = set(), []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out
