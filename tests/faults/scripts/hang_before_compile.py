"""Starts a grandchild that sleeps, writes the marker file (argv[1]), then hangs before its torch.compile.

The compile line is never reached, whatever the machine's speed: a timeout test on it does not race
torch's import time (hang_forks.py compiles first, and a fast box gets there within 2 s).
"""

import subprocess
import sys
import time

import torch

# a process of its own, as DataLoader workers or a launcher would start: must not outlive fxlens
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1], "w") as f:
    f.write("started\n")
time.sleep(600)
torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
