"""Compile budgets: `fxlens.expect(...)` around a block, and the pytest plugin built on it.

Counts graphs, graph breaks, recompiles and fxlens kernels/fallbacks in-process from torch's
structured trace, and words each excess item as the report does. Reads `fxlens.trace` and
`fxlens.report` only.

`fxlens.budget.expect` and `fxlens.budget.BudgetExceeded` resolve lazily (from `.context`).
"""

from fxlens._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, "fxlens.budget.context")
