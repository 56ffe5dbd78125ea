"""How a run of the user's script ended, in the words every command prints.

Here, below capture, so that `fxlens diff` (which reads reports, never the capture layer) says a
side's ending as `fxlens run` did.
"""

from __future__ import annotations

import signal

TIMEOUT_EXIT = 124  # a run's status when it was ended at its timeout (as timeout(1) says)


def how_it_ended(code: int, timeout: float | None = None) -> str:
    """`exited with status 3`, `was killed by SIGKILL`, `did not finish within 5 s (--timeout)`."""
    if code == TIMEOUT_EXIT and timeout:
        return f"did not finish within {timeout:g} s (--timeout)"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"
