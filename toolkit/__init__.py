"""fxlens: see what torch.compile did, find whose fault a failure is, and shrink it to a reproducer.

Kept light on purpose: importing `fxlens.backend` (what `torch.compile(backend="fxlens")` does)
runs this file, and must not pay for the toolkit. The one thing it does is register the finder that
keeps the old flat module paths (`fxlens.session`, `fxlens.minify_check`, ...) importable.
"""

from fxlens import _lazy

__version__ = "0.1.0"

_lazy.install()
