"""``vmap`` of an op over dim 0 or -1 of 0-dim examples, against torch 2.13: torch takes such
a dim as the example's one element (``x.sum(0)`` of a 0-dim ``x`` is ``x``), where the batched
tensor's physical ``(B,)`` has no dimension for it."""
import pytest
from oracle import same

B = [1.0, -2.0, 3.5]

# (name, the op on one 0-dim example)
CASES = [
    ("sum", lambda m, x: m.sum(x, 0)),
    ("sum_last_keepdim", lambda m, x: m.sum(x, -1, keepdim=True)),
    ("sum_tuple", lambda m, x: m.sum(x, (0,))),
    ("mean", lambda m, x: m.mean(x, -1)),
    ("nansum", lambda m, x: m.nansum(x, 0)),
    ("amax", lambda m, x: m.amax(x, 0)),
    ("amin_keepdim", lambda m, x: m.amin(x, -1, keepdim=True)),
    ("aminmax", lambda m, x: m.aminmax(x, dim=0)),
    ("aminmax_keepdim", lambda m, x: m.aminmax(x, dim=-1, keepdim=True)),
    ("max", lambda m, x: m.max(x, 0)),
    ("min_keepdim", lambda m, x: m.min(x, -1, keepdim=True)),
    ("argmax", lambda m, x: m.argmax(x, 0)),
    ("argmin_keepdim", lambda m, x: m.argmin(x, -1, keepdim=True)),
    ("median", lambda m, x: m.median(x, 0)),
    ("prod", lambda m, x: m.prod(x, 0)),
    ("prod_keepdim", lambda m, x: m.prod(x, -1, keepdim=True)),
    ("logsumexp", lambda m, x: m.logsumexp(x, 0)),
    ("std", lambda m, x: m.std(x, 0, correction=0)),
    ("var", lambda m, x: m.var(x, -1, correction=0)),
    ("var_mean", lambda m, x: m.var_mean(x, 0, correction=0)),
    ("std_mean", lambda m, x: m.std_mean(x, -1, correction=0)),
    ("norm", lambda m, x: m.norm(x, dim=0)),
    ("count_nonzero", lambda m, x: m.count_nonzero(x, 0)),
    ("cumsum", lambda m, x: m.cumsum(x, 0)),
    ("cumprod", lambda m, x: m.cumprod(x, -1)),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, 0)),
    ("cummax", lambda m, x: m.cummax(x, 0)),
    ("softmax", lambda m, x: m.softmax(x, 0)),
    ("log_softmax", lambda m, x: m.log_softmax(x, -1)),
    ("sort", lambda m, x: m.sort(x, 0)),
    ("argsort", lambda m, x: m.argsort(x, -1)),
    ("topk", lambda m, x: m.topk(x, 1, 0)),
    ("kthvalue", lambda m, x: m.kthvalue(x, 1, 0)),
    ("mode", lambda m, x: m.mode(x, 0)),
    # torch's errors are kept: dim 1 is out of range, and select has no element to take
    ("sum_dim_1", lambda m, x: m.sum(x, 1)),
    ("amax_dim_1", lambda m, x: m.amax(x, 1)),
    ("softmax_dim_1", lambda m, x: m.softmax(x, 1)),
    ("select", lambda m, x: m.select(x, 0, 0)),
]


@pytest.mark.parametrize("fn", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_op_over_the_one_element_of_0dim_examples(fn):
    same(lambda m: m.func.vmap(lambda x: fn(m, x))(m.tensor(B)))


def test_unbiased_std_of_one_element_is_nan():
    # (torch's warning about the degrees of freedom is not compared: vmap's differs)
    same(lambda m: m.func.vmap(lambda x: (m.std(x, 0), m.var(x, -1)))(m.tensor(B)),
         check_warnings=False)
