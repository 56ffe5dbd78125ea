"""doctor under deliberate contention: its verdict never contradicts a quiet measurement.

Spinning processes pinned to this process's cores (tests/doctor/contention.py) compete with the
script doctor times. The check is never a number: the contended verdict is the quiet one, or
"inconclusive". Ground truth comes from scripts that are faster or slower compiled by
construction, confirmed quiet by a different method (a plain time.perf_counter loop).

The default run keeps the timing core in process (interleave.measure, one script, ~10 s); the
end-to-end harness (fxlens doctor in child processes, quiet and contended, four scripts) is slow.
"""

import runpy
import statistics
import time

import pytest
from contention import agree, busy, doctor_json, plain_speedup
from doctor_helpers import SCRIPTS

from fxlens.probe.interleave import measure
from fxlens.probe.interval import paired_interval
from fxlens.probe.stats import judge

# (script, what compiled is by construction)
GROUND_TRUTH = [("faster_by_construction", "faster"), ("slower_by_construction", "slower")]


def _perf_counter_verdict(step, fast, args, rounds=20, n=5) -> str:
    """The quiet reference: blocks of n calls, eager and compiled alternated, medians compared."""
    e, c = [], []
    for i in range(rounds):
        for mode in ("e", "c") if i % 2 == 0 else ("c", "e"):
            fn = step if mode == "e" else fast
            t0 = time.perf_counter()
            for _ in range(n):
                fn(*args)
            (e if mode == "e" else c).append(time.perf_counter() - t0)
    return "faster" if statistics.median(e) > statistics.median(c) else "slower"


@pytest.mark.parametrize(("name", "truth"), GROUND_TRUTH)
def test_interleaved_verdict_under_contention_agrees_with_quiet(name, truth):
    mod = runpy.run_path(str(SCRIPTS / f"{name}.py"), run_name="contention_test")
    step, args, fast = mod["step"], mod["inputs"](), mod["compile_step"]()
    fast(*args)  # compile outside any timing
    if _perf_counter_verdict(step, fast, args) != truth:  # the reference itself lost to the load
        pytest.skip(f"{name}: the perf_counter reference disagreed with the construction on this load")
    with busy(2):  # two spinners on the cores this test may use
        got = measure(step, fast, args, {}, budget_s=2.0, compiles=lambda: 0)
    said, _ = judge(paired_interval(got["pairs"]), paired_interval(got["cpu_pairs"]))
    assert agree(truth, said), (name, said, got["pairs"])
    assert len(got["pairs"]) == len(got["cpu_pairs"]) >= 1
    assert got["load"]["cores"] >= 1 and got["stopped"] in ("interval", "precise", "budget")


@pytest.mark.slow  # 4 scripts x (quiet + contended) doctor runs plus perf_counter references: minutes
@pytest.mark.parametrize(
    ("name", "truth"), [*GROUND_TRUTH, ("helps", "faster"), ("hurts", "slower")], ids=lambda v: str(v)
)
def test_doctor_quiet_and_contended_never_contradict(name, truth, tmp_path):
    script = SCRIPTS / f"{name}.py"
    if "construction" in name:  # confirm the construction by another method, quiet
        assert plain_speedup(script)["verdict"] == truth
    quiet = doctor_json(script, "--budget", "4", sessions=tmp_path)
    with busy(2):
        loud = doctor_json(script, "--budget", "4", sessions=tmp_path)
    (q,) = quiet["functions"]
    (c,) = loud["functions"]
    assert agree(truth, q["verdict"]), q
    assert agree(q["verdict"], c["verdict"]), (q, c)
    assert agree(truth, c["verdict"]), c
    for row in (q, c):
        if row["speedup_interval"]:
            assert row["speedup_interval"][0] <= row["speedup"] <= row["speedup_interval"][1]
    # the contended run saw the spinners: its load is recorded (the verdict may say so)
    assert loud["load"]["average"] is not None and loud["load"]["cores"] >= 1
