"""`fxlens minify` end to end: real torch.compile failures, real worker subprocesses, and the
reproducer re-run in a fresh interpreter with the same signature."""

import ast
import json
import subprocess
import sys

import pytest

from fxlens.errors import FxlensError
from fxlens.minify import minify_script
from fxlens.session import Session

from .conftest import SCRIPTS, run_fresh

MLP = str(SCRIPTS / "mlp.py")


def _call_nodes(repro_text: str) -> int:
    """Call nodes in the reproducer's forward (lines that assign a call)."""
    tree = ast.parse(repro_text)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Repro")
    fwd = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    return sum(1 for st in fwd.body if isinstance(st, ast.Assign) and not isinstance(st.value, ast.Constant))


@pytest.mark.parametrize(
    "backend, signature",
    [
        ("relu_compile_error_TESTING_ONLY", "ReluCompileError"),
        ("relu_runtime_error_TESTING_ONLY", "AssertionError: ReluRuntimeError"),
    ],
)
def test_single_op_crash_shrinks_to_a_reproducer_that_fails_the_same_way(minify_env, backend, signature):
    r = minify_script(MLP, [backend, "6"], check="auto", progress=False)
    assert r["check"] == "crash"
    assert r["signature"] == signature
    assert r["original_nodes"] >= 50
    assert 1 <= r["final_nodes"] <= 3
    assert r["reproduced"] == "3/3" and not r["flaky"]
    assert r["final_input_bytes"] * 100 <= r["original_input_bytes"]
    text = open(r["repro"]).read()
    assert _call_nodes(text) == r["final_nodes"]
    assert f"# backend: {backend}" in text
    assert f"{r['original_nodes']} original -> {r['final_nodes']} final" in text
    assert "import fxlens" not in text  # standalone: torch only
    code, sig = run_fresh(r["repro"])
    assert (code, sig) == (1, signature)
    # the session holds the result (what the TUI shows)
    events = [e for e in Session.open(r["session"]).events if e["event"] == "minify"]
    assert events and events[-1]["repro"] == r["repro"] and events[-1]["summary"]


def test_accuracy_failure_is_found_by_auto_check(minify_env):
    r = minify_script(MLP, ["relu_accuracy_error_TESTING_ONLY", "6"], progress=False)
    assert r["check"] == "accuracy"
    assert r["signature"].startswith("AccuracyError")
    assert r["final_nodes"] <= 3
    code, sig = run_fresh(r["repro"])
    assert (code, sig) == (1, r["signature"])


def test_flaky_backend_defined_in_the_script_is_reported_flaky(minify_env, tmp_path):
    counter = tmp_path / "counter"
    env = {"FLAKY_COUNTER": str(counter)}
    import os

    os.environ.update(env)
    try:
        r = minify_script(str(SCRIPTS / "flaky.py"), [], progress=False)
    finally:
        del os.environ["FLAKY_COUNTER"]
    assert r["backend"].endswith("flaky.py:flaky_backend")  # the script's own callable, by default
    assert r["signature"] == "RuntimeError: flaky relu lowering failed"
    assert r["flaky"] and r["reproduced"] == "2/3"
    assert "FLAKY" in r["summary"]


def test_script_that_does_not_fail_is_refused(minify_env):
    with pytest.raises(FxlensError, match="does not fail"):
        minify_script(MLP, ["relu_compile_error_TESTING_ONLY", "2", "--no-relu"], progress=False)
    assert not minify_env.exists() or not list(minify_env.iterdir())


def test_script_that_fails_in_eager_is_refused(minify_env):
    with pytest.raises(FxlensError, match="fails already in eager"):
        minify_script(str(SCRIPTS / "eager_fails.py"), [], progress=False)


def test_cli_json_contract_and_never_overwrites(minify_env, tmp_path):
    out = tmp_path / "mine.py"
    out.write_text("# someone else's file\n")
    cmd = [
        sys.executable,
        "-m",
        "fxlens.cli",
        "minify",
        MLP,
        "relu_compile_error_TESTING_ONLY",
        "3",
        "--out",
        str(out),
        "--json",
        str(tmp_path / "r.json"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert {"repro", "check", "signature", "original_nodes", "final_nodes", "queries", "seconds"} <= set(r)
    assert out.read_text() == "# someone else's file\n"
    assert r["repro"] == str(tmp_path / "mine_2.py")
    assert "fxlens minify:" in proc.stdout and "queries" in proc.stderr  # summary, progress bar


def test_bad_backend_is_one_line_error(minify_env):
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "minify", MLP, "x", "--backend", "nope"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "unknown backend 'nope'" in proc.stderr and "Traceback" not in proc.stderr
