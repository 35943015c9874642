"""Write ember's table of Sobol direction numbers (``src/ember/_random/sobol_directions.npz``).

torch's SobolEngine uses Joe and Kuo's direction numbers for 21201 dimensions (search
criterion D(6), https://web.maths.unsw.edu.au/~fkuo/sobol/): for each dimension, a primitive
polynomial and its first direction integers. SciPy ships the same table; this script reads
it from SciPy, keeps what the state needs (each polynomial, and as many initial integers as
its degree), and checks that the state ember builds from the result is, for every
dimension, the one torch's ``_sobol_engine_initialize_state_`` builds.

    python tools/sobol_directions.py

A development tool: it imports SciPy (the table) and torch (the check).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "src" / "ember" / "_random" / "sobol_directions.npz"


def joe_kuo_table():
    import scipy.stats
    table = np.load(Path(scipy.stats.__file__).parent / "_sobol_direction_numbers.npz")
    poly, initial = table["poly"], table["vinit"]
    degree = np.array([int(p).bit_length() - 1 for p in poly])
    keep = np.arange(initial.shape[1]) < degree[:, None]  # (integers past a degree are unused)
    return poly.astype(np.uint32), np.where(keep, initial, 0).astype(np.uint32)


def check_against_torch(dimension):
    import torch

    from ember._random import sobol
    theirs = torch.zeros(dimension, sobol.MAXBIT, dtype=torch.long)
    torch._sobol_engine_initialize_state_(theirs, dimension)
    mine = sobol.initial_state(dimension)
    assert (mine == theirs.numpy()).all(), "the state differs from torch's"


def main():
    poly, initial = joe_kuo_table()
    # (integer j is below 2**(j+1): the first 8 fit a byte, the next 8 two; stored a column
    # at a time, which compresses better)
    np.savez_compressed(OUT, poly=poly,
                        initial_8=np.ascontiguousarray(initial[:, :8].T, np.uint8),
                        initial_16=np.ascontiguousarray(initial[:, 8:16].T, np.uint16),
                        initial_32=np.ascontiguousarray(initial[:, 16:].T, np.uint32))
    check_against_torch(len(poly))
    print(f"{OUT.relative_to(ROOT)}: {len(poly)} dimensions, {OUT.stat().st_size} bytes; "
          "the state of every dimension is torch's")


if __name__ == "__main__":
    main()
