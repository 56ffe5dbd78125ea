# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 20.6).
# The script changes directory before it compiles, as Hydra's `job.chdir` and many launchers do.
# `fxlens run` gave the child a relative TORCH_TRACE (the default session path is relative), so
# torch wrote the trace under the new directory: fxlens said "No graphs were compiled", exit 0.
# tests/capture/test_sessions.py runs it under `fxlens run` and expects its one graph in the report.
# expect: exit 0
import os
import tempfile

import torch

if __name__ == "__main__":
    workdir = tempfile.mkdtemp(prefix="fxlens-chdir-")
    os.chdir(workdir)

    @torch.compile(backend="eager")
    def after_chdir(x):
        return torch.sin(x) + 1

    after_chdir(torch.randn(8))
    print(f"compiled in {workdir}")
