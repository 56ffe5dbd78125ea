"""The pytest plugin (entry point `pytest11: fxlens`): compile budgets as tests.

- `@pytest.mark.compile_budget(graph_breaks=0, recompiles=1)`: the test fails when its body compiles
  more than that;
- the `compile_budget` fixture: `compile_budget(graphs=1)` sets a budget for the whole test body,
  `with compile_budget(recompiles=0): ...` one for a block; `compile_budget.counts` so far;
- `--fxlens-report`: every failing test writes its captured trace as an fxlens session and the
  failure names its path (`fxlens report PATH`, `fxlens tui PATH`).

This module is imported by every pytest run in an environment where fxlens is installed, so it
imports nothing heavy: torch and the toolkit are imported by `fxlens.budget.testrun` only for tests
that use a budget (or under `--fxlens-report`).
"""

from __future__ import annotations

import pytest

_MARKER = "compile_budget"
_MARKER_HELP = (
    "compile_budget(graphs=None, graph_breaks=None, recompiles=None, kernels=None, fallbacks=None, "
    "eager_frames=None, compile_s=None, peak_memory=None, "
    "exact=False, reset=True): fail the test when its body compiles more than this (fxlens); each "
    "budget is an upper bound, exact=True makes it an exact count"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fxlens", "fxlens compile budgets")
    group.addoption(
        "--fxlens-report",
        action="store_true",
        default=False,
        help="capture torch.compile's structured trace of every test and write it as an fxlens session "
        "for each failing test; the failure names the session's path",
    )
    group.addoption(
        "--fxlens-report-dir",
        metavar="DIR",
        default=None,
        help="where --fxlens-report writes sessions (default: $FXLENS_SESSIONS_DIR or .fxlens/sessions)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)


@pytest.fixture
def compile_budget(request: pytest.FixtureRequest):
    """Compile budgets for this test: `compile_budget(graph_breaks=0)` for the whole test body, or
    `with compile_budget(recompiles=0): ...` for a block. `compile_budget.counts`: counts so far.

    The test body starts from a fresh `torch._dynamo` cache (`@pytest.mark.compile_budget(reset=False)`
    keeps what fixtures compiled).
    """
    from fxlens.budget.testrun import TestBudget

    return TestBudget(request.node.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    marker = item.get_closest_marker(_MARKER)
    fixture = getattr(item, "funcargs", {}).get("compile_budget")
    report = item.config.getoption("fxlens_report")
    if marker is None and fixture is None and not report:
        return (yield)  # no budget: no torch import, no capture, nothing changed
    from fxlens.budget.testrun import TestRun

    run = TestRun(item, marker, fixture, report, item.config.getoption("fxlens_report_dir"))
    run.start()
    try:
        result = yield
    except BaseException as exc:
        run.stop()
        run.on_error(exc)
        raise
    run.stop()
    failure = run.check()
    if failure:
        pytest.fail(failure, pytrace=False)
    return result
