"""fxlens itself killed by SIGKILL (no handler can run): what it started still ends.

Children run in process groups of their own (so Ctrl-C and --timeout can end them whole), which
would orphan them when fxlens dies unannounced; PR_SET_PDEATHSIG has the kernel tell them.
"""

import os
import signal
import uuid

import pytest
from proc_helpers import marked, no_orphans, start, wait_for

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "hang_forks.py")


# bisect: fxlens, its warm server, the run forked from it, the script's own child
@pytest.mark.parametrize("command,least", [(("run", "--session", "{tmp}/s"), 3), (("bisect",), 4)])
def test_killed_by_sigkill_leaves_no_orphans(tmp_path, command, least):
    mark, marker = uuid.uuid4().hex, tmp_path / "marker"
    args = [a.format(tmp=tmp_path) for a in command]
    env = {"FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")}
    proc = start(*args, SCRIPT, marker, mark=mark, env=env)
    try:
        wait_for(marker.exists, 240, "the script's marker file")
        assert len(marked(mark)) >= least  # fxlens, the runner, the script's own child
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    no_orphans(mark)
