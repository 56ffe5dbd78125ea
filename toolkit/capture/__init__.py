"""`fxlens run`: the runner child that executes the user's script with capture on, the torch.compile
hook that records and overrides backends, and backend-name resolution. Uses `fxlens.trace` and
`fxlens.report` (to print the summary); bisect, minify and doctor build on it.
"""
