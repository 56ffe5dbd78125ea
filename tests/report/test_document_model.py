"""One document model for every output: a report section is built once as blocks, and the text,
Markdown and HTML reports (and the TUI) each render those blocks; none reads another's text back."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from fxlens.report.build import build_report
from fxlens.report.distributed import distributed_sections
from fxlens.report.document import Line, Section, to_html, to_markdown
from fxlens.report.formats import render_html, render_markdown
from fxlens.report.special_graphs import special_sections
from fxlens.report.text import render_text
from fxlens.trace.session import Session

DATA = Path(__file__).resolve().parent.parent / "data"
ENV = {"torch": "2.13.0", "python": "3.11", "platform": "Linux", "device": "cpu"}
# traces with run-time findings across ranks and records of a special kind
SECTIONED = [
    "tlparse/multi_rank_schedule",
    "tlparse/collectives_parity",
    "tlparse/multi_rank_runtime",
    "tlparse/graph_exec_order_tests",
    "tlparse/export.log",
    "traces/2.13.0/scenarios/ddp",
    "traces/2.13.0/scenarios/compiled_autograd",
]


@pytest.fixture(scope="module", params=SECTIONED)
def traced(request):
    session = Session.open(DATA / request.param)
    report = build_report(session)
    return report, session


def test_each_section_reads_the_same_in_text_markdown_and_html(traced):
    report, session = traced
    sections = distributed_sections(report) + special_sections(report)
    assert sections, "the fixture has distributed or special records"
    text = render_text(report)
    md = render_markdown(report, session, ENV)
    page = render_html(report, session, ENV)
    for sec in sections:
        # the terminal: the title, then each line at its indent
        assert "\n".join(sec.text_lines()) + "\n" in text
        # Markdown and HTML: a heading, then each line as a bullet, the alarms marked alike
        assert to_markdown([sec]).rstrip() in md
        assert to_html([sec], "x").split("<body>\n")[1].split("\n</body>")[0] in page
        heading = f"<h3>{html.escape(sec.title.rstrip(':'))}</h3>"
        assert heading in page
        items = {html.unescape(re.sub("<[^>]+>", "", li)) for li in re.findall("<li>(.*?)</li>", page)}
        for line in sec.lines:  # as shown, a `quoted` span as code
            assert re.sub("`([^`\n]+)`", r"\1", line.shown()) in items


def test_a_hang_risk_is_an_alarm_everywhere():
    """multi_rank_schedule: the logs' inductor_collective_schedule payloads, read by hand, are
    all_reduce_, wait_tensor, all_gather_into_tensor, then reduce_scatter_tensor on ranks 0 and 2
    but wait_tensor on rank 1."""
    report = build_report(Session.open(DATA / "tlparse/multi_rank_schedule"))
    (sec,) = [s for s in distributed_sections(report) if s.name == "Collectives"]
    (alarm,) = [x for x in sec.lines if x.alarm]
    want = "HANG RISK: rank 1 issues wait_tensor where ranks 0, 2 issue reduce_scatter_tensor (collective #4"
    assert alarm.text.startswith(want)
    assert f"  !! {alarm.text}" in render_text(report)
    assert "- !! HANG RISK: rank 1 issues" in to_markdown([sec])


def test_a_section_without_a_name_is_its_lines():
    sec = Section("", [Line("Caches: fx 1 hit", 0), Line("bypassed: why", 2), Line("diverge", 0, alarm=True)])
    assert sec.text_lines() == ["Caches: fx 1 hit", "  bypassed: why", "!! diverge"]
    titled = Section("Export issues", [Line("x", 5)], gloss="draft", tail="1")
    assert titled.text_lines() == ["Export issues (draft): 1", "     x"]


@pytest.mark.parametrize(
    "name", ["traces/2.13.0/scenarios/compiled_autograd", "tlparse/cache_hit_miss.log", "tlparse/simple.log"]
)
def test_stack_trie_html_colours_every_compile_by_its_outcome(name):
    """Every compile of the trie (the report JSON's stack_trie) is one coloured span in the HTML,
    with its own outcome: also compiled autograd's `!0/1/0` and a re-run's `0/0#2`."""
    session = Session.open(DATA / name)
    report = build_report(session)
    want = []

    def walk(nodes):
        for n in nodes:
            want.extend((c["compile_id"], c["outcome"]) for c in n["compiles"])
            walk(n["children"])

    walk(report["stack_trie"])
    page = render_html(report, session, ENV)
    trie = page.split("<h3>Stack trie (the user frames that entered each compile)</h3>")[1].split("</pre>")[0]
    got = [
        (html.unescape(text).removesuffix(f" {cls.replace('-', ' ')}"), cls.replace("-", " "))
        for cls, text in re.findall(r'<span class="o-([\w-]+)">(.*?)</span>', trie)
    ]
    assert got == want and want


def test_a_table_shows_its_limit_in_the_terminal_and_folds_the_rest_elsewhere():
    from tabulate import tabulate as reference

    from fxlens.report.document import Code, Table, text_lines

    rows = [[Code(f"0/{i}"), str(i * 10), f"f{i}"] for i in range(7)]
    t = Table(
        ["compile id", "bytes", "name"],
        rows,
        limit=3,
        more="  ... {n} more (see --json)",
        fold=5,
        folded="{n} more",
    )
    # the terminal: the tabulate package's own table of the first three rows, then the rest counted
    want = reference(
        [[f"0/{i}", i * 10, f"f{i}"] for i in range(3)], ["compile id", "bytes", "name"], "simple"
    )
    assert text_lines([t]) == [*want.split("\n"), "  ... 4 more (see --json)", ""]
    md = to_markdown([t])
    assert md.count("| `0/") == 7 and "<details><summary>2 more</summary>" in md
    assert md.index("`0/4`") < md.index("2 more") < md.index("`0/5`")  # the first five, then the fold
    # text only: numbers stay left-aligned as written
    left = Table(["n"], [["5"], ["10"]], numbers=False)
    assert left.text_lines() == ["n", "---", "5", "10"]


def test_kernels_and_fallbacks_are_one_section_in_every_format():
    report = build_report(Session.open(DATA / "tlparse/simple.log"))
    report["kernels"] = [
        {"compile_id": "0/0", "name": f"k{i}", "ops": ["a"] * i, "bytes_read": i, "bytes_written": 1}
        for i in range(25)
    ]
    report["fallbacks"] = [
        {"op": "aten.mm", "count": 2},
        {"op": "aten.add", "count": 5},
        {"op": "aten.mm", "count": 4},
    ]
    text = render_text(report, limit=3)
    assert "fxlens kernels: 25 (bytes read 300, written 25)" in text
    assert re.findall(r"^0/0 +(k\d+) ", text, re.M) == ["k0", "k1", "k2"]
    assert "  ... 22 more kernel(s) (see --json)" in text
    assert "fxlens fallbacks (ops run as ATen calls): aten.mm x6, aten.add x5" in text
    md = render_markdown(report, None, ENV)
    assert "### fxlens kernels: 25 (bytes read 300, written 25)" in md
    assert all(f"`k{i}`" in md for i in range(25)) and "<summary>5 more kernels</summary>" in md
    assert "**fxlens fallbacks (ops run as ATen calls): **`aten.mm x6, aten.add x5`" in md


def test_a_frame_past_the_recompile_limit_on_two_ranks_is_one_row_everywhere():
    report = build_report(Session.open(DATA / "live/failures.log.gz"))
    (hit,) = report["recompile_limit_hits"]  # torch's own record: `sizes` hit recompile_limit=2
    report["ranks"] = [0, 1]
    report["recompile_limit_hits"] = [{**hit, "compile_id": f"{r}/2", "rank": r} for r in (0, 1)]
    text = render_text(report)
    assert re.search(r"^sizes +\S+record_failures.py:32 +recompile_limit=2 +0-1$", text, re.M), text
    md = render_markdown(report, None, ENV)
    assert "| function | where | limit | rank |" in md
    rows = re.findall(r"^\| `sizes` \| `\S+:32` \| recompile\\_limit=2 \| (.*) \|$", md, re.M)
    assert rows == ["0-1"], rows


def test_every_block_has_a_terminal_form_without_markup():
    from fxlens.report.document import Bold, Bullets, Code, Details, Heading, Para, Pre, text_lines

    blocks = [
        Heading(3, "Graphs"),
        Para([Bold("a "), Code("`b`")]),
        Bullets(["x", [Code("y"), " z"]]),
        Details("more", [Pre("l1\n\nl2")]),
    ]
    assert text_lines(blocks) == [
        "Graphs:",
        "a `b`",
        "",
        "  x",
        "  y z",
        "",
        "more:",
        "    l1",
        "",
        "    l2",
        "",
    ]


def test_a_joined_line_is_its_own_line_in_text_and_part_of_the_bullet_before_in_markdown():
    sec = Section(
        "T", [Line("subject:"), Line("fix: `f()`", 4, joins=True), Line("more", 4, joins=True), Line("b")]
    )
    assert sec.text_lines() == ["T:", "  subject:", "    fix: `f()`", "    more", "  b"]
    assert to_markdown([sec]) == "### T\n\n- subject: fix: `f()`; more\n- b\n"
    assert "<li>subject: fix: <code>f()</code>; more</li><li>b</li>" in to_html([sec], "x")


@pytest.mark.parametrize(
    "trace", ["traces/2.13.0/scenarios/ddp", "traces/2.13.0/dedicated_log_torch_trace.log"]
)
def test_breaks_and_recompile_causes_are_one_bullet_each_with_what_the_terminal_shows(trace):
    # built once: the terminal's lines of each break / cause are the Markdown bullet of that break
    report = build_report(Session.open(DATA / trace))
    text, md = render_text(report), render_markdown(report, None, ENV)
    breaks, causes = report["graph_breaks"], report["recompile_causes"]
    assert breaks and ("Graph breaks (deduplicated by location and reason):" in text)
    part = md.split("### Graph breaks (deduplicated by location and reason)")[1].split("\n### ")[0]
    bullets = [x for x in part.split("\n") if x.startswith("- ")]
    assert len(bullets) == len(breaks)
    for b, item in zip(breaks, bullets, strict=True):
        assert f"    torch's graph-break id: {b['gb_id']}" in text and b["gb_id"] in item
        assert md.count(f"| {b['count']} |") >= 1
    if causes:
        part = md.split("### Recompiles, by root cause")[1].split("\n### ")[0]
        bullets = [x for x in part.split("\n") if x.startswith("- ")]
        assert len(bullets) == len(causes)
        for c, item in zip(causes, bullets, strict=True):
            assert (
                f"    fix: {c['fix']}" in text and " fix: " in item and "| " + str(c["count"]) + " |" in part
            )
