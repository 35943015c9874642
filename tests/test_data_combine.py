"""ChainDataset and StackDataset (and ``+`` on iterable datasets) against torch 2.13: what they
give alone and through a DataLoader, and their errors."""
import numpy as np
import pytest
from oracle import same

X = np.arange(12.0).reshape(6, 2)


def _stream(torch, n, start=0):
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(start, start + n))

        def __len__(self):
            return n
    return Stream()


def test_chain():
    def body(torch):
        data = torch.utils.data
        chain = data.ChainDataset([_stream(torch, 3), _stream(torch, 2, 10)])
        added = _stream(torch, 2) + _stream(torch, 1, 5)
        loader = data.DataLoader(chain, batch_size=2)
        return (list(chain), len(chain), type(added).__name__, list(added),
                [b for b in loader])
    same(body)


def test_stack():
    def body(torch):
        data = torch.utils.data
        xs = data.TensorDataset(torch.tensor(X))
        labels = list("abcdef")
        pairs = data.StackDataset(xs, labels)
        named = data.StackDataset(x=xs, label=labels)
        loader = data.DataLoader(named, batch_size=4)
        return (len(pairs), pairs[1], named[2], pairs.__getitems__([0, 3]),
                named.__getitems__([5]), [b for b in loader], type(pairs + pairs).__name__)
    same(body)


ERRORS = {
    "chain_map_style": lambda data, torch: list(data.ChainDataset([[1, 2]])),
    "chain_len_map_style": lambda data, torch: len(data.ChainDataset([[1, 2]])),
    "stack_both": lambda data, torch: data.StackDataset([1], x=[2]),
    "stack_none": lambda data, torch: data.StackDataset(),
    "stack_sizes": lambda data, torch: data.StackDataset([1, 2], [3]),
    "stack_named_sizes": lambda data, torch: data.StackDataset(a=[1, 2], b=[3]),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    same(lambda torch: ERRORS[name](torch.utils.data, torch))
