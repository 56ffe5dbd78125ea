"""fxlens's terminal UI (`fxlens tui`): the only part of fxlens that imports Textual.

Importing this package does not import Textual; `fxlens.tui.app` does.
"""

from __future__ import annotations

import os
import shlex


def command_for(path: str | os.PathLike) -> str:
    """The exact command line that opens `path` (a session or TORCH_TRACE dir/log) in the TUI.

    `fxlens demo` prints it as its last line, e.g. `fxlens tui .fxlens/sessions/20261202-1230-demo`.
    """
    return f"fxlens tui {shlex.quote(str(path))}"


__all__ = ["command_for"]
