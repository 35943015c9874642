"""Write src/ember/_parser_signatures.py: the signatures torch's argument parser has for the
functions and Tensor methods listed below, as torch prints them.

    python tools/parser_signatures.py      # rewrites the table

A function of several signatures prints them all when a call has more arguments than any
takes. One of a single signature is read back from its errors: the required parameters from
a call with none, the number of positional ones from a call with too many, each one's name
and type from a call with an object of no known type in its place, whether it takes None
from a call with None there, and the keyword-only ones (named as torch.overrides names
them) the same way. This is a development tool: it imports torch (the reference).
"""
from __future__ import annotations

import inspect
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "src" / "ember" / "_parser_signatures.py"

FUNCTIONS = [
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "cat", "stack", "sum", "mean", "exp",
    "log", "sqrt", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "max", "min", "argmax",
    "argmin", "zeros_like", "ones_like", "where", "clamp", "abs", "pow", "transpose",
    "reshape", "squeeze", "unsqueeze", "flatten", "gather", "cumsum", "cumprod", "cummax",
    "cummin", "logcumsumexp", "sort", "argsort", "topk", "dot", "mv", "outer", "addmm",
    "baddbmm", "permute", "narrow", "index_select", "masked_fill", "split", "chunk", "clone",
    "neg", "sin", "cos", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "std",
    "var", "prod", "all", "any", "flip", "roll", "tril", "triu", "diag", "einsum",
    "ctc_loss", "lerp", "scatter", "scatter_add", "scatter_reduce", "index_copy",
    "index_fill", "masked_scatter", "take_along_dim", "index_add", "index_put", "diag_embed",
    "addcmul", "addcdiv", "masked_select", "take", "kthvalue", "bucketize", "searchsorted",
    "histc", "bincount", "repeat_interleave", "tensordot", "atan2", "fmod", "remainder",
    "full_like", "rand_like", "split_with_sizes", "unbind", "movedim", "select", "cross",
    "trace",
]
# (a method the registry makes reads the table only when a call fails, as view, expand and
# reshape do in their own except; another is wrapped, which costs it a frame: not the
# methods every model calls, sum, mean, permute...)
METHODS = [
    "copy_", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "mm", "bmm", "matmul",
    "softmax", "log_softmax", "masked_fill", "masked_fill_", "index_select", "gather",
    "clamp", "fill_", "type_as", "view_as", "expand_as", "narrow", "flatten", "sort", "topk",
    "lerp", "lerp_", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
    "scatter_reduce_", "index_copy", "index_copy_", "index_fill",
    "index_fill_", "masked_scatter", "masked_scatter_", "take_along_dim", "index_put_",
    "index_put", "index_add_", "index_add", "pow_", "pow", "unfold", "view", "expand",
    "diag_embed", "addcmul_", "addcmul", "addcdiv_", "addcdiv", "add", "add_", "sub_", "mul_",
    "reshape", "transpose", "repeat", "flip", "roll", "select", "squeeze", "unsqueeze",
    "masked_select", "put_", "take", "tril", "triu",
    "diagonal", "movedim", "split", "chunk", "tile", "new_zeros", "new_full", "argmax", "max",
    "prod", "std", "var", "norm", "renorm", "dist", "cross", "kthvalue", "index_reduce_",
]


# the signatures torch's parser has but does not print (its deprecated forms): a listing of
# one printed signature says there are some, not what they are
HIDDEN = {
    ("FUNCTIONS", "add"): ["(Tensor input, Number alpha, Tensor other, *, Tensor out = None)"],
    ("FUNCTIONS", "sub"): ["(Tensor input, Number alpha, Tensor other, *, Tensor out = None)"],
    ("METHODS", "copy_"): ["(Tensor other, bool async = False)"],
    **{("FUNCTIONS", name): [
        "(Tensor input, Number value, Tensor tensor1, Tensor tensor2, *, Tensor out = None)"]
       for name in ("addcmul", "addcdiv")},
    **{("METHODS", name): ["(Number value, Tensor tensor1, Tensor tensor2)"]
       for name in ("addcmul", "addcmul_", "addcdiv", "addcdiv_")},
    **{("METHODS", name): ["(Number alpha, Tensor other)"] for name in ("add", "add_", "sub_")},
}


class Probe:
    """An object of a type no parameter takes."""


_SAMPLES = {}


def _sample(kind, torch):
    if not _SAMPLES:
        _SAMPLES.update({
            "Tensor": torch.ones(2, 2), "int": 0, "float": 1.0, "bool": False, "Number": 1,
            "tuple of ints": (0,), "torch.dtype": torch.float32, "str": "mean",
            "tuple of Tensors": [torch.ones(2)], "torch.Generator": torch.Generator(),
            "torch.layout": torch.strided, "torch.device": "cpu",
            "torch.memory_format": torch.contiguous_format})
    if kind not in _SAMPLES:
        raise LookupError(kind)
    return _SAMPLES[kind]


def _error(call, *args, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the message is what is read
        return str(e)
    return ""


def _listing(message):
    """The printed signatures of a listing error, and whether torch has others it hides
    (a listing of one signature)."""
    if "but expected one of:\n" in message:
        return [line[3:] for line in message.split("\n") if line.startswith(" * ")], False
    match = re.search(r"but expected (\(.*\))$", message, re.S)
    return ([match.group(1)], True) if match else (None, False)


def _single(name, call, keyword_names, torch):
    """The printed form of a single signature, read back from its errors."""
    missing = _error(call)
    required = re.findall(r'"(\w+)"', missing) if "required positional" in missing else []
    too_many = _error(call, *[Probe()] * 30)
    counts = re.search(r"takes (?:from (\d+) to )?(\d+) positional", too_many)
    if counts is None:
        raise LookupError(too_many)
    positional = int(counts.group(2))
    params, values = [], []
    pattern = r"argument '(\w+)' \(position \d+\) must be (.+), not Probe$"
    for _ in range(positional):
        found = re.search(pattern, _error(call, *values, Probe()))
        if found is None:
            raise LookupError(name)
        pname, kind = found.groups()
        takes_none = "not NoneType" not in _error(call, *values, None)
        params.append((pname, kind, pname not in required, takes_none, False))
        values.append(_sample(kind, torch))
    firsts = [v for v, p in zip(values, params) if not p[2]]
    for pname in keyword_names:
        if pname in [p[0] for p in params]:
            continue
        found = re.search(rf"argument '{pname}' must be (.+), not Probe$",
                          _error(call, *firsts, **{pname: Probe()}))
        if found is None:
            continue
        takes_none = "not NoneType" not in _error(call, *firsts, **{pname: None})
        params.append((pname, found.group(1), True, takes_none, True))
    words, keyword_only = [], False
    for pname, kind, optional, takes_none, kw in params:
        if kw and not keyword_only:
            words.append("*")
            keyword_only = True
        default = " = None" if optional and takes_none else "?" if optional else ""
        words.append(f"{kind} {pname}{default}")
    return "(" + ", ".join(words) + ")"


def _entry(name, call, keyword_names, torch):
    listed, hidden = _listing(_error(call, *[Probe()] * 30))
    if listed is not None:
        return listed, hidden
    return [_single(name, call, keyword_names, torch)], False


def _keyword_names(torch, fn, name):
    # (torch.overrides leaves out some keyword-only ones: out, often, and index_add's alpha;
    # aten's schemas name the others, and the usual ones are tried)
    lam = torch.overrides.get_testing_overrides().get(fn)
    named = list(inspect.signature(lam).parameters) if lam is not None else []
    return list(dict.fromkeys(named + _schema_keywords(torch, name)
                              + ["dtype", "layout", "device", "pin_memory", "requires_grad",
                                 "memory_format", "generator", "out"]))


def _schema_keywords(torch, name):
    """The keyword-only arguments of aten operator ``name``'s overloads, in their order."""
    packet = getattr(torch.ops.aten, name, None)
    if packet is None or not hasattr(packet, "overloads"):
        return []
    return [a.name for o in packet.overloads()
            for a in getattr(packet, o)._schema.arguments if a.kwarg_only]


# the aten operators whose schemas ember.ops.aten matches calls against (the losses: their
# reduction is aten's int)
ATEN = ["mse_loss", "l1_loss", "nll_loss", "nll_loss2d", "nll_loss_nd", "binary_cross_entropy",
        "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
        "multilabel_margin_loss", "multi_margin_loss", "hinge_embedding_loss",
        "margin_ranking_loss", "poisson_nll_loss", "cross_entropy_loss", "kl_div",
        "cosine_embedding_loss", "triplet_margin_loss", "ctc_loss"]


def main():
    import torch
    table = {}
    for kind, names in (("FUNCTIONS", FUNCTIONS), ("METHODS", METHODS)):
        entries = {}
        for name in names:
            if kind == "FUNCTIONS":
                fn = getattr(torch, name)
                call = fn
            else:
                fn = getattr(torch.Tensor, name)
                call = getattr(torch.ones(2, 2), name)
            try:
                texts, hidden = _entry(name, call, _keyword_names(torch, fn, name), torch)
            except LookupError as e:
                print(f"skipped {kind.lower()[:-1]} {name}: {e}", file=sys.stderr)
                continue
            if hidden and (kind, name) not in HIDDEN:
                print(f"skipped {kind.lower()[:-1]} {name}: hidden signatures", file=sys.stderr)
                continue
            entries[name] = texts, HIDDEN.get((kind, name), []) if hidden else []
        table[kind] = entries
    lines = ['"""The signatures of torch\'s argument parser for some functions and Tensor methods,',
             "as torch prints them (written by tools/parser_signatures.py from torch "
             f"{torch.__version__.split('+')[0]}).",
             "",
             "{name: (printed signatures, hidden signatures)}: the hidden ones (deprecated "
             "forms) torch", "takes but does not print; a parameter marked ``?`` is optional "
             'with a default torch', 'does not print."""', ""]
    for kind, entries in table.items():
        lines.append(f"{kind} = {{")
        for name, (texts, hidden) in entries.items():
            texts = tuple(t.replace("torch.", "ember.") for t in texts)
            lines.append(f"    {name!r}: ({texts!r}, {tuple(hidden)!r}),")
        lines.append("}")
    lines.append("# {aten operator: the schema of each of its overloads, in torch's order}")
    lines.append("ATEN_SCHEMAS = {")
    for name in ATEN:
        packet = getattr(torch.ops.aten, name)
        schemas = tuple(str(getattr(packet, o)._schema) for o in packet.overloads())
        lines.append(f"    {name!r}: {schemas!r},")
    lines.append("}")
    TABLE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
