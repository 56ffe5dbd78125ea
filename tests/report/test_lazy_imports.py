"""What `fxlens report` loads: the fix table (fxlens.report.fixes) only when the report names a fix.

Each report runs in a fresh interpreter, which then says whether the module was imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fxlens.report.linetimes import compile_lines
from fxlens.trace.session import Session

DATA = Path(__file__).parents[1] / "data"
PROBE = (
    "import sys\n"
    "from fxlens.cli import main\n"
    "rc = main(['report', sys.argv[1]])\n"
    "print('PROBE', rc, 'fxlens.report.fixes' in sys.modules, file=sys.stderr)\n"
)


def _loads_fix_table(log: Path) -> bool:
    res = subprocess.run([sys.executable, "-c", PROBE, str(log)], capture_output=True, text=True, timeout=300)
    probe = [ln.split() for ln in res.stderr.splitlines() if ln.startswith("PROBE ")]
    assert probe and probe[-1][1] == "0", res.stderr[-2000:]
    return probe[-1][2] == "True"


def test_a_report_without_line_times_loads_no_fix_table():
    # two graph breaks in the user's code, no recompile, no line times measured: no fix is named
    log = DATA / "tlparse" / "comp_metrics.log"
    assert compile_lines(Session.open(log))["available"] is False
    assert not _loads_fix_table(log)
    # a trace whose recompiles have root causes names their fixes: the table is read, and seen
    assert _loads_fix_table(DATA / "traces" / "2.13.0" / "dedicated_log_torch_trace.log")
