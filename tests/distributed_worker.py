"""One MPI process of a test launch: ``python distributed_worker.py MODULE CASE...``.

Initialises the default group, runs each case function ``MODULE.CASE(rank, size)`` and
prints ``CASE-OK rank case`` or ``CASE-FAIL rank case`` with the traceback.
"""
import importlib
import sys
import traceback

import ember.distributed as dist


def main():
    module = importlib.import_module(sys.argv[1])
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    for name in sys.argv[2:]:
        try:
            getattr(module, name)(rank, size)
        except Exception:  # noqa: BLE001 - reported, and the next case runs
            print(f"CASE-FAIL {rank} {name}\n{traceback.format_exc()}", flush=True)
        else:
            print(f"CASE-OK {rank} {name}", flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
