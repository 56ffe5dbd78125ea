"""The CLI never takes the script's own arguments: fxlens options come before SCRIPT (or -m MODULE),
everything after it is the script's (DESIGN.md's CLI contract, issue 13).

Each command runs for real on a script whose own flags are spelled like fxlens's (`--backend`,
`--out`, `--json`): the script must see them untouched, and fxlens must see only its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from fxlens.cli import _flags, build_parser, split_target

SCRIPT = textwrap.dedent(
    """
    import argparse, json, os, sys
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--backend")
    p.add_argument("--out")
    p.add_argument("--json")
    a = p.parse_args()
    with open(a.json, "a") as f:  # the script's own --json: a log of the argv it was given
        f.write(json.dumps(sys.argv[1:]) + "\\n")
    if os.environ.get("EXIT_BEFORE_COMPILE"):
        sys.exit(3)

    @torch.compile(backend="eager")
    def step(x):
        return torch.relu(x) + 1

    for n in range(3):
        step(torch.ones(4))
    """
)


def _fxlens(*args, cwd, timeout=600, env=None):
    env = {
        **os.environ,
        "FXLENS_SESSIONS_DIR": str(cwd / "sessions"),
        "FXLENS_REPRO_DIR": str(cwd / "repros"),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def _seen(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


MINE = ["--backend", "nccl", "--out", "results/", "--json", "metrics.json"]


def test_run_passes_every_argument_after_script_to_it(script, tmp_path):
    proc = _fxlens("run", "--json", "report.json", "--quiet", script, *MINE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _seen(tmp_path / "metrics.json") == [MINE]
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["graphs"]) == 1  # --backend nccl went to the script, not to torch.compile
    assert not (tmp_path / "results").exists()


def test_bisect_options_before_script_only(script, tmp_path):
    proc = _fxlens("bisect", "--json", "verdict.json", "--backend", "eager", script, *MINE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["backend"] == "eager" and verdict["first_failing_stage"] is None
    seen = _seen(tmp_path / "metrics.json")
    assert seen and all(argv == MINE for argv in seen)  # every child run got the script's own argv


def test_minify_options_before_script_only(script, tmp_path):
    # the script exits 3 before compiling (a whole minify is tests/minify's): minify refuses it,
    # and the script saw exactly its own arguments while --json/--out stayed fxlens's
    proc = _fxlens(
        "minify", "--json", "min.json", "--out", "repro.py", script, *MINE, cwd=tmp_path,
        env={"EXIT_BEFORE_COMPILE": "1"},
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "fails before compiling anything (exit status 3) (it printed no error)" in proc.stderr
    assert _seen(tmp_path / "metrics.json")[0] == MINE
    assert not (tmp_path / "repro.py").exists() and not (tmp_path / "results").exists()


def test_doctor_options_before_script_only(script, tmp_path):
    # --budget 0: the script's own calls only (interleaved sampling is not what is tested here)
    opts = ("--rounds", "1", "--budget", "0", "--json", "doc.json")
    proc = _fxlens("doctor", *opts, script, *MINE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "doc.json").read_text())
    assert [f["calls"] for f in doc["functions"]] == [3]
    assert {tuple(a) for a in _seen(tmp_path / "metrics.json")} == {tuple(MINE)}


def test_run_dash_m_module_with_relative_imports(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("def scale(x):\n    return x * 2\n")
    (pkg / "train.py").write_text("from .helper import scale\n" + SCRIPT.replace("torch.relu(x)", "scale(x)"))
    proc = _fxlens("run", "--json", "report.json", "--quiet", "-m", "mypkg.train", *MINE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _seen(tmp_path / "metrics.json") == [MINE]
    (graph,) = json.loads((tmp_path / "report.json").read_text())["graphs"]
    assert graph["file"].endswith("mypkg/train.py")


def test_dash_m_unknown_module_is_one_line_error(tmp_path):
    proc = _fxlens("run", "-m", "no_such_pkg.train", cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "no module named 'no_such_pkg.train'" in proc.stderr


@pytest.mark.parametrize(
    "tokens,expected",
    [
        (
            ["--backend", "x", "t.py", "--backend", "y"],
            (["--backend", "x"], "t.py", None, ["--backend", "y"]),
        ),
        (["--json=r.json", "t.py", "--", "--json", "m"], (["--json=r.json"], "t.py", None, ["--json", "m"])),
        (["--", "t.py", "--lr", "3"], ([], "t.py", None, ["--lr", "3"])),
        (["-m", "pkg.train", "--lr", "3"], ([], None, "pkg.train", ["--lr", "3"])),
        (["--quiet", "-mpkg.train", "--quiet"], (["--quiet"], None, "pkg.train", ["--quiet"])),
        (["t.py", "-m", "x"], ([], "t.py", None, ["-m", "x"])),
        (["--backend", "eager"], (["--backend", "eager"], None, None, [])),
    ],
)
def test_split_target(tokens, expected):
    _, subs = build_parser("run")
    assert split_target(tokens, _flags(subs["run"])) == expected


@pytest.mark.parametrize("command", ["run", "bisect", "minify", "doctor"])
def test_help_shows_the_form_and_an_example(command):
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", command, "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0
    assert f"usage: fxlens {command} [OPTIONS] (SCRIPT | -m MODULE) [ARGS...]" in proc.stdout
    assert f"example:\n  fxlens {command} " in proc.stdout
