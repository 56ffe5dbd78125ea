"""Runs forked from a warm process (`fxlens.bisect.forked_runs`): the script's exit status and output,
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
from fxlens.bisect.forked_runs import run_forked
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


def test_bisect_runs_fall_back_to_new_interpreters_when_the_warm_process_is_gone(tmp_path):
    """The warm server killed before a run: that run starts again in a new interpreter (a clean
    folder, no fork's leftovers), says so, and later runs do not try the server again."""
    from fxlens.bisect.cache import cache_env
    from fxlens.bisect.forked_runs import WarmServer
    from fxlens.bisect.runs import Runs

    script = tmp_path / "script.py"
    script.write_text("import sys\nprint('ran', sys.argv[1:])\nsys.exit(3)\n")
    lines = []
    runs = Runs(str(script), ["a"], tmp_path / "bisect", "crash", timeout=120, echo=lines.append)
    runs.warm = WarmServer(cache_env(tmp_path / "bisect"))
    runs.warm.proc.kill()
    runs.warm.proc.wait()
    first = runs.run("first", stage="eager", wrap=False)
    assert runs.warm is None and any("warm process is gone" in ln for ln in lines)
    second = runs.run("second", stage="eager", wrap=False)
    for out in (first, second):
        assert out.exit_code == 3 and "ran ['a']" in (out.session_dir / "output.txt").read_text()
        assert "forked" not in json.loads((out.session_dir / "session.json").read_text())
