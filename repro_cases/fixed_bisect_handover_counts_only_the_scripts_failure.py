# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 34).
# The CompilerBisector handover shared one inductor cache across its steps; a step that loaded a
# kernel .so an earlier step had left cut short failed with "file too short", was counted as
# failing like the script, and the binary search named the wrong lowering. This drives the
# handover's step function with a real truncated .so's load error: the step gets a clean cache of
# its own and does not count as failing; a step failing as the script did does.
# expect: exit 0
import importlib.machinery
import importlib.util
import sys
import tempfile
from pathlib import Path

from fxlens.bisect import inductor
from fxlens.bisect.runs import Outcome

SCRIPT_ERROR = "InductorError: CppCompileError: C++ compile error"


class Lowerings:
    def get_backend(self):
        return "inductor"

    def get_subsystem(self):
        return "lowerings"

    def get_run_state(self, backend, subsystem):
        return "bisect"


class Steps:
    def __init__(self, errors):
        self.errors, self.caches = list(errors), []

    def run(self, label, env=None, **kw):
        self.caches.append(env["TORCHINDUCTOR_CACHE_DIR"])
        error = self.errors.pop(0)
        return Outcome(len(self.caches), label, None, 1, 0.0, "crash", error=error)


if __name__ == "__main__":
    tmp = Path(tempfile.mkdtemp())
    (tmp / "cut.so").write_bytes(b"")
    loader = importlib.machinery.ExtensionFileLoader("cut", str(tmp / "cut.so"))
    try:
        importlib.util.module_from_spec(
            importlib.util.spec_from_file_location("cut", tmp / "cut.so", loader=loader)
        )
        sys.exit(1)
    except ImportError as e:
        short = f"ImportError: {e}"
    steps = Steps([short, SCRIPT_ERROR])
    spec = {"good": "aot_eager", "graph": 0, "kind": "crash", "error": SCRIPT_ERROR, "confirmed": True}
    fn = inductor._step(Lowerings(), steps, spec, {"TORCHINDUCTOR_CACHE_DIR": str(tmp / "cache")})
    verdicts = [fn(), fn()]  # True: "does not fail" for the bisector
    print(short, "->", verdicts, inductor.OTHER)
    ok = verdicts == [True, False] and len(set(steps.caches)) == 2 and "file too short" in short
    sys.exit(0 if ok else 1)
