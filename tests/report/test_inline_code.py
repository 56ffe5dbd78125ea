"""Backtick-quoted code in the report's plain strings (torch's own messages, fxlens's causes and
fixes) is rendered as code in HTML and Markdown, never as literal backticks; what is inside stays
escaped. Ground truth: the reasons and causes of the real trace tests/faults/data/tiny.log, as the
JSON report holds them (with their backticks)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from fxlens.report.document import Bullets, Code, Para, Table, code_spans, to_html, to_markdown

TINY = Path(__file__).parents[1] / "faults" / "data" / "tiny.log"


def _fxlens(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "fxlens.cli", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


class _Cells(HTMLParser):
    """Each table cell's text, with its <code> parts marked «...»."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._cell = []
        elif tag == "code" and self._cell is not None:
            self._cell.append("«")

    def handle_endtag(self, tag):
        if tag == "code" and self._cell is not None:
            self._cell.append("»")
        elif tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_html_and_markdown_reports_render_quoted_code():
    report = json.loads(_fxlens("report", "--json", "-", str(TINY)))
    reasons = {b["reason"] for b in report["graph_breaks"]} | {
        c["message"] for c in report["recompile_causes"]
    }
    quoted = sorted(r for r in reasons if re.search(r"`[^`]+`", r))
    assert quoted, (
        reasons
    )  # the trace's own text quotes code (torch: "Call to `torch._dynamo.graph_break()`")
    page = _Cells()
    page.feed(_fxlens("report", "--format", "html", str(TINY)))
    for text in quoted:
        want = re.sub(r"`([^`]+)`", r"«\1»", text)
        assert want in page.cells, (want, page.cells)
    assert not any("`" in c for c in page.cells), [c for c in page.cells if "`" in c]
    md = _fxlens("report", "--format", "markdown", str(TINY))
    for text in quoted:
        assert text in md  # as GitHub reads it: a code span, not \` escaped to stay literal


def test_quoted_code_stays_escaped_and_odd_backticks_stay_text():
    hostile = "run `<script>alert(1)</script>` then a lone ` tick | pipe"
    html = to_html([Table(["x"], [[hostile]]), Para(hostile), Bullets([hostile])], "t")
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>" in html and "<script>" not in html
    assert html.count("a lone ` tick") == 3  # an unpaired backtick is text
    md = to_markdown([Table(["x"], [[hostile]])])
    assert "`<script>alert(1)</script>`" in md and "a lone \\` tick \\| pipe" in md
    assert code_spans("no code here") == ["no code here"]


def test_a_quote_inside_a_quote_stays_text():
    # torch quotes its own code inside fxlens's quote: no half of it may become a code span
    nested = "could not resume after `Call to `torch._dynamo.graph_break()`` at t.py:11"
    assert code_spans(nested) == [nested]
    assert "<code>" not in to_html([Para(nested)], "t")
    assert code_spans("a `f()` and `g()`.") == ["a ", Code("f()"), " and ", Code("g()"), "."]
