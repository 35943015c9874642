"""Small real datasets that ship with ember, so examples run without downloads.

``load_digits()``: the UCI "Optical Recognition of Handwritten Digits" test set (1,797 images of
8x8 pixels with values 0..16, ten classes), by E. Alpaydin and C. Kaynak (1998), distributed by
the UCI Machine Learning Repository under CC BY 4.0
(https://archive.ics.uci.edu/dataset/80/optical+recognition+of+handwritten+digits).
"""
from __future__ import annotations

import pathlib

import numpy as np

__all__ = ["load_digits"]


def load_digits():
    """``(images, labels)``: a float32 tensor of shape (1797, 8, 8) scaled to [0, 1] and an
    int64 tensor of class indices 0..9."""
    from .. import _creation
    with np.load(pathlib.Path(__file__).with_name("digits.npz"), allow_pickle=False) as data:
        images = data["images"].astype(np.float32) / 16.0
        labels = data["labels"].astype(np.int64)
    return _creation.from_numpy(images), _creation.from_numpy(labels)
