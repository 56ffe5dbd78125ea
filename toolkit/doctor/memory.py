"""The peak memory of the process doctor's probe runs in: what the side-by-side table compares."""

from __future__ import annotations

import resource
import sys


def process_peak_memory() -> dict:
    """Process peak RSS in bytes, and CUDA allocator peaks when the script used CUDA."""
    import torch

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes
    out = {"rss_bytes": rss if sys.platform == "darwin" else rss * 1024, "cuda_bytes": None}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda_bytes"] = max(torch.cuda.max_memory_allocated(d) for d in range(torch.cuda.device_count()))
        out["cuda_reserved_bytes"] = max(
            torch.cuda.max_memory_reserved(d) for d in range(torch.cuda.device_count())
        )
    return out
