"""Sessions robust to the script (issue 20.6): real `fxlens run` processes on real scripts."""

import json
from pathlib import Path

from capture_helpers import fxlens

REPRO = Path(__file__).resolve().parents[2] / "repro_cases"


def test_script_that_changes_directory_still_writes_into_the_session(tmp_path):
    # the default session path is relative (.fxlens/sessions/...): the child must get it absolute
    out = tmp_path / "r.json"
    proc = fxlens(
        "run", "--json", out, REPRO / "fixed_run_chdir_before_compile.py",
        cwd=tmp_path, env={"FXLENS_SESSIONS_DIR": ".fxlens/sessions"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert [g["function"] for g in report["graphs"]] == ["after_chdir"]
    assert "No graphs were compiled" not in proc.stdout
    (session,) = (tmp_path / ".fxlens" / "sessions").iterdir()
    assert list((session / "trace").glob("*.log"))
    # and the runner's own events (compile calls) landed there too
    assert '"compile_call"' in (session / "events.jsonl").read_text()
