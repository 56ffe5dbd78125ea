"""Compiles one tiny graph, then ends the way argv[1] says: os._exit(3), SIGKILL of itself, or
leaving a forked child behind (argv[2]: its pid file) and exiting 0."""

import os
import signal
import subprocess
import sys

import torch

torch.compile(lambda x: x * 2, backend="eager")(torch.ones(2))
how = sys.argv[1]
if how == "os_exit":
    os._exit(3)
elif how == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif how == "fork_and_exit":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(sys.argv[2], "w") as f:
        f.write(str(child.pid))
