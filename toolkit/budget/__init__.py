"""Compile budgets: `fxlens.expect(...)` around a block, and the pytest plugin built on it.

Counts graphs, graph breaks, recompiles and fxlens kernels/fallbacks in-process from torch's
structured trace, and words each excess item as the report does. Reads `fxlens.trace` and
`fxlens.report` only.
"""
