"""Pytrees as torch's ``torch.utils._pytree`` has them: nested containers flattened to a list of
leaves and a :class:`TreeSpec` that builds the container again. Libraries import it directly
(x-transformers and torch-einops-utils map ``detach`` over their cached outputs with
``tree_map``, and flatten and rebuild a layer's outputs).

Which objects are containers is torch's rule: a registered type, matched exactly (a subclass of
``tuple`` or ``dict`` is a leaf unless it is registered), and any named tuple, which flattens to
its fields with its class as context. tuple, list, dict, ``OrderedDict``, ``defaultdict`` and
``deque`` are registered here; ``ember.return_types`` results are nodes of their own type, as
torch registers each of its ``torch.return_types``.
"""
from __future__ import annotations

import functools
import types
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, Callable, NamedTuple

__all__ = ["TreeSpec", "register_pytree_node", "tree_is_leaf", "tree_flatten", "tree_unflatten",
           "tree_iter", "tree_leaves", "tree_structure", "tree_map", "tree_map_", "map_only",
           "tree_map_only", "tree_map_only_", "tree_all", "tree_any", "tree_all_only",
           "tree_any_only", "treespec_leaf", "treespec_tuple", "treespec_dict",
           "treespec_pprint", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance"]


class NodeDef(NamedTuple):
    type: Any
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Callable | None


SUPPORTED_NODES: dict = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Makes ``cls`` a container: ``flatten_fn(obj)`` gives ``(children, context)`` and
    ``unflatten_fn(children, context)`` the object again. (The serialization arguments are
    taken and unused: ember has no treespec serialization.)"""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def is_namedtuple_class(cls) -> bool:
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(field) is str for field in cls._fields)
            and callable(getattr(cls, "_make", None))
            and callable(getattr(cls, "_asdict", None)))


def is_namedtuple_instance(obj) -> bool:
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def _is_return_type(cls) -> bool:
    # ember's return types are named tuples; torch's are structseqs, each registered as a node
    # of its own type (``TreeSpec(max, None, [...])``), not as a namedtuple
    return getattr(cls, "__module__", None) == "ember.return_types"


def _register_return_type(cls):
    register_pytree_node(cls, lambda result: (list(result), None),
                         lambda values, _: cls(*values))


def _get_node_type(tree):
    node_type = type(tree)
    if _is_return_type(node_type):
        if node_type not in SUPPORTED_NODES:
            _register_return_type(node_type)
        return node_type
    if is_namedtuple_class(node_type):
        return namedtuple
    return node_type


def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf: ``is_leaf`` says so, or its type is no container."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _get_node_type(tree) not in SUPPORTED_NODES


def _flatten_children(node):
    return SUPPORTED_NODES[_get_node_type(node)].flatten_fn(node)


def _treespec_text(node_type, context, children, indent=0):
    """torch's text of a TreeSpec: the context as str(), each child after the first on a line
    of its own, indented two more spaces at each level (children print with ``__repr__``
    taking the indent)."""
    inner = ""
    if children:
        indent += 2
        inner = children[0].__repr__(indent) + ("," if len(children) > 1 else "")
        inner += ",".join("\n" + " " * indent + child.__repr__(indent) for child in children[1:])
    return f"TreeSpec({node_type.__name__}, {context}, [{inner}])"


class TreeSpec:
    """The structure of a pytree: the root's node type and context and its children's specs
    (a leaf's type and context are None)."""

    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type, context, children_specs):
        self.type, self._context, self._children = type, context, list(children_specs)
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if self._children:
                raise AssertionError("leaf node should not have children")
            self.num_nodes, self.num_leaves = 1, 1
        else:
            self.num_nodes = 1 + sum(child.num_nodes for child in self._children)
            self.num_leaves = sum(child.num_leaves for child in self._children)
        self.num_children = len(self._children)

    @property
    def context(self):
        return self._context

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list:
        return self._children.copy()

    def child(self, index):
        return self._children[index]

    def __repr__(self, indent=0):
        return "*" if self.type is None else _treespec_text(self.type, self._context,
                                                           self._children, indent)

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self):
        context = self._context
        if self.type is defaultdict:
            context = (context[0], tuple(context[1]))
        elif self.type in (dict, OrderedDict):
            context = tuple(context)
        elif self.type is not None and self.type not in _BUILTIN_TYPES:
            context = None  # a registered type's context may not be hashable
        return hash((self.type, context, tuple(self._children)))

    def unflatten(self, leaves):
        """The pytree of this structure holding ``leaves``."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        if self.is_leaf():
            return leaves[0]
        children, start = [], 0
        for child in self._children:
            children.append(child.unflatten(leaves[start:start + child.num_leaves]))
            start += child.num_leaves
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of ``tree`` at this structure's leaves (``tree`` has this structure as
        a prefix; plain dicts, OrderedDicts and defaultdicts stand for one another)."""
        subtrees = []
        self._collect_subtrees(tree, subtrees)
        return subtrees

    def _collect_subtrees(self, node, subtrees):
        if self.is_leaf():
            subtrees.append(node)
            return
        node_type = _get_node_type(node)
        if self.type not in _BUILTIN_TYPES:
            children = self._custom_children(node, node_type)
        elif self.type in _DICT_TYPES and node_type in _DICT_TYPES:
            children = self._dict_children(node)
        else:
            if node_type != self.type:
                raise ValueError(f"Node type mismatch; expected {self.type!r}, but got "
                                 f"{node_type!r}.")
            self._check_arity(len(node))
            children, context = _flatten_children(node)
            if node_type is not deque and context != self._context:  # (a deque's maxlen may differ)
                raise ValueError(f"Node context mismatch for node type {self.type!r}; expected "
                                 f"{self._context!r}, but got {context!r}.")
        for child, spec in zip(children, self._children):
            spec._collect_subtrees(child, subtrees)

    def _check_arity(self, count):
        if count != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got "
                             f"{count}.")

    def _custom_children(self, node, node_type):
        if node_type != self.type:
            raise ValueError(f"Type mismatch; expected {self.type!r}, but got {node_type!r}.")
        children, context = _flatten_children(node)
        self._check_arity(len(children))
        if context != self._context:
            raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        return children

    def _dict_children(self, node):
        self._check_arity(len(node))
        keys = self._context[1] if self.type is defaultdict else self._context
        got, expected = set(node), set(keys)
        if got != expected:
            message = ""
            if expected - got:
                message += f"; missing key(s): {expected - got}"
            if got - expected:
                message += f"; extra key(s): {got - expected}"
            raise ValueError(f"Node keys mismatch{message}.")
        return [node[key] for key in keys]


_LEAF_SPEC = TreeSpec(None, None, [])


def treespec_leaf() -> TreeSpec:
    return _LEAF_SPEC


def treespec_tuple(iterable=(), /) -> TreeSpec:
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping=(), /, **kwargs) -> TreeSpec:
    children = dict(mapping, **kwargs)
    return TreeSpec(dict, list(children), list(children.values()))


def tree_flatten(tree, is_leaf=None):
    """``(leaves, treespec)``: the leaves in order, and the structure that holds them."""
    leaves = []

    def visit(node):
        if tree_is_leaf(node, is_leaf=is_leaf):
            leaves.append(node)
            return _LEAF_SPEC
        children, context = _flatten_children(node)
        return TreeSpec(_get_node_type(node), context, [visit(child) for child in children])

    return leaves, visit(tree)


def tree_unflatten(leaves, treespec):
    """The pytree of structure ``treespec`` holding ``leaves`` (the two may come swapped)."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError("Expected `treespec` to be an instance of PyTreeSpec but got item "
                            f"of type {type(treespec)}.")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    if tree_is_leaf(tree, is_leaf=is_leaf):
        yield tree
        return
    for child in _flatten_children(tree)[0]:
        yield from tree_iter(child, is_leaf=is_leaf)


def tree_leaves(tree, is_leaf=None) -> list:
    return list(tree_iter(tree, is_leaf=is_leaf))


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    return tree_flatten(tree, is_leaf=is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """A pytree of ``tree``'s structure holding ``func`` of each leaf (and of the subtrees of
    ``rests`` at that place)."""
    leaves, treespec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(rest) for rest in rests]
    return treespec.unflatten(map(func, *flat_args))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Calls ``func`` on each leaf (for its side effect) and returns ``tree``."""
    leaves, treespec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(rest) for rest in rests]
    for args in zip(*flat_args):
        func(*args)
    return tree


def map_only(type_or_types_or_pred, /):
    """A decorator: the function applies to the values of the given types (or passing the given
    predicate), other values pass through unchanged."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x):
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func):
        @functools.wraps(func)
        def wrapped(x):
            return func(x) if pred(x) else x
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_any(pred, tree, is_leaf=None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    return all(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    return any(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


class _Asterisk(str):
    """A leaf of :func:`treespec_pprint`: ``*`` without quotes."""

    __slots__ = ()

    def __repr__(self):
        return "*"


def treespec_pprint(treespec) -> str:
    """The structure written as Python, with ``*`` for each leaf: ``{'a': (*, [*])}``."""
    return repr(tree_unflatten([_Asterisk("*")] * treespec.num_leaves, treespec))


# -- the containers torch registers ---------------------------------------------------------------
def _sequence_flatten(seq):
    return list(seq), None


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _defaultdict_flatten(d):
    values, keys = _dict_flatten(d)
    return values, [d.default_factory, keys]


def _defaultdict_unflatten(values, context):
    default_factory, keys = context
    return defaultdict(default_factory, zip(keys, values))


register_pytree_node(tuple, _sequence_flatten, lambda values, _: tuple(values))
register_pytree_node(list, _sequence_flatten, lambda values, _: list(values))
register_pytree_node(dict, _dict_flatten, lambda values, keys: dict(zip(keys, values)))
register_pytree_node(namedtuple, lambda nt: (list(nt), type(nt)),
                     lambda values, cls: cls(*values))
register_pytree_node(OrderedDict, _dict_flatten,
                     lambda values, keys: OrderedDict(zip(keys, values)))
register_pytree_node(defaultdict, _defaultdict_flatten, _defaultdict_unflatten)
register_pytree_node(deque, lambda d: (list(d), d.maxlen),
                     lambda values, maxlen: deque(values, maxlen=maxlen))

_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
_BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})
