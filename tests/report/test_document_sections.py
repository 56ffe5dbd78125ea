"""The report's sections built once for every output: what the terminal shows of a long text (an
Excerpt's head) and what Markdown and HTML show of it (all of it, folded), a section's headline
(`lead`) and a tree inside a section; on a real trace, torch's own failure and restart text (read
from the log here, without fxlens) is shown in part by the terminal and whole by Markdown."""

from __future__ import annotations

import json

from fxlens.report.build import build_report
from fxlens.report.document import Excerpt, Line, Mark, Section, Table, Tree, text_lines, to_html, to_markdown
from fxlens.report.formats import render_markdown
from fxlens.report.text import render_text
from fxlens.trace.session import Session

ENV = {"torch": "2.13.0", "python": "3.11", "platform": "Linux", "device": "cpu"}


def test_an_excerpt_shows_its_head_in_the_terminal_and_its_whole_text_folded_elsewhere():
    whole = "first line\nsecond <b>line</b>\nthird"
    sec = Section(
        "Failures",
        [Line("0/0 f"), Excerpt(whole, "torch's text", ["first line"], "| ... 2 more", prefix="| ", clip=8)],
    )
    # the terminal: the head line clipped after its prefix, then MORE at the same indent
    assert sec.text_lines() == ["Failures:", "  0/0 f", "    | first...", "    | ... 2 more"]
    md = to_markdown([sec])
    assert md.startswith("### Failures\n\n- 0/0 f\n\n<details><summary>torch&#x27;s text</summary>")
    assert "```\nfirst line\nsecond <b>line</b>\nthird\n```" in md  # whole, verbatim in its fence
    page = to_html([sec], "x")
    assert "<pre><code>first line\nsecond &lt;b&gt;line&lt;/b&gt;\nthird</code></pre>" in page


def test_an_excerpt_without_a_head_is_nothing_in_the_terminal():
    folded = Excerpt("", "kernels", blocks=[Table(["kernel"], [["k0"]])])
    assert text_lines([folded]) == []  # not even a blank line
    assert Section("S", [Line("a"), folded]).text_lines() == ["S:", "  a"]
    assert "<details><summary>kernels</summary>\n\n| kernel |\n|---|\n| k0 |" in to_markdown([folded])
    assert Excerpt("", "nothing").as_blocks() == []  # no text, no blocks: no empty fold


def test_a_lead_is_above_the_title_in_the_terminal_and_under_the_heading_elsewhere():
    sec = Section("Compile time", [Table(["a"], [["1"]])], tail="1 s:", lead="Where cold start goes: x")
    assert sec.text_lines()[:2] == ["Where cold start goes: x", "Compile time: 1 s:"]
    assert to_markdown([sec]).startswith("### Compile time: 1 s\n\nWhere cold start goes: x\n\n| a |")


def test_a_tree_in_a_section_is_indented_by_depth_and_coloured_in_html():
    tree = Tree([(0, "a.py:1 f", []), (1, "a.py:2 g", [Mark("0/0", "failed")])], more="... 1 more")
    sec = Section("Stack trie", [tree])
    assert sec.text_lines() == ["Stack trie:", "  a.py:1 f", "    a.py:2 g: 0/0 failed", "  ... 1 more"]
    assert '<span class="o-failed">0/0 failed</span>' in to_html([sec], "x")


def _metrics(log) -> list[dict]:
    out = []
    for line in log.read_text().split("\n"):
        if "] {" in line and not line.startswith("\t"):
            rec = json.loads(line[line.index("] {") + 2 :])
            if "compilation_metrics" in rec:
                out.append(rec["compilation_metrics"])
    return out


def test_torchs_failure_and_restart_text_in_part_in_the_terminal_whole_in_markdown(stages_trace):
    (log,) = stages_trace.glob("*.log")
    metrics = _metrics(log)
    (failed,) = [m for m in metrics if m.get("fail_type")]
    (restart,) = [r for m in metrics for r in m.get("restart_reasons") or []]
    session = Session.open(stages_trace)
    report = build_report(session)
    text, md = render_text(report), render_markdown(report, session, ENV)
    fail_lines = [x for x in failed["fail_reason"].split("\n") if x.strip()]
    assert f"    | {fail_lines[0]}" in text.split("\n")  # the terminal: the first lines, quoted
    restart_lines = [x for x in restart.strip().split("\n") if x.strip()]
    shown = text.split("Restarts (Dynamo analysed the frame again; whole reasons):\n")[1].split("\n\n")[0]
    assert [x.strip() for x in shown.split("\n")[1:7]] == [x.strip() for x in restart_lines[:6]]
    if len(restart_lines) > 6:
        assert f"... {len(restart_lines) - 6} more line(s)" in shown
    # Markdown: every line of both texts, each in a folded section after the terminal's bullet
    for line in fail_lines + restart_lines:
        assert line.rstrip() in md
    assert md.count("<details><summary>torch&#x27;s full text: ") == 1
    assert md.count("<details><summary>the whole reason: ") == 1
