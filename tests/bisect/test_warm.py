"""Runs forked from a warm process (`fxlens.bisect.warm`): the script's exit status and output,
nothing left running after it (what the script forked included), and a hang ended at the timeout.

Each test starts one process that imports torch and forks the runs, as the CompilerBisector
driver does.
"""

import json
import os
import subprocess
import sys
import textwrap
import uuid

import pytest

pytestmark = pytest.mark.slow  # importing torch in a new process, then a Dynamo compile

DRIVER = """
import json, sys
from pathlib import Path
import torch  # the warm process: imported, nothing compiled
from fxlens.bisect.warm import run_forked
spec = json.loads(sys.argv[1])
res = run_forked(spec["script"], spec["args"], session_dir=Path(spec["sdir"]), env=spec["env"],
                 timeout=spec["timeout"], output=Path(spec["sdir"]) / "output.txt")
print(json.dumps({"exit_code": res.exit_code}))
"""

# starts a grandchild that would outlive the run, then compiles and exits with its own status
SCRIPT = """
import os, subprocess, sys, time
import torch
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{marker}"])
print("env", os.environ.get("MY_SWITCH"))
f = torch.compile(lambda x: torch.sin(x) + 1, backend="eager")
print("value", float(f(torch.zeros(3)).sum()))
if "--hang" in sys.argv:
    time.sleep(600)
sys.exit(int(sys.argv[1]))
"""


def _left_behind(marker: str) -> list[str]:
    """Command lines of live processes that carry MARKER (zombies excluded)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            found.append(cmd)
    return found


def _fork_run(tmp_path, args, timeout=120):
    marker = f"fxlens-warm-test-{uuid.uuid4().hex}"
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT.format(marker=marker)))
    sdir = tmp_path / "run"
    spec = {"script": str(script), "args": args, "sdir": str(sdir), "env": {"MY_SWITCH": "on"}}
    spec["timeout"] = timeout
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(spec)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    code = json.loads(proc.stdout.strip().splitlines()[-1])["exit_code"]
    return code, (sdir / "output.txt").read_text(), marker


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_forked_run_has_the_scripts_status_and_output_and_leaves_nothing(tmp_path):
    code, output, marker = _fork_run(tmp_path, ["5"])
    assert code == 5
    # the step's own environment reached the script; the compile ran in the fork
    assert "env on" in output and "value 3.0" in output
    assert _left_behind(marker) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_forked_run_past_its_timeout_is_ended_with_its_group(tmp_path):
    code, _, marker = _fork_run(tmp_path, ["0", "--hang"], timeout=20)
    assert code == 124
    assert _left_behind(marker) == []
