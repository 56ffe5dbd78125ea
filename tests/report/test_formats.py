"""`fxlens report --format markdown|html` and the bisect/minify verdicts: every trace string escaped."""

from __future__ import annotations

import platform
import re
from html.parser import HTMLParser

import pytest
from report_helpers import EVIL_FUNCTION, EVIL_REASON

from fxlens.cli import main as cli_main
from fxlens.report.bisect_result import BisectResult
from fxlens.report.build import build_report
from fxlens.report.formats import render_html, render_markdown
from fxlens.report.markup import PathShortener, environment, environment_lines, md_code, md_fence, md_text
from fxlens.report.minify_result import MinifyResult
from fxlens.report.verdicts import render
from fxlens.trace.session import Session

ENV = {"torch": "2.13.0", "torch_from": "trace", "python": "3.11", "platform": "Linux", "device": "cpu"}
# the only raw HTML a Markdown report writes itself
OUR_TAGS = {"details", "/details", "summary", "/summary"}


@pytest.fixture(scope="module")
def docs(hostile):
    out = {}
    for name in ("session", "edited"):
        session = Session.open(getattr(hostile, name))
        report = build_report(session)
        out[name] = (report, render_markdown(report, session, ENV), render_html(report, session, ENV))
    return out


def _outside_code(md: str) -> str:
    """Markdown with fenced blocks and code spans removed (what GitHub would parse as markup)."""
    md = re.sub(r"^(`{3,})[^\n]*\n.*?\n\1$", "", md, flags=re.S | re.M)
    md = re.sub(r"\\.", "", md)  # backslash escapes (`\<`, `\``) are text, not markup
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)


def test_markdown_has_no_injected_markup(docs):
    for _, md, _ in docs.values():
        # the escape is spelled out (`\x1b[31m`, its backslash and bracket escaped), never sent raw
        assert "\x1b" not in md and "\\\\x1b\\[31m" in md
        tags = set(re.findall(r"<\s*(/?[A-Za-z]+)", _outside_code(md)))
        assert tags <= OUR_TAGS, tags
        # every table row has as many cell separators as its header (a `|` never splits a cell)
        for table in re.findall(r"(?:^\|.*\|$\n?)+", md, flags=re.M):
            widths = {len(re.findall(r"(?<!\\)\|", row)) for row in table.strip().split("\n")}
            assert len(widths) == 1, table


def test_markdown_fences_outlast_the_content(docs):
    _, md, _ = docs["session"]
    # the source line holds ``` : its graph is in a fence of at least four backticks
    assert re.search(r"^````+python\n", md, flags=re.M)
    assert "<details><summary>graph 0/0" in md and "Guards of 2 compile(s)" in md


def test_edited_trace_names_are_escaped(docs):
    report, md, html_text = docs["edited"]
    assert report["graph_breaks"][0]["reason"] == EVIL_REASON
    assert report["graphs"][0]["function"] == EVIL_FUNCTION
    assert md_code(EVIL_FUNCTION) in md and md_text(EVIL_REASON) in md
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html_text and "<script" not in html_text


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text = set(), [], []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += attrs

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_self_contained_and_inert(docs):
    for _, _, page in docs.values():
        parser = _Tags()
        parser.feed(page)
        allowed = {
            "html",
            "head",
            "meta",
            "title",
            "style",
            "body",
            "h2",
            "h3",
            "p",
            "strong",
            "ul",
            "li",
            "code",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "pre",
            "span",  # the stack trie's outcome colours (class only)
            "details",
            "summary",
        }
        assert parser.tags <= allowed, parser.tags - allowed
        assert not [a for a, _ in parser.attrs if a.startswith("on") or a in ("src", "href")]
        assert "http://" not in page and "https://" not in page.split("<body>")[0]
        text = "".join(parser.text)
        assert "<script>alert(1)</script>" in text  # shown as text, not run
        assert "\x1b" not in page


def test_paths_relative_to_the_script_folder(docs, hostile):
    for _, md, page in docs.values():
        assert str(hostile.script.parent) not in md and str(hostile.script.parent) not in page
        assert "`hostile.py:10`" in md


def test_home_becomes_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    ps = PathShortener(None)
    assert ps.path(str(tmp_path / "proj" / "train.py")) == "~/proj/train.py"
    assert ps.text(f"File {tmp_path}/proj/x.py, line 3") == "File ~/proj/x.py, line 3"


def test_escapes_units():
    assert md_text("a|b <i> `c` *d* _e_ [f](g)") == "a\\|b \\<i\\> \\`c\\` \\*d\\* \\_e\\_ \\[f\\](g)"
    assert md_text("# not a heading") == "\\# not a heading" and md_text("1. no list") == "1\\. no list"
    assert md_code("a ``b`` c") == "```a ``b`` c```" and md_code("`x") == "`` `x ``"
    assert md_fence("x\n`````\ny").startswith("``````\n")


def test_cli_format_and_out(hostile, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli_main(["report", "--format", "html", "--out", str(out), str(hostile.session)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert cli_main(["report", "--format", "markdown", str(hostile.session)]) == 0
    md = capsys.readouterr().out
    assert md.startswith("## fxlens report: hostile.py") and "### Environment" in md
    assert "| torch | `" in md and "| device | `cpu" in md
    # the run recorded its own environment: no note that rows describe this machine instead
    assert f"| python | `{platform.python_version()}` |" in md and "| note |" not in md
    (env,) = [e for e in Session.open(hostile.session).events if e["event"] == "environment"]
    assert env["torch"].startswith("2.") and env["device"]


def test_bisect_and_minify_verdicts(tmp_path):
    repro = tmp_path / "repro_x.py"
    repro.write_text('"""```</details><script>x</script>"""\nprint(1)\n')
    bisect = {
        "summary": "crash first at stage fxlens, graph 0/0 (<b>f</b>)",
        "check": "crash",
        "runs": 3,
        "seconds": 1.0,
        "stages": [{"stage": "fxlens_eager", "ok": True}, {"stage": "fxlens", "ok": False}],
        "failure": {"kind": "crash", "error": "RuntimeError: | boom `x`"},
        "culprit": {"compile_id": "0/0", "function": "<b>f</b>", "file": str(tmp_path / "t.py"), "line": 3},
        "kernel": None,
        "next": "fxlens minify t.py --backend fxlens --check crash",
    }
    md = render(BisectResult.from_json(bisect).blocks(str(tmp_path / "t.py"), ENV), "markdown", "b")
    assert "verdict: crash first at stage fxlens" in md and "`0/0 <b>f</b> t.py:3`" in md
    assert "<b>" not in _outside_code(md) and "### Environment" in md
    minify = {
        "repro": str(repro),
        "check": "crash",
        "signature": "RuntimeError: <boom>",
        "original_nodes": 9,
        "final_nodes": 1,
        "queries": 4,
        "seconds": 2.0,
        "reproduced": "3/3",
        "backend": "fxlens",
    }
    md = render(MinifyResult.from_json(minify).blocks(str(tmp_path / "t.py"), ENV), "markdown", "m")
    assert "<details><summary>reproducer repro_x.py (2 lines)</summary>" in md
    assert "````python\n" in md and "`python repro_x.py`" in md and str(tmp_path) not in md
    page = render(MinifyResult.from_json(minify).blocks(str(tmp_path / "t.py"), ENV), "html", "m")
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "&lt;/details&gt;&lt;script&gt;" in page


def test_environment_note_when_the_run_did_not_record_it(hostile):
    # a TORCH_TRACE from a job without fxlens: torch from the trace, the rest from this machine
    env = environment(sorted((hostile.session / "trace").glob("*.log")), events=[], probe_device=False)
    rows = dict(environment_lines(env))
    assert env["torch_from"] == "trace" and "from the trace" in rows["torch"]
    assert "machine that wrote this report" in rows["note"]
