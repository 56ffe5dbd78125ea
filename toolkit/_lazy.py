"""Old import paths keep working after toolkit/ became one subpackage per capability.

Two mechanisms, both lazy so that `import fxlens` (run by `import fxlens.backend`) stays free:
- `MOVED` maps each old flat module (`fxlens.session`) to its new home (`fxlens.trace.session`); a
  finder on `sys.meta_path` makes the old name import the new module itself (one module object, so
  `isinstance` and monkeypatching agree under both names);
- `lazy_exports` lets a capability package answer the old module's attributes
  (`fxlens.report.build_report`) from the module that now holds them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED = {
    "trace_reader": "trace.reader",
    "records": "trace.records",
    "trace_model": "trace.model",
    "session": "trace.session",
    "graph_code": "trace.graph_code",
    "userframes": "trace.userframes",
    "runner": "capture.runner",
    "backends": "capture.backends",
    "report_cmd": "report.command",
    "rootcause": "report.rootcause",
    "bisect_ladder": "bisect.ladder",
    "bisect_run": "bisect.runs",
    "bisect_check": "bisect.check",
    "bisect_backend": "bisect.backend",
    "bisect_kernels": "bisect.kernels",
    "bisect_inductor": "bisect.inductor",
    "minify_aot": "minify.aot",
    "minify_capture": "minify.capture",
    "minify_check": "minify.check",
    "minify_graph": "minify.graph",
    "minify_pool": "minify.pool",
    "minify_reduce": "minify.reduce",
    "minify_verify": "minify.verify",
    "repro_writer": "minify.repro_writer",
    "doctor_findings": "doctor.findings",
    "doctor_probe": "doctor.probe",
    "doctor_stats": "doctor.stats",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None  # a throwaway module; exec_module swaps in the real one

    def exec_module(self, module):
        # the import system re-reads sys.modules after exec_module, so the old name ends up bound
        # to the real module object (whose own __spec__ stays untouched)
        sys.modules[module.__name__] = importlib.import_module(self.target)


class MovedFinder(importlib.abc.MetaPathFinder):
    """Resolves `fxlens.<old flat name>` to the module's new home."""

    def find_spec(self, fullname, path=None, target=None):
        pkg, _, name = fullname.rpartition(".")
        if pkg != "fxlens" or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader("fxlens." + MOVED[name]))


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())


def lazy_exports(package: str, module: str):
    """A module `__getattr__` for `package` that answers from `module` (imported on first use)."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(importlib.import_module(module), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
