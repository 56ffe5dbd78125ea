"""One test under the pytest plugin: its capture, its budgets (marker and fixture), its failure session.

Imported by `fxlens.budget.plugin` only for tests that use a budget or run under `--fxlens-report`,
so a pytest run that never asks for budgets never imports torch through fxlens.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fxlens import config
from fxlens.budget import context as expect_mod
from fxlens.budget.collect import Capture, write_session
from fxlens.budget.context import BudgetExceeded, expect, reset_dynamo
from fxlens.budget.excess import (
    KINDS,
    Limits,
    evaluate,
    failure_message,
    quick_counts,
    session_line,
    session_name,
    unique_dir,
)
from fxlens.budget.memory import PeakMemory


class TestBudget:
    """The value of the `compile_budget` fixture.

    `compile_budget(graph_breaks=0, ...)` sets a budget for the whole test body, checked when the
    body returns; the same call used as `with compile_budget(...):` is a budget for that block only,
    checked when the block exits. Arguments are those of `fxlens.expect`.

    Example:
        >>> def test_step(compile_budget):
        ...     compile_budget(graphs=1, recompiles=0)      # the whole test
        ...     step(x)
        ...     with compile_budget(recompiles=0):          # only this block
        ...         step(x2)
        ...     assert compile_budget.counts["graph_breaks"] == 0
    """

    __test__ = False  # not a test class, despite its name

    def __init__(self, nodeid: str):
        self.nodeid = nodeid
        self.pending: list[expect] = []  # budgets for the whole body (never entered as a block)
        self.capture: Capture | None = None  # the body's capture, set by TestRun when the body starts
        self.run: TestRun | None = None  # set by TestRun when the body starts

    def __call__(self, graphs=None, graph_breaks=None, recompiles=None, kernels=None, fallbacks=None, **kw):
        budget = _Budget(self, graphs, graph_breaks, recompiles, kernels, fallbacks, label=self.nodeid, **kw)
        self.pending.append(budget)
        if budget.limits.peak_memory is not None and self.run is not None:
            self.run.measure_memory()  # the body's peak from this call on
        return budget

    @property
    def counts(self) -> dict[str, int]:
        """What the test body compiled so far, per kind (graphs, graph_breaks, recompiles, kernels, fallbacks)."""
        return quick_counts(self.capture.records) if self.capture else dict.fromkeys(KINDS, 0)


class _Budget(expect):
    """A budget from the fixture: for the whole body, unless it is entered as a block."""

    def __init__(self, owner: TestBudget, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.owner = owner

    def __enter__(self):
        if self in self.owner.pending:
            self.owner.pending.remove(self)
        return super().__enter__()


class TestRun:
    """The plugin's state for one test's call phase."""

    __test__ = False

    def __init__(self, item: pytest.Item, marker, fixture: TestBudget | None, report: bool, report_dir):
        self.item = item
        self.fixture = fixture
        self.marker_limits: Limits | None = None
        reset = True
        if marker is not None:
            kwargs = dict(marker.kwargs)
            reset = bool(kwargs.pop("reset", True))
            try:
                if marker.args:
                    raise TypeError("takes keyword arguments only, e.g. compile_budget(graph_breaks=0)")
                self.marker_limits = Limits(**kwargs)
            except (TypeError, ValueError) as e:
                pytest.fail(f"@pytest.mark.compile_budget: {e}", pytrace=False)
        self.reset = reset and (marker is not None or fixture is not None)
        self.root = Path(report_dir or config.load().sessions_dir) if report else None
        self.capture = Capture()
        self.session: Path | None = None
        self.memory: PeakMemory | None = None

    def start(self) -> None:
        if self.reset:
            reset_dynamo()
        self.capture.start()
        if self.marker_limits is not None and self.marker_limits.peak_memory is not None:
            self.measure_memory()
        if self.fixture is not None:
            self.fixture.capture = self.capture
            self.fixture.run = self
        if self.root is not None:
            expect_mod._failure_sessions = (self.root, self.item.nodeid)

    def measure_memory(self) -> None:
        """Profile the body's tensor memory from now on (once: every budget reads the same peak)."""
        if self.memory is None:
            self.memory = PeakMemory().start()

    def stop(self) -> None:
        self.capture.stop()
        if self.memory is not None:
            self.memory.stop()
        expect_mod._failure_sessions = None

    def budgets(self) -> list[Limits]:
        found = [self.marker_limits] if self.marker_limits else []
        return found + ([b.limits for b in self.fixture.pending] if self.fixture else [])

    def check(self) -> str | None:
        """The failure message for the body's broken budgets (None when all hold)."""
        messages = []
        for limits in self.budgets():
            try:
                outcome = evaluate(self.capture, limits, self.memory.result if self.memory else None)
            except RuntimeError as e:  # the capture lost its handler: no count can be trusted
                return str(e)
            if not outcome.ok:
                messages.append(failure_message(outcome, limits, "the test body"))
        if not messages:
            return None
        text = "\n".join(messages)
        if self.root is not None:
            text += "\n" + session_line(self.write_session())
        return text

    def on_error(self, exc: BaseException) -> None:
        """The body raised: under --fxlens-report, write its session and name it in the failure."""
        if self.root is None or isinstance(exc, (pytest.skip.Exception, pytest.xfail.Exception)):
            return
        if self.item.get_closest_marker("xfail") is not None:
            return  # an expected failure is not a failing test
        if isinstance(exc, BudgetExceeded) and exc.session is not None:
            return  # the failing `fxlens.expect` block already wrote (and named) its session
        self.item.add_report_section("call", "fxlens", session_line(self.write_session()))

    def write_session(self) -> Path:
        assert self.root is not None
        name = session_name(f"{time.strftime('%Y%m%d-%H%M%S')}-{self.item.nodeid}")
        budgets = "; ".join(b.describe() for b in self.budgets())
        info = {"script": self.item.nodeid, "test": self.item.nodeid, "budget": budgets}
        self.session = write_session(self.capture, unique_dir(self.root, name), info)
        return self.session
