"""`fxlens diff` when a side failed or compiled nothing (issue 34): said first, gated, and "captured
no graph -> compiles" read as the fix it is. Sessions are real `fxlens run`s of scripts/sides/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from schema_check import validate

from fxlens.diff.compare import compare
from fxlens.diff.render import clip_text, render_text

SIDES = Path(__file__).parent / "scripts" / "sides"


def _build(root: Path) -> None:
    procs = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fxlens.cli",
                "run",
                "--session",
                str(root / name),
                str(SIDES / f"{name}.py"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("no_graph", "compiles", "dies")
    }
    for name, p in procs.items():
        out, err = p.communicate(timeout=300)
        (root / f"{name}.rc").write_text(str(p.returncode))


@pytest.fixture(scope="module")
def sides(build_once) -> Path:
    return build_once("diff-sides", _build)


def test_failed_side_is_said_first_and_gates(sides, fxlens, tmp_path):
    # ground truth without fxlens: the script itself exits 1
    plain = subprocess.run([sys.executable, str(SIDES / "dies.py")], capture_output=True, text=True)
    assert plain.returncode == 1 and (sides / "dies.rc").read_text() == "1"
    out = tmp_path / "d.json"
    proc = fxlens("diff", "--json", out, sides / "compiles", sides / "dies")
    assert proc.returncode == 1, proc.stdout
    lines = proc.stdout.splitlines()
    first = next(ln for ln in lines[2:] if ln.strip())  # right after the A/B header
    assert first.startswith("B FAILED: its script exited with status 1 before compiling anything")
    assert lines[-1].startswith("verdict: B FAILED") and "no worse" not in proc.stdout
    diff = json.loads(out.read_text())
    validate("diff", diff)
    assert diff["worse"] and diff["failed"]["b"] and diff["failed"]["a"] is None
    assert diff["b"]["exit_code"] == 1
    # --allow-failed: still said first, counts judged
    allowed = fxlens("diff", "--allow-failed", sides / "compiles", sides / "dies")
    assert allowed.returncode == 0 and "B FAILED" in allowed.stdout.splitlines()[3]
    md = fxlens("diff", "--format", "markdown", sides / "compiles", sides / "dies")
    assert md.returncode == 1 and "**B FAILED: its script exited with status 1" in md.stdout


def test_nothing_compiled_to_compiled_is_better(sides, fxlens):
    # ground truth without fxlens: torch's own counters say A captured no graph, B one
    plain = {  # both at once: each is a torch import and a compile
        name: subprocess.Popen([sys.executable, str(SIDES / f"{name}.py")], stdout=subprocess.PIPE, text=True)
        for name in ("no_graph", "compiles")
    }
    got = {name: int(p.communicate(timeout=300)[0].split("unique_graphs:")[1]) for name, p in plain.items()}
    assert got == {"no_graph": 0, "compiles": 1}
    proc = fxlens("diff", sides / "no_graph", sides / "compiles")
    assert proc.returncode == 0, proc.stdout
    assert "WORSE" not in proc.stdout and "verdict: B is better than A: A captured no graph" in proc.stdout
    # the gone row is at A's own file and line (no_graph.py), not at B's name for it
    gone = next(ln for ln in proc.stdout.splitlines() if ln.startswith("- gone"))
    assert "no_graph.py:" in gone and "compiles.py" not in gone and "?:None" not in proc.stdout
    back = fxlens("diff", sides / "compiles", sides / "no_graph")  # the fix undone: worse
    assert back.returncode == 1 and "verdict: B is WORSE than A: B captured no graph" in back.stdout


def _report(causes=(), graphs=(), per_compile=()):
    return {
        "graphs": list(graphs),
        "graph_breaks": [],
        "recompiles": [],
        "recompile_causes": list(causes),
        "recompile_limit_hits": [],
        "compile_times": {"total_s": 1.0, "per_compile": list(per_compile)},
        "events": [],
        "source": {"script": "/x/train.py", "exit_code": 0},
    }


def test_changed_cause_shows_both_and_cuts_say_so():
    long = "input `x`, dim 0 took values " + ", ".join(str(n) for n in range(40))
    cause = {"function": "f", "file": "/x/train.py", "line": 3, "subject": "x", "count": 2, "message": long}
    graph = {"compile_id": "0/0", "rank": None, "function": "f", "file": "/x/train.py", "line": 3,
             "num_nodes": 1, "ops": []}  # fmt: skip
    diff = compare(_report([cause], [graph]), _report([{**cause, "message": "dim 1 changed"}], [graph]))
    (item,) = diff["recompile_causes"]
    assert item["status"] == "changed" and item["a"]["message"] == long
    row = next(ln for ln in render_text(diff).splitlines() if ln.startswith("~ changed"))
    assert "A: input `x`" in row and "-> B: dim 1 changed" in row
    cut = clip_text(long, 40)
    assert cut.endswith("...") and len(cut) <= 40 and long.startswith(cut[:-3])
    assert long[len(cut) - 3] in " ,"  # cut at a word boundary, not mid-number


def test_a_compile_without_graph_has_its_own_place():
    # a compile that captured nothing: placed at its frame (per_compile file/line), never `?:None`
    pc = {"compile_id": "0/0", "rank": None, "function": "f", "file": "/x/train.py", "line": 7,
          "total_s": 0.1, "guard_count": 0}  # fmt: skip
    diff = compare(_report(per_compile=[pc]), _report())
    text = render_text(diff, show_same=True)
    assert "train.py:7" in text and "?:None" not in text and ":None" not in text
    assert diff["failed"] == {
        "a": None,
        "b": "it compiled nothing: no torch.compile call, compile or graph was recorded",
    }


@pytest.mark.slow  # two 2-process gloo jobs (torchrun)
def test_the_ddp_fix_passes_the_gate(tmp_path, fxlens):
    # issue 34: torch.compile(DDP(m)) captured no graph; DDP(torch.compile(m)) compiles: "graphs +3 WORSE"
    scripts = Path(__file__).parents[1] / "doctor" / "scripts"
    for name in ("ddp_wrong_order", "ddp_right_order"):
        proc = subprocess.run(
            [sys.executable, "-m", "fxlens.cli", "run", "--quiet", "--nproc", "2", "--session", str(tmp_path / name),
             str(scripts / f"{name}.py")],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = fxlens("diff", tmp_path / "ddp_wrong_order", tmp_path / "ddp_right_order")
    assert proc.returncode == 0, proc.stdout
    assert "verdict: B is better than A: A captured no graph" in proc.stdout and "WORSE" not in proc.stdout
