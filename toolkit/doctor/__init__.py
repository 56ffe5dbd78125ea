"""`fxlens doctor`: the child-side timing probe, per-function statistics, and ranked findings.

Uses `fxlens.capture`, `fxlens.trace` and `fxlens.report`; never imports `fxlens.bisect` or
`fxlens.minify`.
"""

from fxlens._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, "fxlens.doctor.command")
