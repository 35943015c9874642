"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from __future__ import annotations

__all__ = ['Container', 'ModuleDict', 'ModuleList', 'ParameterDict', 'ParameterList',
           'Sequential']

import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import chain, islice

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, typename


def _addindent(text, n):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * n + line for line in lines)


class Container(Module):
    """Deprecated: a Module holding the modules given as keyword arguments."""

    def __init__(self, **kwargs):
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


def _abs_index(container, idx):
    idx = operator.index(idx)
    if not (-len(container) <= idx < len(container)):
        raise IndexError(f"index {idx} is out of range")
    return str(idx + len(container) if idx < 0 else idx)


class Sequential(Module):
    """A sequential container: modules run in the order they were added."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _get_item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return next(islice(iterator, idx % size, None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx, module):
        key = self._get_item_by_idx(self._modules.keys(), idx)
        setattr(self, key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._get_item_by_idx(self._modules.keys(), idx))
        self._modules = OrderedDict(
            (str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "  # noqa: TRY004
                             f"{type(other)!s} is given.")
        ret = Sequential()
        for layer in chain(self, other):
            ret.append(layer)
        return ret

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "  # noqa: TRY004
                             f"{type(other)!s} is given.")
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def __mul__(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        combined = Sequential()
        offset = 0
        for _ in range(other):
            for module in self:
                combined.add_module(str(offset), module)
                offset += 1
        return combined

    __rmul__ = __mul__

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def __iter__(self):
        return iter(self._modules.values())

    def forward(self, input):
        for module in self:
            input = module(input)
        return input

    def append(self, module):
        """Append a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert a module before ``index``."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")  # noqa: TRY004
        n = len(self._modules)
        if not (-n <= index <= n):
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        """Append the modules of an iterable."""
        for layer in sequential:
            self.append(layer)
        return self


class ModuleList(Module):
    """Holds submodules in a list."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[_abs_index(self, idx)]

    def __setitem__(self, idx, module):
        setattr(self, _abs_index(self, idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, _abs_index(self, idx))
        self._modules = OrderedDict(
            (str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __repr__(self):
        reprs = [repr(item) for item in self]
        if not reprs:
            return self._get_name() + "()"
        # Runs of identical modules print once, as "(start-end): n x repr".
        blocks = [[0, 0, reprs[0]]]
        for i, r in enumerate(reprs[1:], 1):
            if r == blocks[-1][2]:
                blocks[-1][1] += 1
            else:
                blocks.append([i, i, r])
        lines = []
        for start, end, b in blocks:
            text = f"({start}): {b}" if start == end else \
                f"({start}-{end}): {end - start + 1} x {b}"
            lines.append(_addindent(text, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index, module):
        """Insert a module before ``index``."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        """Append a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Append the modules of an iterable."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """Holds submodules in a dictionary."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Update with the key/module pairs of a mapping or an iterable."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            "pairs, but got " + type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, container_abcs.Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, m in enumerate(modules):
            if not isinstance(m, container_abcs.Iterable):
                raise TypeError("ModuleDict update sequence element #" + str(j)
                                + " should be Iterable; is" + type(m).__name__)
            if not len(m) == 2:
                raise ValueError("ModuleDict update sequence element #" + str(j)
                                 + " has length " + str(len(m)) + "; 2 is required")
            self[m[0]] = m[1]


def _param_line(k, p, kind_name):
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.size())
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({k}): {kind} containing: [{kind_name(p)} of size {size}]"
    return f"  ({k}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """Holds parameters in a list."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, _abs_index(self, idx))

    def __setitem__(self, idx, param):
        idx = _abs_index(self, idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, idx, param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        """Append a value (tensors become Parameters)."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values):
        """Append the values of an iterable."""
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_param_line(k, p, lambda t: t.dtype) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """Holds parameters in a dictionary."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value):
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def __contains__(self, key):
        return key in self._keys

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in self._keys.copy():
            del self[k]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        k, _ = self._keys.popitem()
        self._keys[k] = None
        val = self[k]
        del self[k]
        return k, val

    def get(self, key, default=None):
        return self[key] if key in self else default  # noqa: SIM401 - torch's lookup

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Update with the key/value pairs of a mapping or an iterable."""
        if not isinstance(parameters, container_abcs.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, container_abcs.Mapping):
            for key, parameter in sorted(parameters.items()):
                self[key] = parameter
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, container_abcs.Iterable):
                    raise TypeError("ParameterDict update sequence element #" + str(j)
                                    + " should be Iterable; is" + type(p).__name__)
                if not len(p) == 2:
                    raise ValueError("ParameterDict update sequence element #" + str(j)
                                     + " has length " + str(len(p)) + "; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self):
        return "\n".join(_param_line(k, p, typename) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other):
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other):
        self.update(other)
        return self
