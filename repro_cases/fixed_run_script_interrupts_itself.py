# fxlens regression case (DESIGN.md style rule 11; issue 20.6), run by tests/capture/test_sessions.py
# under `fxlens run` (no `# expect` header: the corpus does not run it, its outcome is a signal).
# The script compiles, then gets SIGINT on its own (not through fxlens). Python ends such a script
# by SIGINT (a shell shows 130); `fxlens run` exited 1, because its runner turned the uncaught
# KeyboardInterrupt into status 1. It now ends the same way, and fxlens exits 130.
import os
import signal
import time

import torch


@torch.compile(backend="eager")
def before_the_interrupt(x):
    return torch.cos(x) * 2


if __name__ == "__main__":
    before_the_interrupt(torch.randn(4))
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)
