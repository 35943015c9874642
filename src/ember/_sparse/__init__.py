"""Sparse COO tensors: the array type behind them (``coo``) and how they print (``printing``).

A sparse tensor is an ordinary ``Tensor`` whose ``_data`` is a :class:`coo.CooArray` (an index
array and a value array, as torch's COO layout has them). The ops on it live in
``_ops/sparse.py``; ``ember.sparse`` is torch's ``torch.sparse`` namespace.
"""
