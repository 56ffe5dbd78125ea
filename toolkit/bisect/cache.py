"""The private inductor cache dir of one `fxlens bisect`'s runs (split out of `fxlens.bisect.runs`).

The runs' cache lives outside the session, in the temp folder: a bisect killed by SIGKILL left it
in the session (hundreds of MB of compiled C++ nobody reads); the next bisect removes such
leftovers whose bisect is gone (see `claim_cache`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from fxlens.trace.processes import alive

INDUCTOR_CACHE = "inductor-cache"  # (older sessions held the runs' inductor cache under this name)
CACHE_PREFIX = "fxlens-bisect-cache-"
_OWNER = ".owner"  # the pid of the bisect using a cache dir


def cache_dir(session_dir: Path) -> Path:
    """The inductor cache dir of one bisect: derived from its session's absolute path, so the
    CompilerBisector driver process (fxlens.bisect.inductor) finds the same one."""
    key = hashlib.sha1(str(Path(session_dir).absolute()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"{CACHE_PREFIX}{key}"


def claim_cache(session_dir: Path) -> Path:
    """Create this bisect's cache dir (owned by this process), after removing those of bisects
    that are gone (killed before their cleanup ran)."""
    for old in Path(tempfile.gettempdir()).glob(CACHE_PREFIX + "*"):
        try:
            pid = int((old / _OWNER).read_text().strip() or 0)
        except (OSError, ValueError):
            continue  # being created right now, or not ours to judge
        if pid and not alive(pid):
            shutil.rmtree(old, ignore_errors=True)
    d = cache_dir(session_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / _OWNER).write_text(str(os.getpid()))
    return d


def cache_env(session_dir: Path) -> dict[str, str]:
    """Inductor's caches for one bisect's runs: no compiled graph is ever served from a cache (a
    hit would skip the very passes a run tests), but C++ headers and kernels compiled from the same
    source are (keyed by source and compile command, as torch's own `compiler_bisector run` reuses
    them): with every cache force-disabled, each inductor run rebuilt them, ~25 s of a 40 s run here.
    Private to the bisect: nothing from the user's or another job's cache dir."""
    return {
        "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "0",
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir(session_dir)),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
        # Dynamo's profile-guided dynamic shapes would carry one run's recompiles into the next
        "TORCH_DYNAMO_AUTOMATIC_DYNAMIC_LOCAL_PGO": "0",
    }
