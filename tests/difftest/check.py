"""Check programs: run each in both libraries, compare, and shrink what disagrees."""
from __future__ import annotations

from dataclasses import dataclass

from .gen import generate
from .program import Program
from .runner import Mismatch, compare, execute


@dataclass
class Failure:
    program: Program
    mismatch: Mismatch

    def cause(self) -> tuple:
        """What groups failures: the kind of difference and the step that shows it."""
        return (self.mismatch.what, self.mismatch.tag(self.program))

    def report(self) -> str:
        note = self.mismatch.describe(self.program)
        return f"seed {self.program.seed}: {note}\n{self.program.source(note)}"


def run_both(program: Program, ember, torch) -> Mismatch | None:
    return compare(execute(program, ember), execute(program, torch))


def check_seed(seed: int, ember, torch) -> tuple[Program, Failure | None]:
    program = generate(seed, torch)
    m = run_both(program, ember, torch)
    return program, None if m is None else Failure(program, m)


def shrink(failure: Failure, ember, torch, budget: int = 400) -> Failure:
    """A smaller program that fails for the same cause: steps are dropped (with the steps that
    read what they define) while the difference stays, until none can be dropped."""
    cause = failure.cause()
    best = failure
    progress = True
    while progress and budget > 0:
        progress = False
        i = len(best.program.steps) - 1
        while i >= 0 and budget > 0:
            candidate = best.program.without(i)
            budget -= 1
            m = run_both(candidate, ember, torch)
            if m is not None and Failure(candidate, m).cause() == cause:
                best = Failure(candidate, m)
                progress = True
            i = min(i, len(best.program.steps)) - 1
    return best
