"""The results view shows doctor's memory by cause: the tables of its text report, from the event."""

import json
from pathlib import Path

from fxlens.tui.view_results import _doctor

# peak_memory of a real `fxlens doctor --json` on tests/doctor/scripts/mem_storm.py
STORM = Path(__file__).parent / "data" / "doctor_memory_storm.json"


def test_results_view_shows_memory_by_cause():
    mem = json.loads(STORM.read_text())
    lines = _doctor({"functions": [], "findings": [], "peak_memory": mem})
    text = "\n".join(lines)
    assert "memory by cause" in text
    held = next(p for p in mem["functions"][0]["parts"] if p["cause"] == "held_by_compiled_code")
    row = next(ln for ln in lines if "held by the compiled code" in ln and "cache entries" in ln)
    assert f"{held['bytes'] / (1 << 20):.1f} MiB" in row and "mem_storm.py:14" in row
    # the run's parts, every one, as the JSON has them
    for part in mem["breakdown"]:
        assert any(f"{part['bytes'] / (1 << 20):.1f} MiB".lstrip("-") in ln for ln in lines)


def test_results_view_skips_memory_when_doctor_measured_none():
    lines = _doctor({"functions": [], "findings": [], "peak_memory": {"eager": 1, "compiled": 2}})
    assert "memory by cause" not in "\n".join(lines)
