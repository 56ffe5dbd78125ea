"""Every environment switch the toolkit reads, declared once and typed (tinygrad's helpers.py).

The backend has its own switches in `fxlens.backend.config` (it never imports the toolkit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True)
class ToolkitConfig:
    """Toolkit switches, read from the environment when `load()` is called."""

    #: where `fxlens run` writes sessions when --session is not given
    sessions_dir: Path
    #: backend name that overrides every torch.compile call in a script run by fxlens (set by the CLI
    #: for the child process it starts)
    backend_override: str
    #: the session directory of the current child run (set by the CLI for the child process)
    session_dir: str


def load() -> ToolkitConfig:
    return ToolkitConfig(
        sessions_dir=Path(_env_str("FXLENS_SESSIONS_DIR", ".fxlens/sessions")),
        backend_override=_env_str("FXLENS_BACKEND_OVERRIDE"),
        session_dir=_env_str("FXLENS_SESSION"),
    )


ENV_BACKEND_OVERRIDE = "FXLENS_BACKEND_OVERRIDE"
ENV_SESSION = "FXLENS_SESSION"
ENV_SESSIONS_DIR = "FXLENS_SESSIONS_DIR"
