"""Measuring compiled code where it runs: the child-side timing and memory probe (hook.py, on the
torch.compile hook of fxlens.capture), the interleaved eager-vs-compiled timing and its statistics
(interval.py, stats.py).

Below the commands: `fxlens doctor` ranks findings from it and `fxlens fix --speed` times its
re-runs with it, and neither imports the other. Uses `fxlens.capture`, `fxlens.trace` and
`fxlens.report`.
"""
