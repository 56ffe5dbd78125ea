"""The pytest plugin on real compiled tests, run by pytester (in-process: torch is imported once)."""

import re
import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

BRANCHY = """
import pytest
import torch


def branchy(x):
    y = torch.sin(x) * 2
    if y.sum() > 0:  # a data-dependent branch breaks the graph
        y = y + 1
    return y.cos()
"""


# Plugins of this environment that keep process-wide state an in-process inner run would clobber
# (textual-snapshot deletes its temp folder at session end). fxlens's own loads by its entry point.
_OFF = ["textual-snapshot", "syrupy", "benchmark", "xdist", "xdist.looponfail", "hypothesispytest", "anyio"]


def line(needle: str, src: str = "") -> int:
    """The line of `needle` in the file `_run` writes (makepyfile dedents and strips leading blank lines)."""
    text = textwrap.dedent(BRANCHY + src).lstrip("\n")
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """Import torch and compile once out here: an in-process pytester run forgets the modules it
    imported when it ends, and torch (a C extension) cannot be imported a second time."""
    import torch

    from fxlens import expect

    with expect():
        torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))


def _run(pytester, src, *args, subprocess=False):
    pytester.makepyfile(test_budget_demo=BRANCHY + src)
    off = [a for name in _OFF for a in ("-p", f"no:{name}")]
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest_inprocess
    return run("-p", "no:cacheprovider", *off, *args)


def test_marker_within_budget_passes(pytester):
    res = _run(
        pytester,
        """
@pytest.mark.compile_budget(graphs=1, graph_breaks=0, recompiles=0)
def test_ok():
    f = torch.compile(lambda x: x.sin() + 1, backend="eager")
    f(torch.ones(8))
    f(torch.ones(8))
""",
    )
    res.assert_outcomes(passed=1)


def test_marker_over_budget_names_file_line_reason_and_fix(pytester):
    res = _run(
        pytester,
        """
@pytest.mark.compile_budget(graph_breaks=0, recompiles=0)
def test_breaks():
    f = torch.compile(branchy, backend="eager")
    f(torch.ones(8))
    f(torch.ones(5))
""",
    )
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert "compile budget exceeded in the test body: graph_breaks 2 > 0, recompiles 2 > 0" in out
    assert f"test_budget_demo.py:{line('if y.sum()')}  in branchy: Data-dependent branching (x2)" in out
    assert "if y.sum() > 0:" in out
    assert re.search(r"fix: .*branchless", out)
    assert f"test_budget_demo.py:{line('def branchy')}  in branchy: input `x`, dim 0 took values 8, 5" in out
    assert "fix: one recompile on a new size is expected" in out and "torch._dynamo.mark_dynamic(x, 0)" in out
    assert "fxlens session:" not in out  # no --fxlens-report: nothing written


def test_budgets_are_upper_bounds_and_exact_is_exact(pytester):
    res = _run(
        pytester,
        """
@pytest.mark.compile_budget(graphs=5, graph_breaks=2, recompiles=2)
def test_at_most():
    f = torch.compile(branchy, backend="eager")
    f(torch.ones(8))
    f(torch.ones(5))


@pytest.mark.compile_budget(graphs=3, exact=True)
def test_exact():
    f = torch.compile(lambda x: x.sin() + 1, backend="eager")
    f(torch.ones(8))
""",
    )
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "test_exact" in out and "graphs 1 != 3" in out and "graphs: 1 (budget: exactly 3)" in out


def test_fixture_whole_test_and_block_budgets(pytester):
    src = """
def test_block(compile_budget):
    f = torch.compile(lambda x: x.sin() + 1, backend="eager")
    f(torch.ones(8))
    assert compile_budget.counts["graphs"] == 1
    with compile_budget(recompiles=0):
        f(torch.ones(5))


def test_whole(compile_budget):
    compile_budget(graphs=1, graph_breaks=0)
    torch.compile(branchy, backend="eager")(torch.ones(8))


def test_counts(compile_budget):
    f = torch.compile(branchy, backend="eager")
    f(torch.ones(8))
    assert compile_budget.counts == {
        "graphs": 2, "graph_breaks": 1, "eager_frames": 0, "recompiles": 0, "kernels": 0, "fallbacks": 0
    }
"""
    res = _run(pytester, src)
    res.assert_outcomes(passed=1, failed=2)
    out = res.stdout.str()
    # the block: a failed assertion at the user's `with` line, fxlens's own frames hidden
    assert (
        "BudgetExceeded: compile budget exceeded in test_budget_demo.py::test_block: recompiles 1 > 0" in out
    )
    where = f"test_budget_demo.py:{line('f = torch.compile(lambda x: x.sin()', src)}"
    assert f"{where}  in <lambda>: input `x`, dim 0 took values 8, 5" in out
    assert "toolkit/budget" not in out
    # the whole test: graphs and breaks
    assert "graphs 2 > 1, graph_breaks 1 > 0" in out
    assert f"test_budget_demo.py:{line('if y.sum()')}  in branchy: Data-dependent branching" in out


def test_fxlens_report_writes_a_session_fxlens_report_reads(pytester):
    res = _run(
        pytester,
        """
@pytest.mark.compile_budget(graph_breaks=0)
def test_over():
    torch.compile(branchy, backend="eager")(torch.ones(8))


def test_raises():
    torch.compile(lambda x: x * 2, backend="eager")(torch.ones(3))
    raise ValueError("boom")


def test_passes():
    torch.compile(lambda x: x * 3, backend="eager")(torch.ones(3))
""",
        "--fxlens-report",
        "--fxlens-report-dir",
        "sessions",
    )
    res.assert_outcomes(passed=1, failed=2)
    out = res.stdout.str()
    # each path once per failing test; pytest also repeats the message in its short summary when
    # it does not truncate it (CI=true), so the same path may appear twice
    paths = list(dict.fromkeys(re.findall(r"fxlens session: (\S+)", out)))
    assert len(paths) == 2, out  # one per failing test, none for the passing one
    assert len(list((pytester.path / "sessions").iterdir())) == 2
    over = next(p for p in paths if "test_over" in p)
    assert "Captured fxlens call" in out  # the test that raised names its session in a section
    report = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "report", over],
        cwd=pytester.path,
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    assert "1 graph break(s)" in report.stdout
    assert (
        f"test_budget_demo.py:{line('if y.sum()')}" in report.stdout
        and "Data-dependent branching" in report.stdout
    )


def test_bad_marker_is_a_clear_failure(pytester):
    res = _run(
        pytester,
        """
@pytest.mark.compile_budget(graph_break=0)
def test_typo():
    pass
""",
    )
    res.assert_outcomes(failed=1)
    assert "@pytest.mark.compile_budget: " in res.stdout.str()
    assert "graph_break" in res.stdout.str()


def test_tests_without_budgets_are_untouched(pytester):
    from fxlens.budget import collect

    res = _run(
        pytester,
        """
def test_plain():
    from torch._logging._internal import trace_log
    from fxlens.budget import collect

    assert collect._handler is None
    assert not any(type(h).__name__ == "_Dispatch" for h in trace_log.handlers)
""",
    )
    res.assert_outcomes(passed=1)
    assert collect._handler is None


@pytest.mark.slow  # a fresh interpreter and Triton's interpreter: ~18 s on the shared box
@pytest.mark.triton
def test_fxlens_backend_kernels_and_fallbacks(pytester):
    src = """
@pytest.mark.compile_budget(kernels=1, fallbacks=0)
def test_backend():
    f = torch.compile(lambda x, w: (x @ w).sin() * 2, backend="fxlens")
    f(torch.ones(4, 4), torch.ones(4, 4))
"""
    res = _run(pytester, src, subprocess=True)  # Triton's modules, like torch's, import only once
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    # kernels=1 holds (sin and mul fuse into one kernel); only the matmul's fallback is over
    assert "compile budget exceeded in the test body: fallbacks 1 > 0\n" in out
    where = f"test_budget_demo.py:{line('f = torch.compile', src)}"
    assert f"{where}  in <lambda> [0/0]: aten.mm.default x1" in out


def test_plugin_import_is_light():
    # every pytest run of every user who installed fxlens loads the plugin: it must not import torch
    code = (
        "import sys, fxlens.budget.plugin, fxlens;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'tabulate', 'triton'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_plugin_is_registered_as_pytest11_entry_point():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert eps.get("fxlens") == "fxlens.budget.plugin"
