"""tlparse's views in `fxlens report --format markdown|html`, on real traces: failures and restarts
with torch's whole text, the per-compile time table with caches, shape specialisations with their
guards and stacks, the stack trie, and inductor's output code with provenance. Each checked against
what the trace itself holds, read here without fxlens."""

from __future__ import annotations

import gzip
import json
import re
import sys
from html import unescape
from pathlib import Path

import pytest

from fxlens.report.build import build_report
from fxlens.report.formats import render_html, render_markdown
from fxlens.trace.session import Session

ENV = {"torch": "2.13.0", "torch_from": "trace", "python": "3.11", "platform": "Linux", "device": "cpu"}
INDUCTOR = Path(__file__).resolve().parents[1] / "data" / "inductor"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ranks"))


def _records(log: Path):
    """(record, payload text) of every record of a log, parsed here (not by fxlens)."""
    lines = log.read_text().split("\n")
    for i, line in enumerate(lines):
        if "] {" in line and not line.startswith("\t"):
            rec = json.loads(line[line.index("] {") + 2 :])
            payload = []
            for nxt in lines[i + 1 :]:
                if not nxt.startswith("\t"):
                    break
                payload.append(nxt[1:])
            yield rec, "\n".join(payload)


def _render(path: Path) -> tuple[dict, str, str]:
    session = Session.open(path)
    report = build_report(session)
    return report, render_markdown(report, session, ENV), render_html(report, session, ENV)


def _section(md: str, title: str) -> str:
    """The Markdown between heading TITLE and the next level-3 heading."""
    start = md.index(f"### {title}")
    end = md.find("\n### ", start + 1)
    return md[start : end if end > 0 else len(md)]


def _html_text(html_text: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html_text))


def test_failures_restarts_and_compile_times(stages_trace):
    (log,) = stages_trace.glob("*.log")
    metrics = [r["compilation_metrics"] for r, _ in _records(log) if "compilation_metrics" in r]
    failed = [m for m in metrics if m.get("fail_type")]
    restarted = [m for m in metrics if m.get("restart_reasons")]
    assert len(failed) == 1 and len(restarted) == 1
    _, md, html_text = _render(stages_trace)

    fail = _section(md, "Compile failures")
    assert f"`{failed[0]['compile_id']}`" in fail and failed[0]["fail_type"] in fail
    # torch's whole text in a fence: every line of it
    for line in failed[0]["fail_reason"].strip().split("\n"):
        assert line.rstrip() in md
    restart = _section(md, "Restarts (Dynamo analysed the frame again; whole reasons)")
    assert f"- `{restarted[0]['compile_id']}` `f`" in restart
    for line in restarted[0]["restart_reasons"][0].strip().split("\n"):
        assert line.rstrip() in restart
    # one row per compile id, with its total as torch logged it
    times = _section(md, "Compile time")
    rows = [r for r in times.split("\n") if r.startswith("| `")]
    assert len(rows) == len({m["compile_id"] for m in metrics})
    for cid in {m["compile_id"] for m in metrics}:  # its slowest attempt's time, as torch logged it
        slowest = max(m.get("entire_frame_compile_time_s") or 0 for m in metrics if m["compile_id"] == cid)
        row = next(r for r in rows if r.startswith(f"| `{cid}` |"))
        assert row.split(" | ")[2] == f"{slowest:.2f}"
    text = _html_text(html_text)
    assert "Compile failures" in text and "Restarts (Dynamo analysed the frame again; whole reasons)" in text
    assert restarted[0]["restart_reasons"][0].strip().split("\n")[1].strip() in text


def test_stack_trie_in_markdown_and_html(stages_trace):
    (log,) = stages_trace.glob("*.log")
    starts = {
        (r["frame_id"], r["frame_compile_id"]): r["dynamo_start"]["stack"]
        for r, _ in _records(log)
        if "dynamo_start" in r
    }
    _, md, html_text = _render(stages_trace)
    trie = _section(md, "Stack trie")
    # each compile's innermost user frame is a line of the trie, with the compile id after it
    for (fid, fcid), stack in starts.items():
        leaf = stack[-1]
        assert re.search(
            rf"compile_stages\.py:{leaf['line']} {re.escape(leaf['name'])}: .*{fid}/{fcid}", trie
        ), trie
    assert "graph break" in trie and "failed" in trie
    assert "compile_stages.py:" in _html_text(html_text).split("Stack trie", 1)[1]
    # HTML colours each compile id by its outcome, as tlparse does: every compile torch recorded as
    # failed (compilation_metrics fail_type) is in the failed colour, every other never is
    trie_html = html_text.split("Stack trie", 1)[1]
    metrics = [r["compilation_metrics"] for r, _ in _records(log) if "compilation_metrics" in r]
    failed = {m["compile_id"] for m in metrics if m.get("fail_type")}
    assert failed
    for m in metrics:
        cid = m["compile_id"]
        colour = re.search(rf'<span class="o-([\w-]+)">{re.escape(cid)}(?: [\w ]+)?</span>', trie_html)
        assert colour, cid
        assert (colour[1] == "failed") == (cid in failed), (cid, colour[0])


def test_specialisations_with_guards_and_stacks(specialize_trace):
    (log,) = specialize_trace.glob("*.log")
    (spec,) = [
        r["symbolic_shape_specialization"] for r, _ in _records(log) if "symbolic_shape_specialization" in r
    ]
    _, md, html_text = _render(specialize_trace)
    sec = _section(md, "Shape specialisations (a dynamic dimension fixed to one value)")
    assert f"`{spec['sources'][0]}`" in sec and f"`{spec['symbol']}`" in sec and f"`{spec['value']}`" in sec
    assert "specialize.py:8`  `if x.shape[0] == 8:" in sec  # the user's line that caused it
    assert re.search(rf"guard added: `Eq\({spec['symbol']}, 8\)` at `\S*specialize\.py:8`", sec)  # the guard it added
    assert "The user's stack:" in sec and "torch's stack:" in sec
    text = _html_text(html_text)
    assert f"Eq({spec['symbol']}, 8)" in text and "if x.shape[0] == 8:" in text


@pytest.fixture(scope="module")
def inductor_log(tmp_path_factory) -> Path:
    log = tmp_path_factory.mktemp("inductor") / "fused.log"
    log.write_bytes(gzip.decompress((INDUCTOR / "fused.log.gz").read_bytes()))
    return log


def test_output_code_with_provenance(inductor_log):
    recs = list(_records(inductor_log))
    (code,) = [p for r, p in recs if "inductor_output_code" in r]
    kernels = re.findall(r"^(\w+) = async_compile\.", code, flags=re.M)
    (mapping,) = [
        json.loads(p)
        for r, p in recs
        if r.get("artifact", {}).get("name") == "inductor_provenance_tracking_node_mappings"
    ]
    _, md, html_text = _render(inductor_log)
    sec = _section(md, "Inductor output code")
    for k in kernels:
        post = sorted(
            {n for key, nodes in mapping["cppCodeToPost"].items() if key.split(":")[0] == k for n in nodes}
        )
        row = next(r for r in sec.split("\n") if r.startswith(f"| `{k}`"))
        assert sorted(row.split(" | ")[2].strip("`").split(", ")) == post
        assert "inductor\\_case.py:6" in row  # the user's line the kernel came from
    assert code.split("\n")[-1] in sec and "async_compile.cpp_pybinding" in sec  # the code itself
    text = _html_text(html_text)
    assert all(k in text for k in kernels) and "async_compile.cpp_pybinding" in text
