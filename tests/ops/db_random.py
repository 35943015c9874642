"""Op table rows for the nodes torch records over samplers (ember._ops.random): the drawn
values are torch's (seeded alike) and the node names are torch's. The samples are not
reparameterised, so their derivative is zero, not the finite difference at a fixed seed:
the rows are ``differentiable=False`` and tests/test_no_derivative.py checks the zeros."""
from __future__ import annotations

import ember
from ember._ops import random as RD

from .op_db import S, row


def _seeded(fn):
    """``mod.<fn>`` after reseeding the default generator."""
    def bind(mod):
        def run(*args, **kwargs):
            mod.manual_seed(0)
            return getattr(mod, fn)(*args, **kwargs)
        return run
    return bind


def _seeded_fill(method):
    """A copy of the input (a node to write into) filled by ``method`` after reseeding."""
    def bind(mod):
        def run(x, *args, **kwargs):
            mod.manual_seed(0)
            return getattr(x * 1, method)(*args, **kwargs)
        return run
    return bind


# (on a GPU the draws come from its own generator: the device test compares no values)
_PROBS = dict(domain=(0.1, 0.9), differentiable=False, random=True)
row("bernoulli", _seeded("bernoulli")(ember), _seeded("bernoulli"),
    [RD._bernoulli_node, RD._bernoulli_p_node],
    lambda m: [S("probs", m(2, 3)), S("p", m(4), 0.3)], **_PROBS)
row("bernoulli_", _seeded_fill("bernoulli_")(ember), _seeded_fill("bernoulli_"),
    [RD._bernoulli_tensor_, RD._bernoulli_float_],
    lambda m: [S("float", m(2, 3), 0.4), S("tensor", m(2, 3), m(3))], **_PROBS)
row("poisson", _seeded("poisson")(ember), _seeded("poisson"), [RD._poisson_node],
    lambda m: [S("rates", m(2, 3)), S("empty", m(0, 2))], domain=(0.5, 4.0),
    differentiable=False, random=True)
row("normal_tensors", _seeded("normal")(ember), _seeded("normal"),
    [RD._normal_mean, RD._normal_std, RD._normal_both],
    lambda m: [S("mean", m(2, 3), 0.5), S("std", 1.5, m(4)), S("both", m(2, 3), m(3)),
               S("both_bcast", m(3, 1), m(2))], domain=(0.5, 2.0), differentiable=False,
    random=True)
for _name, _args, _op in [("normal_", (0.5, 2.0), RD._normal_),
                          ("uniform_", (-1.0, 3.0), RD._uniform_),
                          ("exponential_", (2.0,), RD._exponential_),
                          ("geometric_", (0.3,), RD._geometric_),
                          ("log_normal_", (0.5, 0.25), RD._log_normal_),
                          ("cauchy_", (1.0, 0.5), RD._cauchy_)]:
    row(_name, _seeded_fill(_name)(ember), _seeded_fill(_name), [_op],
        lambda m, _args=_args: [S("matrix", m(2, 3), *_args), S("0dim", m(), *_args)],
        differentiable=False, random=True)
row("random_", _seeded_fill("random_")(ember), _seeded_fill("random_"),
    [RD._random_, RD._random_to_, RD._random_from_],
    lambda m: [S("range", m(2, 3)), S("to", m(4), 7), S("from_to", m(4), -3, 5)],
    dtypes=("float32", "float64", "int64"), differentiable=False, random=True)
