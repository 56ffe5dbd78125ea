"""The report's one table of sections (fxlens.report.contents): the terminal, Markdown and HTML are
all produced from its rows, so a section added as one row shows in every output that shows it, and
each row calls its builder only with arguments the builder takes."""

from __future__ import annotations

import inspect
from pathlib import Path

from fxlens.report import contents
from fxlens.report.build import build_report
from fxlens.report.contents import HIDDEN, OWN, SECTIONS, Of, Row
from fxlens.report.document import Line, Section
from fxlens.report.formats import render_html, render_markdown
from fxlens.report.text import render_text
from fxlens.trace.session import Session

TRACE = Path(__file__).resolve().parents[1] / "data" / "inductor" / "fused.log.gz"
ENV = {"torch": "0", "python": "3", "platform": "x", "device": "cpu"}


def test_each_row_calls_its_builder_with_parameters_it_has():
    for row in SECTIONS:
        params = inspect.signature(row.build).parameters
        assert set(row.args) <= set(params), row.build.__name__
        assert all(isinstance(of, Of) and hasattr(contents.Output(), of.name) for of in row.args.values())
        for limit in (row.terminal, row.markdown):
            assert limit in (OWN, HIDDEN) or "limit" in params, row.build.__name__
        assert (row.terminal, row.markdown) != (HIDDEN, HIDDEN), row.build.__name__


def _probe(report: dict, text=str, limit=None) -> list:
    return [Section("Probe", [Line(text(f"{len(report['graphs'])} graph(s), limit {limit}"))])]


def test_a_section_added_as_one_row_shows_in_every_output(monkeypatch):
    report = build_report(Session.open(TRACE))
    before, before3 = render_text(report), render_text(report, limit=3)
    row = Row(_probe, {"text": contents.TEXT}, terminal=contents.LIMIT, markdown=7)
    at = next(i for i, r in enumerate(SECTIONS) if r.build.__name__ == "graph_section")
    monkeypatch.setattr(contents, "SECTIONS", SECTIONS[:at] + (row,) + SECTIONS[at:])
    n = len(report["graphs"])
    text = render_text(report, limit=3)
    # in the terminal: the table's place (before the graphs), with the report's --limit
    assert f"Probe:\n  {n} graph(s), limit 3\n\nGraphs:" in text
    assert text.replace(f"Probe:\n  {n} graph(s), limit 3\n\n", "") == before3  # nothing else moved
    md = render_markdown(report, env=ENV)
    assert f"### Probe\n\n- {n} graph(s), limit 7\n\n### Graphs" in md
    assert f"<h3>Probe</h3>\n<ul><li>{n} graph(s), limit 7</li></ul>" in render_html(report, env=ENV)
    # a column HIDDEN: that output does not show the row
    monkeypatch.setattr(contents, "SECTIONS", SECTIONS + (Row(_probe, markdown=HIDDEN),))
    assert "Probe" not in render_markdown(report, env=ENV)
    assert render_text(report).startswith(before.rstrip("\n"))
    assert "Probe:" in render_text(report)


def test_the_tui_cold_start_row_is_the_reports_own_section():
    """The Metrics view's cold-start row and the compile-time section's headline are one builder's
    section: its title and torch's figures (the report's cold_start message) in both."""
    from fxlens.report.overview import compile_time_section
    from fxlens.tui.loader import compile_cost_sections

    report = build_report(Session.open(TRACE))
    message = report["compile_times"]["cold_start"]["message"]
    assert message.startswith("8.13 s compiling over 1 compile(s)")  # fused.log.gz: one 8.13 s compile
    (sec,) = [s for label, s in compile_cost_sections(report) if label == "cold start"]
    assert sec.text_lines() == ["Where cold start goes:", message]
    assert compile_time_section(report)[0].lead == f"Where cold start goes: {message}"
    assert f"Where cold start goes: {message}\nCompile time:" in render_text(report)
