"""A hostile session directory: report and tui read it as data and never run code from it.

The session holds what an attacker could edit: graph code that would write a file if executed, a
pickle that would too if unpickled, events naming a FIFO and /dev/zero as the reproducer to show,
a session.json nested too deep to decode, a log that is a symlink loop, names with terminal escapes.
Nothing may execute, hang or crash; what is readable is shown.
"""

import asyncio
import json
import os
import pickle

import pytest
from proc_helpers import fxlens
from trace_edits import EVIL, lines, write


class _Pwn:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _hostile_session(root, marker):
    s = root / "session"
    (s / "trace").mkdir(parents=True)
    pwn = f"__import__('os').system('touch {marker}')"
    # graph code as torch prints it, with a payload line that would run if anyone exec'd it
    text = [x + f"; {pwn}" if x.startswith("\t") and "return" in x else x for x in lines()]
    write(s / "trace" / "dedicated_log_torch_trace_x.log", text)
    (s / "trace" / "loop.log").symlink_to(s / "trace" / "loop.log")
    (s / "session.json").write_text("[" * 100_000 + "]" * 100_000)
    fifo = root / "repro.fifo"
    os.mkfifo(fifo)
    events = [
        {"event": "minify", "summary": "evil" + EVIL, "repro": str(fifo), "reproduced": "0/3"},
        {"event": "minify", "summary": "zero", "repro": "/dev/zero", "reproduced": "0/3"},
        {"event": "bisect", "summary": f"{pwn}", "culprit": {"repro": str(s / "capture" / "graph_0.py")}},
    ]
    (s / "events.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n" + "[" * 50_000 + "\n")
    (s / "capture").mkdir()
    (s / "capture" / "graph_0.py").write_text(pwn + "\n")
    (s / "capture" / "values_0.pt").write_bytes(pickle.dumps(_Pwn(marker)))
    (s / "runs" / "01-evil" / "trace").mkdir(parents=True)
    (s / "runs" / "01-evil" / "session.json").write_text(json.dumps({"exit_code": EVIL}))
    (s / "runs" / "01-evil" / "trace" / "a.log").symlink_to("/dev/zero")
    return s


def test_report_reads_a_hostile_session_as_data(tmp_path):
    marker = tmp_path / "PWNED"
    s = _hostile_session(tmp_path, marker)
    out = tmp_path / "r.json"
    proc = fxlens("report", "--guards", "--json", out, s, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert "4 graph(s)" in proc.stdout and "\x1b" not in proc.stdout
    assert "loop.log: skipped (symlink loop)" in proc.stdout
    assert "events.jsonl: 1 unreadable event line(s) skipped" in proc.stdout
    assert json.loads(out.read_text())["source"]["kind"] == "session"


@pytest.mark.tui
def test_tui_reads_a_hostile_session_as_data(tmp_path):
    from fxlens.trace.session import Session
    from fxlens.tui.app import FxlensApp

    marker = tmp_path / "PWNED"
    s = _hostile_session(tmp_path, marker)
    app = FxlensApp(Session.open(s), export_dir=tmp_path / "exports", cursor_blink=False)

    async def drive():
        async with app.run_test(size=(160, 50)) as pilot:
            for _ in range(600):
                if app.ready:
                    break
                await pilot.pause(0.05)
            assert app.ready
            for key in ("1", "2", "3", "4", "5", "6", "7", "8", "9", "j", "j", "enter"):
                await pilot.press(key)
                await pilot.pause(0.2)
            assert app.is_running

    # a FIFO or /dev/zero read on the event loop would hang this forever
    asyncio.run(asyncio.wait_for(drive(), 120))
    assert not marker.exists()
