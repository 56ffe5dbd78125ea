"""Text from a trace never reaches the terminal raw: control characters are shown escaped.

A trace from someone else can name a function or word a graph-break reason
"\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m" (retitle the window, clear the screen, paint it red) or hold
Rich markup. `fxlens report` shows `\\x1b` instead; JSON keeps the text (escaped by JSON itself);
the TUI shows it escaped and never interprets the markup.
"""

import asyncio
import json

import pytest
from proc_helpers import fxlens
from trace_edits import EVIL, edit_json, lines, write

MARKUP = "[bold red]MARKUP[/bold red]"


def _evil_trace(path):
    text = edit_json(
        lines(), "compilation_metrics", lambda r: r["compilation_metrics"].update(co_name="f" + EVIL + MARKUP)
    )
    # the graph break reason and its traceback
    text = [
        x.replace("Call to `torch._dynamo.graph_break()`", "Call to " + EVIL) if x.startswith("\t") else x
        for x in text
    ]
    text = [x.replace("in f\n", "in f" + EVIL) if x.startswith("\t") else x for x in text]
    return write(path, text)


def test_report_text_shows_control_characters_escaped(tmp_path):
    log = _evil_trace(tmp_path / "evil.log")
    out = tmp_path / "r.json"
    proc = fxlens("report", "--guards", "--json", out, log)
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert "\x1b" not in stream and "\x07" not in stream
    assert "Call to \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m" in proc.stdout
    assert "f\\x1b]0;pwned" in proc.stdout
    # JSON keeps the data: escaped by the format, the same string once decoded
    raw = out.read_text()
    assert "\x1b" not in raw
    report = json.loads(raw)
    assert any(EVIL in g["co_name"] for g in report["graphs"])


def test_error_lines_show_control_characters_escaped(tmp_path):
    missing = tmp_path / ("no" + EVIL + ".log")
    proc = fxlens("report", missing)
    assert proc.returncode == 2 and "\x1b" not in proc.stderr and "\\x1b]0;pwned" in proc.stderr


@pytest.mark.tui
def test_tui_shows_hostile_names_escaped_and_markup_literally(tmp_path):
    from textual.strip import Strip

    from fxlens.trace.session import Session
    from fxlens.tui.app import FxlensApp

    log = _evil_trace(tmp_path / "evil.log")
    app = FxlensApp(Session.open(log), export_dir=tmp_path / "exports", cursor_blink=False)
    screens: list[str] = []

    def screen_text() -> str:
        update = app.screen._compositor.render_full_update()
        return "\n".join(Strip(s).text if not isinstance(s, Strip) else s.text for s in update.strips)

    async def drive():
        async with app.run_test(size=(160, 50)) as pilot:
            for _ in range(600):
                if app.ready:
                    break
                await pilot.pause(0.05)
            assert app.ready
            for key in ("1", "2", "3", "4", "5", "6", "7", "8", "9"):
                await pilot.press(key)
                await pilot.pause(0.2)
                screens.append(screen_text())

    asyncio.run(drive())
    text = "\n".join(screens)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned" in text
    assert MARKUP in text  # shown as written, not turned into bold red "MARKUP"
