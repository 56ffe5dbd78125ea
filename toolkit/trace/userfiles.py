"""Tell the user's files from libraries' (the stdlib, site-packages, torch, triton, fxlens itself).

Paths only: frames, call paths and source lines that use this are in `fxlens.trace.userframes`.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
import sysconfig
from pathlib import Path


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Folders that are never the user's own code: stdlib, site-packages, torch, triton, fxlens itself.
    Found on first use (sysconfig and a search of sys.path): a report of a log without frames needs none."""
    roots = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    # site folders on the path beyond this interpreter's own (a venv whose packages live in another
    # venv's site-packages through a .pth, --system-site-packages, a shared PYTHONPATH)
    roots.update(p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages")))
    for pkg in ("torch", "triton"):
        spec = importlib.util.find_spec(pkg)  # finds without importing
        if spec and spec.origin:
            roots.add(str(Path(spec.origin).parent))
    here = Path(__file__).resolve().parents[1]  # toolkit/ (import name fxlens); this file is in trace/
    roots.update(str(here.parent / d) for d in ("toolkit", "backend", "tui"))
    roots.add(str(here))  # fxlens's own folder, whatever it is named (a copy on PYTHONPATH: `fxlens/`)
    return tuple(sorted(r.replace("\\", "/").rstrip("/") + "/" for r in roots if r))


_FOREIGN_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/lib/python3.")


def is_user_file(path: str) -> bool:
    """Whether `path` is the user's code (not torch's, not a library's, not the stdlib's)."""
    if not path or path.startswith("<"):
        return False
    p = path.replace("\\", "/")
    if "/fxlens/examples/" in p or "/toolkit/examples/" in p:
        return True  # fxlens's bundled examples are the user's code when `fxlens demo` runs them
    # the markers catch traces written on another machine, whose library paths differ from ours
    return not p.startswith(_library_roots()) and not any(m in p for m in _FOREIGN_LIBRARY_MARKERS)


_SITE = re.compile(r".*/(?:site-packages|dist-packages)/")


def library_path(path: str) -> str:
    """A library file as its package path: `.../site-packages/transformers/x.py` -> `transformers/x.py`."""
    p = path.replace("\\", "/")
    m = _SITE.match(p)
    if m:
        return p[m.end() :]
    for root in _library_roots():
        if p.startswith(root):
            return p[len(root) :]
    return p


def is_library_code(path: str) -> bool:
    """Whether a file named in one of torch's guard comments is a library's. torch writes those
    relative to the package root (`transformers/utils/deprecation.py`) or shortened (`mp/g/kinds.py`
    for the user's own file): a relative path is a library's when it exists under a library root."""
    if not path or path.startswith("<"):
        return False
    p = path.replace("\\", "/")
    if p.startswith("/"):
        return not is_user_file(p)
    return any(os.path.isfile(root + p) for root in _library_roots())
