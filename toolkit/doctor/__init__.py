"""`fxlens doctor`: eager and compiled runs side by side, and ranked findings.

Uses `fxlens.probe` (the child-side timing probe and its statistics), `fxlens.capture`,
`fxlens.trace` and `fxlens.report`; never imports `fxlens.bisect` or
`fxlens.minify`.
"""
