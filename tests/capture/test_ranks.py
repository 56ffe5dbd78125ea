"""Several ranks: a real 2-process gloo job through `fxlens run --nproc 2`."""

import json
from pathlib import Path

import pytest
from capture_helpers import SCRIPTS, fxlens

POOL = Path(__file__).resolve().parents[2] / "repro_cases" / "fixed_run_pool_workers_not_ranks.py"


def test_two_ranks_reported_and_divergence_flagged(run_report):
    proc, report = run_report("dist_diverge", "--nproc", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert report["ranks"] == [0, 1]
    per_rank = {r: [g for g in report["graphs"] if g["rank"] == r] for r in (0, 1)}
    assert len(per_rank[0]) == 2 and len(per_rank[1]) == 4
    (brk,) = report["graph_breaks"]
    assert (brk["line"], brk["function"], brk["ranks"]) == (13, "step", [1])
    assert brk["count"] == 2  # rank 1 hits it on both calls
    # the same root cause on both ranks is one cause listing both (rank 1 also sees it after its break)
    (cause,) = report["recompile_causes"]
    assert cause["message"].startswith("dtype of `x` took float32, float64") and cause["ranks"] == [0, 1]
    assert cause["count"] == 2  # rank 1 recompiles step and its resume function
    assert brk["file"] == str(SCRIPTS / "dist_diverge.py")
    what = {d["what"]: d for d in report["divergence"]}
    assert what["graphs"]["per_rank"] == {"0": 2, "1": 4}
    assert what["graph breaks"]["functions"] == ["step"]
    assert "RANK DIVERGENCE" in proc.stdout


def _workers_check(proc, report):
    assert proc.returncode == 0, proc.stderr[-3000:]
    # ground truth from the script itself: no process group anywhere; count the processes that compiled
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("process groups:"))
    assert line.startswith("process groups: 0 ")
    processes = int(line.rsplit(" ", 1)[1])
    assert report["ranks"] == [None]  # the one process of a job without ranks
    assert len(report["workers"]) == processes - 1 >= 1  # the pool's workers: children, not ranks
    assert {w["rank"] for w in report["workers"]} == {None}
    assert not report["divergence"] and "RANK DIVERGENCE" not in proc.stdout
    assert "worker process(es) (not ranks)" in proc.stdout


def _run_workers(tmp_path, *args):
    out = tmp_path / "r.json"
    proc = fxlens("run", "--json", out, POOL, *args)
    return proc, json.loads(out.read_text()) if out.exists() else None


def test_pool_workers_are_not_ranks(tmp_path):
    # issue 34: forked workers became "ranks" with a RANK DIVERGENCE in a script with no process
    # group, and one of them, ended by the pool, killed the script's whole process group
    _workers_check(*_run_workers(tmp_path))


@pytest.mark.slow  # spawned workers each import torch (a few CPU seconds apiece)
def test_spawned_workers_are_not_ranks(tmp_path):
    _workers_check(*_run_workers(tmp_path, "spawn"))
