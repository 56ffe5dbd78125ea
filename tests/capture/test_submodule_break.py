"""A graph break inside an inlined submodule says how many graphs it costs and why. Ground truth:
the graphs torch compiled for the script run by hand (TORCH_LOGS=graph_code, one block per graph)."""

import os
import subprocess
import sys

from capture_helpers import SCRIPTS


def test_break_in_submodule_names_its_graphs(run_report):
    proc, report = run_report("submodule_break")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (b,) = report["graph_breaks"]
    by_hand = subprocess.run(
        [sys.executable, str(SCRIPTS / "submodule_break.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_LOGS": "graph_code"},
        timeout=300,
    ).stderr.count("===== __compiled_fn")
    split = b["split"]
    assert split["graphs"] == by_hand == len(report["graphs"]) == 4
    assert split["call_line"] == 28  # `h = self.block(h)` in Model.forward
    assert "self.block(h)" in split["message"] and "4 graphs" in proc.stdout


def test_a_break_in_the_compiled_frame_itself_has_no_split(run_report):
    _, report = run_report("argument_paths")  # the break is in the compiled forward, not a submodule
    assert all(b["split"] is None for b in report["graph_breaks"])
