"""Scripts run by hand (ground truth) in children forked from one interpreter that imported torch:
one torch import for several runs instead of one a run (a unique module name, shared by folders)."""

import json
import os
import subprocess
import sys
from pathlib import Path

# one interpreter imports torch (TORCH_LOGS is read then), then forks a child per run that runs the
# script as `python SCRIPT ARG` would, after its prelude (a config switch set as code), its stderr in
# a file: each child compiles from nothing, and torch is imported once instead of once a run
_FORKED = """
import json, os, runpy, sys
import torch
script, out, runs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
got = []
for arg, prelude in runs:
    err = f"{out}.{len(got)}"
    pid = os.fork()
    if pid == 0:
        fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
        sys.argv = [script, arg]
        code = 0
        try:
            exec(prelude)
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    got.append([os.waitstatus_to_exitcode(status), open(err).read()])
json.dump(got, open(out, "w"))
"""


def forked_runs(script: Path, runs: list[tuple[str, str]], tmp_path: Path, env: dict) -> list[tuple]:
    """(exit code, stderr) of `python SCRIPT ARG` for each (ARG, prelude) in RUNS, each a child forked
    from one interpreter that imported torch with ENV (checked side by side against fresh interpreters:
    the same counts)."""
    out = tmp_path / "forked.json"
    cmd = [sys.executable, "-c", _FORKED, str(script), str(out), json.dumps(runs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [tuple(r) for r in json.loads(out.read_text())]
