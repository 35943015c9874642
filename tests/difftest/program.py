"""A program: steps of Python source written against ``torch`` (and ``F`` for
``torch.nn.functional``), which the runner executes once with torch and once with ember in its
place. The same text serves both libraries and is the reproducer a user runs."""
from __future__ import annotations

from dataclasses import dataclass, replace

ALL_LIVE = "*"  # an ``observe`` entry: every live variable (after backward, hooks may have run)


@dataclass(frozen=True)
class Step:
    """One statement (or a ``with`` block) of a program."""

    code: str
    tag: str  # what it exercises: "op:gather", "inplace:mul_", "backward", ... (for grouping)
    defines: tuple[str, ...] = ()  # the names it binds
    uses: tuple[str, ...] = ()  # the names it reads (removing their step removes this one)
    observe: tuple[str, ...] | None = None  # what is compared after it (None: what it defines)
    gradients: bool = False  # what it defines are gradients (autograd.grad, x.grad)
    compiled: bool = False  # what it defines a compiled function returned (see runner.py)

    def observed(self) -> tuple[str, ...]:
        return self.defines if self.observe is None else self.observe


@dataclass(frozen=True)
class Program:
    seed: int
    steps: tuple[Step, ...]

    def without(self, i: int) -> "Program":
        """The program without step ``i`` and every later step that reads what it defines."""
        gone = set(self.steps[i].defines)
        kept = []
        for k, step in enumerate(self.steps):
            if k == i:
                continue
            if k > i and gone.intersection(step.uses):
                gone.update(step.defines)
                continue
            kept.append(step)
        return replace(self, steps=tuple(kept))

    def source(self, note: str = "") -> str:
        """The program as a script: run it with ``import torch``, then ``import ember as torch``."""
        head = ["import torch", "import torch.nn.functional as F", "",
                "def _rec(key, *values):  # what a hook received",
                "    print(key, *values)", "",
                "# ember.compile, against torch's eager mode (docs/difftest.md)",
                "_compile = torch.compile if torch.__name__ == 'ember' else (lambda f: f)", ""]
        body = [s.code for s in self.steps]
        tail = [""] + [f"# {line}" for line in note.splitlines()] if note else []
        return "\n".join(head + body + tail) + "\n"
