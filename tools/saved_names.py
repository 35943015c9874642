"""How many op-table rows' nodes show torch's saved values, and what differs, grouped.

    python tools/saved_names.py          # the count, then each kind of difference and its rows

Each row's first sample is built with torch and with ember; the first output's node is
compared (names in dir() starting ``_saved_`` / ``_raw_saved_``, and the kind and value of
each) by tests/ops/test_saved_names.py's ``differences``. A row without a node on either side
counts as matching. This is a development tool: it imports torch (the reference).
"""
from __future__ import annotations

import collections
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]


def main():
    import torch

    from tests.ops.test_saved_names import OP_DB, differences
    warnings.simplefilter("ignore")
    groups = collections.defaultdict(list)
    rows = [r for r in OP_DB if r.public]
    matching = 0
    for row in rows:
        found = differences(row, torch)
        matching += not found
        for kind in dict.fromkeys(found):
            groups[kind].append(row.name)
    print(f"rows whose nodes show torch's saved names and values: {matching}/{len(rows)}")
    for (kind, what), names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(names):4d} {kind} {what}: {', '.join(names[:8])}")


if __name__ == "__main__":
    main()
