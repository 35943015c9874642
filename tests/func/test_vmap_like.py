"""``*_like`` of an example under vmap is batched, as torch's: one tensor for each example
(laid out as torch lays it out), which may be written in place with batched values."""
import numpy as np
from oracle import same

X = np.random.default_rng(0).standard_normal((2, 3, 4))


def test_like_of_examples_is_batched_as_torch():
    def body(torch):
        x = torch.tensor(X, requires_grad=True)
        vmap = torch.func.vmap
        outs = [vmap(f)(x) for f in (
            lambda v: torch.empty_like(v).fill_(1.0),
            lambda v: torch.zeros_like(v).add_(v),  # (was refused: an unbatched self)
            lambda v: torch.empty_like(v).fill_(1.0).sub_(v),
            lambda v: torch.ones_like(v), lambda v: torch.zeros_like(v.t()),
            lambda v: torch.ones_like(v, dtype=torch.float32) * v,
            lambda v: torch.full_like(v, 2.0).mul_(v))]
        outs.append(vmap(vmap(lambda v: torch.zeros_like(v).add_(v)))(x))
        outs.append(vmap(torch.zeros_like, in_dims=1)(x))
        return outs, [o.stride() for o in outs]
    same(body)
