"""What makes torch.compile run another backend than the script asked for, outside the script.

torch.compile itself replaces the backend it was given when a CompilerBisector run is active
(torch/__init__.py: `if bisect_backend := CompilerBisector.get_backend(): backend = bisect_backend`):
- `TORCH_BISECT_BACKEND` set in the environment;
- a `bisect_status.txt` holding `backend=NAME` in `<inductor cache dir>/bisect/`, which an
  interrupted `python -m torch._inductor.compiler_bisector run ...` leaves behind: every later
  torch.compile on the machine then runs that backend, silently.
`TORCH_COMPILE_BACKEND` is the bisector's convention for scripts (`backend=os.environ.get(...)`);
torch.compile does not read it, but a script that does compiles with it.

Read without importing torch (the paths are torch's: cache_dir_utils.default_cache_dir).
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
from pathlib import Path


def inductor_cache_dir(env: dict | None = None) -> Path:
    """torch's inductor cache dir: TORCHINDUCTOR_CACHE_DIR, else <tmp>/torchinductor_<user>."""
    env = os.environ if env is None else env
    if env.get("TORCHINDUCTOR_CACHE_DIR"):
        return Path(env["TORCHINDUCTOR_CACHE_DIR"])
    try:
        user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
    except (KeyError, OSError):  # no user name (a container without /etc/passwd entry)
        user = "unknown"
    return Path(tempfile.gettempdir()) / f"torchinductor_{user}"


def backend_switches(env: dict | None = None) -> list[dict]:
    """Each thing that switches torch.compile's backend: `{backend, source, how_to_undo}`."""
    env = os.environ if env is None else env
    out = []
    if env.get("TORCH_BISECT_BACKEND"):
        out.append(
            {
                "backend": env["TORCH_BISECT_BACKEND"],
                "source": "TORCH_BISECT_BACKEND is set: torch.compile uses it instead of every backend asked for",
                "how_to_undo": "unset TORCH_BISECT_BACKEND",
            }
        )
    status = inductor_cache_dir(env) / "bisect" / "bisect_status.txt"
    try:
        text = status.read_text(errors="replace") if status.is_file() else ""
    except OSError:
        text = ""
    m = re.search(r"^backend=(\S+)", text, re.M)
    if m and not env.get("TORCH_BISECT_BACKEND"):
        out.append(
            {
                "backend": m.group(1),
                "source": f"{status} (left by a CompilerBisector run): torch.compile uses its backend "
                "instead of every backend asked for",
                "how_to_undo": f"remove {status.parent} (or finish the bisect: python -m torch._inductor.compiler_bisector end)",
            }
        )
    if env.get("TORCH_COMPILE_BACKEND"):
        out.append(
            {
                "backend": env["TORCH_COMPILE_BACKEND"],
                "source": "TORCH_COMPILE_BACKEND is set: a script that reads it (the CompilerBisector convention)"
                " compiles with it",
                "how_to_undo": "unset TORCH_COMPILE_BACKEND",
            }
        )
    return out
