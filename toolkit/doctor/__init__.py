"""`fxlens doctor`: the child-side timing probe, per-function statistics, and ranked findings.

Uses `fxlens.capture`, `fxlens.trace` and `fxlens.report`; never imports `fxlens.bisect` or
`fxlens.minify`.
"""
