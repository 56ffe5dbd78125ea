"""Fixtures for the backend tests: compile with fxlens and guard every buffer the wrapper allocates."""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

SLACK = 64  # elements of guard region on each side of every allocated buffer


class Guards:
    """Allocates each wrapper buffer inside a larger one whose slack is filled with a sentinel
    (NaN for floats, 0xA5 bytes otherwise), and checks afterwards that no kernel wrote there."""

    def __init__(self):
        self.regions = []

    def allocate(self, shape, stride, dtype, device):
        span = 1 + sum((s - 1) * st for s, st in zip(shape, stride, strict=True)) if all(shape) else 0
        flat = torch.empty(span + 2 * SLACK, dtype=dtype, device=device)
        if dtype.is_floating_point:
            flat.fill_(float("nan"))
        else:
            flat.view(torch.uint8).fill_(0xA5)
        self.regions.append((flat, span, flat.view(torch.uint8).clone()))
        return flat.as_strided(shape, stride, SLACK)

    def check(self):
        for flat, span, before in self.regions:
            now = flat.view(torch.uint8)
            k = SLACK * flat.element_size()
            head, tail = slice(0, k), slice(k + span * flat.element_size(), None)
            assert torch.equal(now[head], before[head]), "kernel wrote before its output buffer"
            assert torch.equal(now[tail], before[tail]), "kernel wrote past its output buffer"
        return len(self.regions)


@pytest.fixture
def guards(monkeypatch):
    from fxlens.backend import wrapper

    g = Guards()
    monkeypatch.setattr(wrapper, "allocate", g.allocate)
    yield g
    g.check()


@pytest.fixture
def compiled(monkeypatch):
    """`compiled(fn, *args, backend="fxlens")` -> (outputs, list of compiled graphs)."""
    from fxlens.backend import compile_fx

    def run(fn, *args, backend="fxlens", dynamic=False):
        torch._dynamo.reset()
        compile_fx.COMPILED.clear()
        out = torch.compile(fn, backend=backend, dynamic=dynamic)(*args)
        return out, list(compile_fx.COMPILED)

    # torch's config modules must be patched with their own context manager: monkeypatch's undo
    # would delete the entry (it reads the old value in a way the config module does not answer)
    with torch._dynamo.config.patch(recompile_limit=64):
        yield run


# a conftest below the rootdir is imported during collection, after pytest_sessionstart has run
# (its own sessionstart hook is then never called): the import time is the fallback start
_IMPORTED = time.time()


def pytest_sessionstart(session):
    session.config._fxlens_t0 = time.time()


def pytest_sessionfinish(session, exitstatus):
    """After a slow OpInfo sweep that ran every chunk (on the xdist controller, once the workers are
    done): rewrite tests/backend/opinfo_status.md from the chunks' results."""
    if hasattr(session.config, "workerinput"):
        return
    since = getattr(session.config, "_fxlens_t0", _IMPORTED)
    written = Path(__file__).parent / ".opinfo_results"
    if not any(p.stat().st_mtime >= since for p in written.glob("chunk_*.json")):
        return
    # under xdist the controller never imports the test module: the workers ran the chunks
    mod = sys.modules.get("test_opinfo") or importlib.import_module("test_opinfo")
    mod.write_status_if_complete(since)
