"""The Memory view (m): doctor's memory by cause per compiled function, read from its result.

The session under tests/tui/data/doctor_memory_session is a real `fxlens doctor --budget 1` of
tests/tui/memory_script.py (a training step whose compiled partition saves more for backward, and
a recompile storm holding a 4 MiB constant per shape); the slow test makes a fresh one. Every
number on screen is checked against the session's JSON, read here on its own (not through the
view's row builder), and the named lines against the script's text.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import make_app, press, settle, wait_loaded

pytestmark = pytest.mark.tui
HERE = Path(__file__).parent
RECORDED = HERE / "data" / "doctor_memory_session"
SCRIPT = HERE / "memory_script.py"
MiB = 1 << 20


def _mib(n: int, signed: bool = False) -> str:
    return f"{n / MiB:+.1f}" if signed and n else f"{n / MiB:.1f}"


def _doctor_memory(session: Path) -> dict:
    events = [json.loads(ln) for ln in (session / "events.jsonl").read_text().splitlines() if ln.strip()]
    return [e for e in events if e.get("event") == "doctor"][-1]["peak_memory"]


def _line_of(text: str) -> int:
    lines = SCRIPT.read_text().split("\n")
    return next(i for i, ln in enumerate(lines, 1) if text in ln and not ln.lstrip().startswith("#"))


def _expected_rows(mem: dict) -> dict[str, list[str]]:
    """key -> (part, eager, compiled, diff) cells, from the JSON by the view's documented rules."""
    rss = mem["rss"]
    out = {"run": ["whole run (RSS)", _mib(rss["eager"]), _mib(rss["compiled"])]}
    out["run"].append(_mib(rss["compiled"] - rss["eager"], True))
    for p in mem["breakdown"]:
        out[f"run:{p['cause']}"] = [None, "-", "-", _mib(p["bytes"], True)]
    for i, f in enumerate(mem["functions"]):
        compiled = f["compiled"]["peak"] + f["compiled"]["held"]
        out[f"f{i}"] = [f["function"], _mib(f["eager"]["peak"]), _mib(compiled), _mib(f["difference"], True)]
        by = {p["cause"]: p for p in f["parts"]}
        saved = by["saved_activations"]
        out[f"f{i}:saved_activations"] = [
            None,
            _mib(saved["eager"]),
            _mib(saved["compiled"]),
            _mib(saved["bytes"], True),
        ]
        held = by["held_by_compiled_code"]["bytes"]
        out[f"f{i}:held_by_compiled_code"] = [None, _mib(0), _mib(held), _mib(held, True)]
        rest_e = f["eager"]["peak"] - saved["eager"]
        rest_c = f["compiled"]["peak"] - saved["compiled"]
        out[f"f{i}:remainder"] = [None, _mib(rest_e), _mib(rest_c), _mib(by["remainder"]["bytes"], True)]
    return out


async def _check_view(session: Path, tmp_path: Path) -> None:
    mem = _doctor_memory(session)
    # the parts add up to what they split, the remainder included (doctor's own invariant)
    assert sum(p["bytes"] for p in mem["breakdown"]) == mem["rss"]["compiled"] - mem["rss"]["eager"]
    for f in mem["functions"]:
        assert sum(p["bytes"] for p in f["parts"]) == f["difference"]
    app = make_app(session, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        assert not app.screen.query_one("#tabs Tab#memory").has_class("-hidden")  # doctor measured it
        await press(pilot, "m")
        assert app.current_view == "memory"
        view = app.view()
        table = view.table
        rows = dict(zip([r[0] for r in view.shown], table._rows_plain(), strict=True))
        expected = _expected_rows(mem)
        assert list(rows) == list(expected)  # the run, its parts, then each function and its parts
        for key, cells in expected.items():
            got = rows[key]
            assert got[1:] == cells[1:], key
            if cells[0] is not None:
                assert got[0] == cells[0]
        names = [f["function"] for f in mem["functions"]]
        assert names == ["Net.forward", "lookup"]

        # the saved row's detail: exact bytes and the largest saved tensors with op and line
        await press(pilot, "v", "g", *["j"] * (list(rows).index("f0:saved_activations")))
        assert view.params["key"] == "f0:saved_activations"
        detail = view.query_one("#memory-detail").plain
        saved = mem["functions"][0]["parts"][0]
        assert f"eager     {saved['eager']:,} B" in detail and f"compiled  {saved['compiled']:,} B" in detail
        top = saved["compiled_top"][0]
        line = _line_of("F.normalize(h")
        assert top["op"] == "mul" and top["line"] == line
        assert f"{top['bytes']:,} B" in detail and f"memory_script.py:{line}" in detail
        assert "activation_memory_budget" in detail  # doctor's fix for the cause

        # the held row of the storm: one copy per cache entry, the constant named with its line
        await press(pilot, "g", *["j"] * (list(rows).index("f1:held_by_compiled_code")))
        detail = view.query_one("#memory-detail").plain
        held = mem["functions"][1]["parts"][1]
        assert held["cache_entries"] == 3 and held["bytes"] == 3 * 4 * MiB  # 3 shapes, 4 MiB each
        assert f"{held['bytes']:,} B" in detail and "3 of 3 cache entries" in detail
        assert "`table_0`" in detail and f"memory_script.py:{_line_of('x @ table()')}" in detail

        # the whole run: its parts and their sum, which is the peak RSS difference
        await press(pilot, "g")
        detail = view.query_one("#memory-detail").plain
        assert f"sum of the parts{'':<32} {mem['rss']['compiled'] - mem['rss']['eager']:+,} B" in detail
        assert "remainder" in detail


async def test_memory_view_numbers_equal_the_recorded_session(tmp_path):
    await _check_view(RECORDED, tmp_path)


async def test_memory_view_without_doctor_says_how_to_get_one(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)  # bisect and minify events, no doctor
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(app, pilot)
        tab = app.screen.query_one("#tabs Tab#memory")
        assert tab.has_class("-hidden")  # nothing to show: no tab
        await press(pilot, "m")  # the key still goes there, and says how to get a breakdown
        assert not tab.has_class("-hidden")
        view = app.view()
        assert view.table.row_count == 0
        assert "fxlens doctor SCRIPT" in view.query_one("#memory-detail").plain


def test_snapshot_memory_view_80x24(tmp_path, snap_compare, monkeypatch):
    # Net.forward's saved activations selected: the four columns stay, the detail names the op and line
    monkeypatch.chdir(RECORDED)

    async def run_before(pilot) -> None:
        await wait_loaded(pilot.app, pilot)
        await press(pilot, "m", "v", "g", *["j"] * 7)
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(RECORDED, tmp_path), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.slow
async def test_memory_view_on_a_fresh_doctor_session(tmp_path):
    """A real doctor run on the script, now: the view shows what its session holds."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(SCRIPT, work / SCRIPT.name)
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")}
    env.pop("FXLENS_BACKEND_OVERRIDE", None)
    done = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "doctor", "--budget", "1", SCRIPT.name],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (session,) = (tmp_path / "sessions").iterdir()
    await _check_view(session, tmp_path)
