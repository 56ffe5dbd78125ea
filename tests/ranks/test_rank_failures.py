"""Failures folded across ranks: 1023 ranks that failed alike are one block with their ranks as
ranges, the rank that failed another way is its own; JSON keeps one entry per rank."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html import unescape


def _cli(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "report", *args], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _failures_in_logs(trace) -> dict[int, str]:
    """rank -> the first line of torch's failure text, read from each log here (not through fxlens)."""
    out = {}
    for log in trace.glob("*.log"):
        rank = int(re.search(r"rank_(\d+)_", log.name)[1])
        for line in log.read_text().split("\n"):
            if '{"compilation_metrics"' in line:
                m = json.loads(line[line.index("] {") + 2 :])["compilation_metrics"]
                if m.get("fail_type"):  # "backend='boom' raised:", then the error
                    out[rank] = next(ln for ln in m["fail_reason"].split("\n") if "Error" in ln)
    return out


def test_1024_failing_ranks_are_two_blocks(job_failing_1024, tmp_path):
    truth = _failures_in_logs(job_failing_1024)
    assert len(truth) == 1024
    odd = [r for r, text in truth.items() if "ValueError" in text]
    assert odd == [1000] and truth[1000].endswith("rank 1000: the backend ran out of memory")
    assert truth[5].endswith("rank 5: the backend failed on purpose")

    out = tmp_path / "r.json"
    text = _cli(str(job_failing_1024), "--json", str(out))
    report = json.loads(out.read_text())
    # JSON: one entry per rank, each with its own text
    assert sorted(f["rank"] for f in report["failures"]) == list(range(1024))
    assert {
        f["rank"]: next(ln for ln in f["fail_reason"].split("\n") if "Error" in ln)
        for f in report["failures"]
    } == truth
    # failures_and_restarts merges them the same way: one entry per text once the rank is taken out
    merged = report["failures_and_restarts"]
    assert sorted(len(e["ranks"]) for e in merged) == [1, 1023]
    assert next(e for e in merged if len(e["ranks"]) == 1)["ranks"] == [1000]
    # text: one block for the 1023 ranks alike, one for rank 1000, and the whole report on a screen
    section = text.split("Compile failures:\n", 1)[1].split("\n\n", 1)[0]
    heads = [ln for ln in section.split("\n") if ln.startswith("  ") and not ln.startswith("    ")]
    assert len(heads) == 2, section
    assert heads[0].endswith("BackendCompilerFailed on ranks 0-999, 1001-1023")
    assert heads[1].endswith("BackendCompilerFailed on rank 1000")
    assert (
        "rank 0: the backend failed on purpose" in section
        and "rank 1000: the backend ran out of memory" in section
    )
    assert "rank 5:" not in text  # the other ranks' texts differ only in the rank: not repeated
    assert len(text.rstrip("\n").split("\n")) <= 60, text
    # the rank grouping names rank 1000 and why
    assert "!! rank 1000: compile 0/0 of forward: failed (BackendCompilerFailed: " in text
    assert "ValueError: rank <rank>: the backend ran out of memory" in text


def test_markdown_and_html_fold_failures_too(job_failing_1024, tmp_path):
    md = tmp_path / "r.md"
    _cli(str(job_failing_1024), "--format", "markdown", "--out", str(md))
    md = md.read_text()
    section = md.split("### Compile failures", 1)[1].split("\n### ", 1)[0]
    # one bullet per group of ranks whose texts differ at most in the rank (the terminal's content)
    heads = [r for r in section.split("\n") if r.startswith("- ")]
    assert len(heads) == 2, section
    assert "BackendCompilerFailed on ranks 0-999, 1001-1023;" in heads[0]
    assert heads[1].endswith("BackendCompilerFailed on rank 1000")
    assert section.count("<details>") == 2 and "(the others differ at most in their rank)" in heads[0]
    assert "rank 0: the backend failed on purpose" in section and "rank 1000: the backend ran out" in section
    assert "rank 5:" not in section
    html = tmp_path / "r.html"
    _cli(str(job_failing_1024), "--format", "html", "--out", str(html))
    page = unescape(html.read_text())
    part = page.split("Compile failures", 1)[1]
    assert part.count("<details>") >= 2 and "on ranks 0-999, 1001-1023;" in part and "on rank 1000<" in part
    assert page.count("the backend failed on purpose") < 10  # once a block, not once a rank
