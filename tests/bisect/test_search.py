"""The pure parts of bisect: ladders, the graph/kernel/fusion searches, graph selection, tolerances."""

import pytest

from fxlens.bisect.backend import selected
from fxlens.bisect.ladder import can, first_failing, ladder, narrow


def test_ladders():
    assert ladder("fxlens") == [
        "fxlens_eager",
        "fxlens_aot_eager",
        "fxlens_nofusion",
        "fxlens_inline",
        "fxlens",
    ]
    assert ladder("inductor") == ["eager", "aot_eager", "aot_eager_decomp_partition", "inductor"]
    assert ladder("mine.py:be") == ["eager", "aot_eager", "mine.py:be"]
    assert ladder("aot_eager") == ["eager", "aot_eager"]
    assert can("fxlens_nofusion", "codegen") and not can("fxlens_aot_eager", "codegen")
    assert can("fxlens", "fuses") and not can("fxlens_nofusion", "fuses")
    assert can("inductor", "torch_bisectable") and not can("mine.py:be", "codegen")


class Counter:
    """A fake run: fails when the culprit is under test; counts runs."""

    def __init__(self, culprits):
        self.culprits = set(culprits)
        self.calls = []

    def __call__(self, lo, hi):
        self.calls.append((lo, hi))
        return any(lo <= c <= hi for c in self.culprits)


@pytest.mark.parametrize("n", [2, 3, 7, 16, 33])
def test_narrow_finds_every_culprit_in_log_runs(n):
    for culprit in range(n):
        fake = Counter([culprit])
        found = narrow(n, fake)
        assert found.single == culprit
        assert len(fake.calls) <= (n - 1).bit_length() + 1


def test_narrow_right_hint_costs_one_run_wrong_hint_falls_back():
    fake = Counter([5])
    assert narrow(40, fake, hint=5).single == 5 and fake.calls == [(5, 5)]
    fake = Counter([5])
    assert narrow(40, fake, hint=9).single == 5 and fake.calls[0] == (9, 9)


def test_narrow_flaky_or_combined_is_not_confirmed():
    never = narrow(8, lambda lo, hi: False)
    assert never.single is None and not never.confirmed
    both = narrow(8, lambda lo, hi: lo <= 1 and hi >= 6)  # needs graphs 1 and 6 together
    assert both.single is None


def test_first_failing_fusion_decision():
    for bad in range(1, 20):
        calls = []

        def fails(k, bad=bad, calls=calls):
            calls.append(k)
            return k >= bad

        assert first_failing(19, fails) == bad
        assert len(calls) <= 5
    assert first_failing(0, lambda k: True) is None


def test_graph_selection():
    assert selected("all", 7) and selected("", 0)
    assert selected("2-4", 3) and not selected("2-4", 5) and selected("3", 3) and not selected("3", 2)
    assert selected("1,5-6", 6) and not selected("1,5-6", 2)


def test_accuracy_tolerances_per_dtype():
    torch = pytest.importorskip("torch")
    from fxlens.bisect.fp64_compare import compare

    g = torch.linspace(-2, 2, 50, dtype=torch.float64)
    near = (g + 1e-6).float()
    off = (g + 0.05).float()
    assert compare("o", near, g.float(), g).ok
    assert not compare("o", off, g.float(), g).ok
    # bf16: eager itself rounds, the compiled result may round as much
    h = g.bfloat16()
    assert compare("o", h, h, g).ok
    assert not compare("o", (g + 0.5).bfloat16(), h, g).ok
    # NaN where fp64 has NaN agrees; a new NaN does not
    nan = torch.tensor([float("nan"), 1.0], dtype=torch.float64)
    assert compare("o", nan.float(), nan.float(), nan).ok
    assert not compare("o", torch.tensor([0.0, float("nan")]), nan.float(), nan).ok


def test_summary_of_a_failure_the_check_does_not_follow():
    from fxlens.bisect.verdict import summary_line

    r = {"outcome": "nothing_fails", "backend": "inductor", "check": "accuracy", "runs": 1}
    assert summary_line({**r, "stages": [{"stage": "inductor", "ok": True, "error": None}]}).startswith(
        "nothing fails with inductor"
    )
    row = {"stage": "inductor", "ok": True, "error": "RuntimeError: boom"}
    line = summary_line({**r, "stages": [row]})
    assert "no accuracy failure" in line and "RuntimeError: boom" in line and "--check auto" in line


def test_summary_when_no_single_graph_fails_alone():
    from fxlens.bisect.verdict import summary_line

    r = {"outcome": "needs_several_graphs", "first_failing_stage": "inductor", "runs": 7}
    r.update(failure={"kind": "crash"}, graph={"ordinal": 1, "to": 3, "of": 4}, culprit={"compile_id": "1/0"})
    assert "graphs #1-#3 of 4 fail only together" in summary_line(r)
