"""The stage ladders `fxlens bisect` steps, and the binary searches it runs inside a stage.

A ladder is an ordered list of backends, each doing strictly more of the compiler's work than the
one before, ending with the backend under test. The searches are pure: they take a predicate that
starts one child run and say which graph, kernel or fusion decision the failure needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fxlens.backend.stages import family, stage


def ladder(backend: str) -> list[str]:
    """The stages to step for `backend`, ending with it.

    Examples:
        >>> ladder("fxlens")
        ['fxlens_eager', 'fxlens_aot_eager', 'fxlens_nofusion', 'fxlens']
        >>> ladder("my_backend.py:compile_fn")
        ['eager', 'aot_eager', 'my_backend.py:compile_fn']
    """
    if stage(backend) is None:
        return ["eager", "aot_eager", backend]
    names = [s.name for s in family(backend)]
    return names[: names.index(backend) + 1]


def can(name: str, what: str) -> bool:
    """Whether stage `name` has the column `what` set (`codegen`, `fuses`, `torch_bisectable`, ...);
    False for a backend that is no row (the script's own)."""
    row = stage(name)
    return bool(row and getattr(row, what))


@dataclass(frozen=True)
class Narrowed:
    """The result of narrowing a range of items (graphs, kernels) down to the failing one."""

    lo: int
    hi: int
    confirmed: bool  # a run with exactly [lo, hi] under test reproduced the failure

    @property
    def single(self) -> int | None:
        return self.lo if self.lo == self.hi and self.confirmed else None


def narrow(n: int, reproduces: Callable[[int, int], bool], hint: int | None = None) -> Narrowed:
    """Find the one item of `0..n-1` that, alone under test, reproduces the failure.

    The caller knows that all `n` items under test fail. `hint` (an item the failing run itself
    blamed) is tried first: one run when it is right. Otherwise a binary search keeps the
    invariant "items lo..hi under test fail": it tests the lower half, and when that passes,
    takes the upper half without a run (re-checked at the end when never run alone), so it
    costs about log2(n) runs.

    Args:
        n: number of items.
        reproduces: `reproduces(lo, hi)` starts a run with items lo..hi under test.
        hint: the item to try first, if any.

    Returns:
        Narrowed; `confirmed` is False when no single item reproduces (flaky, or the failure needs
        several items together: then lo..hi is the last range known to fail).
    """
    if n <= 0:
        return Narrowed(0, -1, False)
    if n == 1:
        return Narrowed(0, 0, True)
    if hint is not None and 0 <= hint < n and reproduces(hint, hint):
        return Narrowed(hint, hint, True)
    lo, hi, tested = 0, n - 1, True
    while lo < hi:
        mid = (lo + hi) // 2
        if reproduces(lo, mid):
            hi, tested = mid, True
        else:
            lo, tested = mid + 1, False
    if not tested:
        tested = reproduces(lo, hi)
    return Narrowed(lo, hi, tested)


def first_failing(n: int, fails: Callable[[int], bool]) -> int | None:
    """The smallest k in 1..n with `fails(k)`, for a monotone predicate with fails(n) known true.

    Used for fusion decisions: `fails(k)` runs with only the first k fusions applied; k = 0 is the
    unfused stage, known good. Returns None when n < 1.
    """
    if n < 1:
        return None
    lo, hi = 1, n  # invariant: fails(hi), not fails(lo - 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
