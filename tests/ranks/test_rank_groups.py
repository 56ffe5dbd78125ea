"""Ranks grouped by behaviour, on jobs grown from a real 2-rank gloo trace (tests/data/ranks)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from fxlens.report.ranks import fold_ranks, rank_ranges


def _report(path, tmp_path, *extra):
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "report", str(path), "--json", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, json.loads(out.read_text())


def test_rank_ranges():
    assert rank_ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert rank_ranges([*range(777), *range(778, 1024)]) == "0-776, 778-1023"
    assert rank_ranges([3]) == "3"
    assert rank_ranges([None]) == "-"
    assert rank_ranges(range(0, 40, 2), limit=3) == "0, 2, 4, ... (20 ranks)"


def test_fold_ranks_merges_rows_equal_but_for_rank():
    rows = [{"rank": r, "compile_id": "0/0", "nodes": 9} for r in range(4)] + [
        {"rank": 2, "compile_id": "0/1", "nodes": 9}
    ]
    assert fold_ranks(rows) == [
        {"rank": "0-3", "compile_id": "0/0", "nodes": 9},
        {"rank": "2", "compile_id": "0/1", "nodes": 9},
    ]


def test_1024_ranks_fit_one_screen_and_name_the_diverging_rank(job_1024, tmp_path):
    text, report = _report(job_1024, tmp_path)
    lines = text.rstrip("\n").split("\n")
    assert len(lines) <= 60, text
    assert "1023 ranks alike (0-776, 778-1023): 1 compile(s) of forward" in text
    # the outlier, where it started and why, in one sentence
    assert (
        "!! rank 777: recompile of forward, input `x`, dim 0 8 -> 5 (from compile 0/1 of forward, step 2)"
        in text
    )
    # no list of a thousand rank numbers anywhere (ranges only)
    assert not re.search(r"(\d+, ){10}", text)
    # JSON keeps the per-rank detail
    groups = report["rank_groups"]["groups"]
    assert [g["count"] for g in groups] == [1023, 1]
    assert groups[0]["normal"] and groups[1]["ranks"] == [777]
    d = groups[1]["first_divergence"]
    assert (d["compile_id"], d["function"], d["step"], d["kind"]) == ("0/1", "forward", 2, "recompile")
    per_rank = report["rank_groups"]["per_rank"]
    assert len(per_rank) == 1024 and [r["rank"] for r in per_rank] == list(range(1024))
    assert per_rank[777]["recompiles"] == 1 and per_rank[777]["group"] == 1
    assert {r["group"] for r in per_rank if r["rank"] != 777} == {0}
    assert len(report["graphs"]) == 1025  # one graph per rank, two on rank 777


def test_read_in_parallel_gives_the_same_report(job_many_outliers, tmp_path, monkeypatch):
    from fxlens.report.build import build_report
    from fxlens.trace.session import Session

    reports = []
    for jobs in ("1", "2"):
        monkeypatch.setenv("FXLENS_READ_JOBS", jobs)
        reports.append(build_report(Session.open(job_many_outliers)))
    assert reports[0] == reports[1]


def test_outliers_alike_are_one_group_with_ranges(job_many_outliers, tmp_path):
    text, report = _report(job_many_outliers, tmp_path)
    assert "60 ranks alike (0-4, 8-39, 41-63)" in text
    assert "!! ranks 5-7, 40: recompile of forward, input `x`, dim 0 8 -> 5" in text
    assert [g["ranks"] for g in report["rank_groups"]["groups"]] == [
        [*range(5), *range(8, 40), *range(41, 64)],
        [5, 6, 7, 40],
    ]


def test_markdown_report_groups_ranks_too(job_many_outliers, tmp_path):
    out = tmp_path / "r.md"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "report",
            str(job_many_outliers),
            "--format",
            "markdown",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = out.read_text()
    assert "- 60 ranks alike (0-4, 8-39, 41-63): 1 compile(s) of forward" in md
    assert "- !! ranks 5-7, 40: recompile of forward" in md
    assert "| 0-63 | `0/0` | `forward` |" in md and "| 5-7, 40 | `0/1` | `forward` |" in md
    assert "rank 0: 1, rank 1: 1" not in md  # no list of every rank
    assert md.count("graph 0/0 (forward") == 1  # the same graph's code once, not once per rank


def test_object_ids_in_failed_guards_do_not_split_ranks():
    """torch prints object ids in ID_MATCH guards; they differ on every process, not a divergence."""
    from fxlens.report.ranks import rank_steps
    from fxlens.trace.model import RankModel
    from fxlens.trace.reader import CompileId, Record
    from fxlens.trace.records import Recompile

    def model(rank: int, obj_id: int) -> RankModel:
        m = RankModel(rank=rank, log="")
        rec = Record("artifact:recompile_reasons", {}, CompileId(0, 1), rank, None, 1)
        m.by_compile["0/1"].append(rec)
        guard = f"0/0: ___check_obj_id(L['self'], {obj_id})"
        m.recompiles.append(Recompile("0/1", rank, "forward", "m.py", 3, (guard,)))
        return m

    assert rank_steps(model(0, 140514640679520)) == rank_steps(model(1, 139831882928736))


def _output_files(log) -> list[str]:
    """The inductor output files a log names, read from its records here (not through fxlens)."""
    out = []
    for line in log.read_text().splitlines():
        if '{"inductor_output_code"' in line:
            rec = json.loads(line[line.index("] {") + 2 :])
            out.append(rec["inductor_output_code"]["filename"].rsplit("/", 1)[-1])
    return out


def test_a_rank_whose_inductor_wrote_other_code_is_an_outlier(job_inductor_outlier, tmp_path):
    """Same Dynamo graph on every rank; rank 9's inductor generated other code (cpp.simdlen=1)."""
    text, report = _report(job_inductor_outlier, tmp_path)
    logs = {int(re.search(r"rank_(\d+)_", p.name)[1]): p for p in job_inductor_outlier.glob("*.log")}
    files = {r: _output_files(p) for r, p in logs.items()}
    odd = [r for r in files if files[r] != files[0]]
    assert odd == [9]  # the ground truth, from the logs themselves
    # the graphs are the same on every rank: one row, all 16 ranks
    assert {(g["compile_id"], g["num_nodes"], tuple(g["ops"])) for g in report["graphs"]} == {
        (
            report["graphs"][0]["compile_id"],
            report["graphs"][0]["num_nodes"],
            tuple(report["graphs"][0]["ops"]),
        )
    }
    groups = report["rank_groups"]["groups"]
    assert [g["ranks"] for g in groups] == [[r for r in range(16) if r != 9], [9]]
    d = groups[1]["first_divergence"]
    assert (d["compile_id"], d["function"], d["step"]) == ("0/0", "f", 1)
    mine, theirs = files[9][0], files[0][0]
    assert (
        f"inductor's output code differs ({mine[:12]}…" in d["cause"] and f"vs {theirs[:12]}…" in d["cause"]
    )
    assert "!! rank 9: compile 0/0 of f: inductor's output code differs" in text
