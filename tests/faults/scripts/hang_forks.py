"""Compiles one tiny graph, forks a grandchild that sleeps, writes the marker file (argv[1]), hangs."""

import subprocess
import sys
import time

import torch

torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
# a process of its own, as DataLoader workers or a launcher would start: must not outlive fxlens
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1], "w") as f:
    f.write("started\n")
time.sleep(600)
