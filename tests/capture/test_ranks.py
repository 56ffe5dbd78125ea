"""Several ranks: a real 2-process gloo job through `fxlens run --nproc 2`."""

from capture_helpers import SCRIPTS


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
