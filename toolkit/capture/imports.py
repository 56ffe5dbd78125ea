"""Run a function on a module right after it is first imported (or now, if it already is).

The runner and doctor's probe wrap `torch._dynamo.optimize`, but importing torch._dynamo costs
~0.9 s, which a script that never compiles (doctor's eager rounds) should not pay: the wrapper
goes on when the script, or torch.compile, imports it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable


def when_imported(name: str, then: Callable[[object], None]) -> None:
    """Call `then(module)` once module `name` has executed; at once if it is already imported.
    Several calls for one module run in the order they were made."""
    if name in sys.modules:
        then(sys.modules[name])
        return
    for finder in sys.meta_path:
        if isinstance(finder, _AfterImport) and finder.name == name:
            finder.thens.append(then)  # one finder per module: a second would never be asked
            return
    sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, then: Callable[[object], None]):
        self.name, self.thens = name, [then]

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # one shot; the real finders locate the module
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run, thens = spec.loader.exec_module, self.thens

        def exec_module(module):
            run(module)
            for then in thens:
                then(module)

        spec.loader.exec_module = exec_module  # this spec's own loader instance
        return spec
