"""fxlens: see what torch.compile did, find whose fault a failure is, and shrink it to a reproducer.

Kept light on purpose: importing `fxlens.backend` (what `torch.compile(backend="fxlens")` does)
runs this file, and must not pay for the toolkit. It resolves `fxlens.expect` (the compile-budget
context manager) only when it is first used.
"""

__version__ = "0.1.0"

# `from fxlens import expect`: resolved on first use, so `import fxlens` stays free of torch
_LAZY = {"expect": "fxlens.budget.context", "BudgetExceeded": "fxlens.budget.context"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fxlens' has no attribute {name!r}")
