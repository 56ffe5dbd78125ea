"""`fxlens.expect` on its own: outside pytest, counting rules, nesting, errors."""

import contextlib
import subprocess
import sys
import textwrap

import pytest
import torch

import fxlens
from fxlens.budget.collect import Capture, write_session
from fxlens.budget.excess import Limits, counts_of, evaluate, failure_message, full_report, quick_counts
from fxlens.report.build import build_report
from fxlens.report.counts import report_counts
from fxlens.report.text import render_text
from fxlens.trace.session import Session


def branchy(x):
    y = torch.sin(x) * 2
    if y.sum() > 0:  # a data-dependent branch: a graph break
        y = y + 1
    return y.cos()


BRANCH_LINE = branchy.__code__.co_firstlineno + 2
FXLENS_FN = lambda x, w: (x @ w).relu() + 1  # noqa: E731
LAMBDA_LINE = FXLENS_FN.__code__.co_firstlineno


def test_expect_outside_pytest(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import torch
            from fxlens import expect

            def step(x):
                return (x * 2).sum().item()  # line 7: .item() breaks the graph

            f = torch.compile(step, backend="eager")
            with expect(graph_breaks=1, recompiles=0):
                f(torch.ones(4))
            try:
                with expect(graph_breaks=0, report_dir="sessions", label="step"):
                    torch._dynamo.reset()
                    f(torch.ones(4))
            except AssertionError as e:
                print(e)
            print("pytest imported:", "pytest" in sys.modules)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "compile budget exceeded in step: graph_breaks 1 > 0" in text
    assert "train.py:7  in step: Unsupported Tensor.item() call with capture_scalar_outputs=False" in text
    assert "fix: Set `torch._dynamo.config.capture_scalar_outputs = True`" in text
    assert "fxlens session: sessions/" in text
    assert "pytest imported: False" in text


def test_counts_after_exit_and_reset():
    f = torch.compile(branchy, backend="eager")
    with fxlens.expect(reset=True) as got:
        f(torch.ones(8))
    assert got.counts == {
        "graphs": 2,
        "graph_breaks": 1,
        "eager_frames": 0,
        "recompiles": 0,
        "kernels": 0,
        "fallbacks": 0,
    }
    with fxlens.expect(graphs=0) as again:  # compiled already: nothing new
        f(torch.ones(8))
    assert again.counts["graphs"] == 0
    with fxlens.expect(reset=True) as fresh:  # reset: compiled (and counted) again
        f(torch.ones(8))
    assert fresh.counts["graphs"] == 2


def test_nested_blocks_see_their_own_compiles():
    f = torch.compile(lambda x: x.cos() * 3, backend="eager")
    with fxlens.expect(reset=True, recompiles=1) as outer:
        f(torch.ones(3))
        with fxlens.expect(graphs=1) as inner:
            f(torch.ones(4))
    assert outer.counts["graphs"] == 2 and outer.counts["recompiles"] == 1
    assert inner.counts["graphs"] == 1


def test_a_failing_body_is_not_hidden_by_the_budget():
    with pytest.raises(ZeroDivisionError):
        with fxlens.expect(graphs=0, reset=True):
            torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
            1 / 0  # noqa: B018


def test_decorator_and_exact():
    @fxlens.expect(graphs=1, exact=True, reset=True)
    def run():
        torch.compile(lambda x: x - 1, backend="eager")(torch.ones(2))

    run()
    with pytest.raises(fxlens.BudgetExceeded, match=r"graphs 0 != 1") as e:
        with fxlens.expect(graphs=1, exact=True):
            pass
    assert "nothing of this kind was compiled here" in str(e.value)


def test_bad_budgets_are_refused():
    with pytest.raises(ValueError, match="graph_breaks=-1"):
        fxlens.expect(graph_breaks=-1)
    with pytest.raises(ValueError, match="kernels='3'"):
        fxlens.expect(kernels="3")
    with pytest.raises(TypeError):
        fxlens.expect(graph_break=0)


def test_quick_counts_agree_with_the_reader(tmp_path):
    # the passing path counts from record metadata; the reader (and report) must count the same
    torch._dynamo.reset()
    cap = Capture().start()
    try:
        f = torch.compile(branchy, backend="eager")
        f(torch.ones(8))
        f(torch.ones(5))
    finally:
        cap.stop()
    counts, report = full_report(cap)
    assert quick_counts(cap.records) == counts
    assert counts == {
        "graphs": 4,
        "graph_breaks": 2,
        "eager_frames": 0,
        "recompiles": 2,
        "kernels": 0,
        "fallbacks": 0,
    }
    assert report["graph_breaks"][0]["line"] == BRANCH_LINE
    # a graphs budget alone still says why there are more graphs: the breaks and recompiles behind them
    msg = failure_message(evaluate(cap, Limits(graphs=1)), Limits(graphs=1))
    assert msg.startswith("compile budget exceeded: graphs 4 > 1")
    assert f"test_expect.py:{BRANCH_LINE}  in branchy: Data-dependent branching (x2)" in msg
    assert "input `x`, dim 0 took values 8, 5" in msg
    # and the complete session, as --fxlens-report writes it, reads the same
    session = Session.open(write_session(cap, tmp_path / "s", {"script": "x"}))
    assert counts_of(session) == counts


@pytest.mark.triton
def test_quick_counts_agree_on_fxlens_kernels_and_fallbacks():
    torch._dynamo.reset()
    cap = Capture().start()
    try:
        f = torch.compile(FXLENS_FN, backend="fxlens")
        x = torch.ones(4, 4, requires_grad=True)
        f(x, torch.ones(4, 4)).sum().backward()  # forward and backward: two ATen graphs
    finally:
        cap.stop()
    counts, _ = full_report(cap)
    assert quick_counts(cap.records) == counts
    assert counts["kernels"] >= 2 and counts["fallbacks"] >= 2  # mm in forward, mm in backward
    # and a broken backend budget names the graph's user line and the ops (the slow pytester test
    # checks the same end to end)
    limits = Limits(kernels=1, fallbacks=0)
    msg = failure_message(evaluate(cap, limits), limits)
    line = f"test_expect.py:{LAMBDA_LINE}  in <lambda>"
    assert f"{line} [0/0]: aten.mm.default x" in msg
    assert f"{line} [0/0] forward:" in msg and "relu" in msg


def test_logging_reconfigured_midway_is_an_error_not_a_pass():
    # logging.config.dictConfig disables every existing logger, torch's trace logger too: the
    # block's counts would be silently too low
    from torch._logging._internal import trace_log

    try:
        with pytest.raises(RuntimeError, match="logging was reconfigured"):
            with fxlens.expect(graphs=0, reset=True):
                trace_log.disabled = True  # what dictConfig(disable_existing_loggers=True) does
                torch.compile(lambda x: x * 5, backend="eager")(torch.ones(2))
    finally:
        trace_log.disabled = False
    with fxlens.expect(reset=True) as got:  # and the next block counts again
        torch.compile(lambda x: x * 6, backend="eager")(torch.ones(2))
    assert got.counts["graphs"] == 1


@contextlib.contextmanager
def _tag():
    yield


class _Wrapper(torch.nn.Module):
    """Breaks inside a generator context manager's `with`: torch cannot resume, gives up on the frame."""

    def forward(self, x):
        with _tag():
            print("wrapper")
            return x.sin()


def _printy(x):
    y = x.cos()
    print("step")  # a break torch resumes after
    return y + 1


def test_budgets_count_as_the_report_counts(tmp_path):
    # issue 34: the plugin said "graph_breaks 2" where the report counts 1 break + 1 frame run eagerly
    from torch._dynamo.utils import counters

    counters.clear()
    with fxlens.expect(reset=True) as got:
        torch.compile(_printy, backend="eager")(torch.ones(3))
        torch.compile(_Wrapper(), backend="eager")(torch.ones(3))
    # ground truth without fxlens: torch's own graph-break counter (it does not count the frame it gave up on)
    assert got.counts["graph_breaks"] == sum(counters["graph_break"].values()) == 1
    assert got.counts["eager_frames"] == 1
    session = Session.open(write_session(got.capture, tmp_path / "s", {"script": "x"}))
    report = build_report(session)
    assert report_counts(report) == counts_of(session) == got.counts  # the one shared count
    assert "1 graph break(s), 0 recompile(s), 1 frame(s) run eagerly" in render_text(report)
    # a break budget still refuses the eager frame (held to 0 unless eager_frames is given)
    with pytest.raises(fxlens.BudgetExceeded, match=r"eager_frames 1 > 0") as e:
        with fxlens.expect(graph_breaks=1, reset=True):
            torch.compile(_Wrapper(), backend="eager")(torch.ones(3))
    assert "runs eagerly from here on" in str(e.value) and "graph_breaks" not in str(e.value).split(":")[1]
    with fxlens.expect(graph_breaks=1, eager_frames=1, reset=True):
        torch.compile(_Wrapper(), backend="eager")(torch.ones(3))
