"""The report: recompile root causes, the report dict (DESIGN.md's JSON contract), text output, and
the `fxlens report` command. Reads `fxlens.trace` only.

`fxlens.report.build_report` and `fxlens.report.render_text` (the old module's names) still resolve.
"""

from fxlens._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, "fxlens.report.build")
