"""doctor's memory by cause in the report's HTML and Markdown (fxlens.report.memoryblocks).

The fast test renders a doctor result of the shape `fxlens doctor --json` writes; the slow one runs
doctor on a planted script (its compiled graph saves more for backward than eager) and checks that
every part of doctor's own JSON is in `fxlens report --format html` of the same session.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxlens.report.doctor_result import DoctorResult
from fxlens.report.document import to_html, to_markdown
from fxlens.report.markup import PathShortener
from fxlens.report.memorytext import mib

SCRIPT = Path(__file__).parents[1] / "doctor" / "scripts" / "mem_saved.py"


def _blocks(mem: dict | None) -> list:
    events = [{"event": "doctor", "peak_memory": mem}] if mem else []
    found = DoctorResult.from_events(events)
    return found.blocks(PathShortener("/work/x/train.py")) if found else []


MEMORY = {
    "kind": "rss",
    "eager": 400 << 20,
    "compiled": 430 << 20,
    "breakdown": [
        {"cause": "compiler", "bytes": 40 << 20},
        {"cause": "held_by_compiled_code", "bytes": 0},
        {"cause": "remainder", "bytes": -10 << 20},
    ],
    "functions": [
        {
            "function": "Net.forward",
            "backward": True,
            "eager": {"peak": 10 << 20},
            "compiled": {"peak": 8 << 20, "held": 1 << 20},
            "difference": -1 << 20,
            "parts": [
                {
                    "cause": "saved_activations",
                    "bytes": 2 << 20,
                    "eager": 2 << 20,
                    "compiled": 4 << 20,
                    "compiled_top": [
                        {"shape": [2048, 256], "op": "mul<x>", "file": "/work/x/train.py", "line": 16}
                    ],
                },
                {
                    "cause": "held_by_compiled_code",
                    "bytes": 1 << 20,
                    "cache_entries": 2,
                    "entries_holding": 1,
                    "largest": [{"name": "_frozen_param0", "shape": [512, 512], "file": None, "line": None}],
                },
                {"cause": "remainder", "bytes": -4 << 20, "what": "temporaries of either side"},
            ],
        }
    ],
}


def test_html_and_markdown_show_each_part_with_its_bytes():
    html = to_html(_blocks(MEMORY), "t")
    assert "<h2>Memory by cause (fxlens doctor)</h2>" in html
    assert "Compiled - eager = 30.0 MiB" in html
    for part, n in (("while compiling (the compiler&#x27;s own)", "40.0 MiB"), ("remainder", "-10.0 MiB")):
        assert f"<td>{part}</td><td>{n}</td>" in html
    assert "<h3>Net.forward: tensor peak per call (forward and backward)</h3>" in html
    # the op escaped, the location relative to the script's folder, each as code
    assert "largest <code>[2048, 256]</code> <code>mul&lt;x&gt;</code> at <code>train.py:16</code>" in html
    assert "1 of 2 cache entries; largest <code>_frozen_param0</code> <code>[512, 512]</code>" in html
    md = to_markdown(_blocks(MEMORY))
    assert (
        "## Memory by cause (fxlens doctor)" in md
        and "| remainder | -4.0 MiB | temporaries of either side |" in md
    )


def test_no_doctor_run_no_memory_section():
    assert _blocks(None) == [] and _blocks({"kind": "rss", "eager": 1, "compiled": 2}) == []


@pytest.mark.slow  # doctor runs the script eager and compiled (~1 min here)
def test_a_real_doctor_session_in_html(tmp_path):
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "s")}
    js = tmp_path / "d.json"
    cmd = [sys.executable, "-m", "fxlens.cli", "doctor", "--budget", "1", "--json", str(js), str(SCRIPT)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(js.read_text())
    page = tmp_path / "r.html"
    cmd = [
        sys.executable,
        "-m",
        "fxlens.cli",
        "report",
        result["session"],
        "--format",
        "html",
        "--out",
        str(page),
    ]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    html = page.read_text()
    mem = result["peak_memory"]
    for part in mem["breakdown"]:
        assert f"<td>{mib(part['bytes'])}</td>" in html
    f = mem["functions"][0]
    saved = next(p for p in f["parts"] if p["cause"] == "saved_activations")
    assert f"{mib(saved['eager'])} eager -&gt; {mib(saved['compiled'])} compiled" in html
    assert "at <code>mem_saved.py:16</code>" in html  # the line that saves the most, from doctor's JSON
