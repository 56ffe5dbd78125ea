"""fxlens: see what torch.compile did, find whose fault a failure is, and shrink it to a reproducer.

Kept light on purpose: importing `fxlens.backend` (what `torch.compile(backend="fxlens")` does)
runs this file, and must not pay for the toolkit.
"""

__version__ = "0.1.0"
