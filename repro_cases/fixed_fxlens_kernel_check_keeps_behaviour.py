# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 21.1).
# pytorch/pytorch#195402's shape on fxlens's own backend: (x - 0.5)[idx] with idx out of bounds.
# Eager raises IndexError; fxlens_nofusion's kernel returns a value (a bug of the backend, kept
# visible here). Under FXLENS_CHECK_KERNELS=1, which `fxlens bisect` sets for fxlens's stages, the
# check's fp64 ATen replay raised eager's IndexError out of the kernel: the run then behaved as
# eager does, and bisect said "nothing fails". A check must not change what the kernel does:
# with and without it, the compiled call does the same.
# expect: exit 0
import os
import subprocess
import sys

CHILD = """
import torch
def f(x, idx):
    return (x - 0.5)[idx]
try:
    torch.compile(f, backend="fxlens_nofusion")(torch.randn(1, 8, 6, 6), torch.tensor([[1]]))
    print("returns a value")
except IndexError:
    print("raises IndexError")
"""

if __name__ == "__main__":
    seen = []
    for check in ("0", "1"):
        env = {**os.environ, "FXLENS_CHECK_KERNELS": check}
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=600)
        seen.append(out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-300:])
        print(f"FXLENS_CHECK_KERNELS={check}: {seen[-1]}")
    sys.exit(0 if seen[0] == seen[1] else 1)
