"""`fxlens bisect` end to end on a three-graph script, with torch's *_TESTING_ONLY faults.

multi.py compiles `embed` (graph 0/0), `block` up to a graph break (1/0) and block's resume
function (2/0), where torch.relu is: the culprit graph of every relu fault.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from bisect_helpers import MULTI, SCRIPTS, def_line

from fxlens.bisect.runs import OUTPUT_FILE


def _stage_rows(verdict):
    return {s["stage"]: s["ok"] for s in verdict["stages"]}


def _events(verdict):
    path = Path(verdict["session"]) / "events.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


@pytest.mark.parametrize(
    "backend,kind",
    [
        ("relu_compile_error_TESTING_ONLY", "crash"),
        pytest.param("relu_runtime_error_TESTING_ONLY", "crash", marks=pytest.mark.slow),
        pytest.param("relu_accuracy_error_TESTING_ONLY", "accuracy", marks=pytest.mark.slow),
    ],
)
def test_torch_testing_backends_name_stage_and_graph(bisect, backend, kind):
    # the backend comes from the script's own torch.compile call (no --backend)
    proc, v = bisect(MULTI, backend)
    assert proc.returncode == 0, proc.stderr
    assert v["first_failing_stage"] == backend
    assert v["failure"]["kind"] == kind
    assert _stage_rows(v) == {"eager": True, "aot_eager": True, backend: False}
    c = v["culprit"]
    assert (c["compile_id"], c["function"], c["line"]) == ("2/0", "block", def_line("block"))
    assert Path(c["file"]).name == "multi.py"
    assert c["kernel"] is None and c["ops"] is None
    # top run, 2 ladder runs, 1 graph run confirming the failing run's own guess
    assert v["runs"] == 4 == len(list((Path(v["session"]) / "runs").iterdir()))
    assert f"runs     {v['runs']}" in proc.stdout
    assert "next: fxlens minify" in proc.stdout and f"--backend {backend}" in proc.stdout
    assert "each run forked from a process that imported torch once" in proc.stdout.splitlines()[0]
    (ev,) = [e for e in _events(v) if e["event"] == "bisect"]
    assert ev["culprit"] == c and ev["summary"] == v["summary"] and ev["stages"] == v["stages"]
    # forked runs draw like new interpreters: Python's and numpy's numbers differ run to run,
    # torch's generator starts at its default seed
    draws = [
        next(ln.split()[1:] for ln in log.read_text().splitlines() if ln.startswith("draws "))
        for log in (Path(v["session"]) / "runs").glob(f"*/{OUTPUT_FILE}")
    ]
    assert len(draws) == 4
    assert len({d[0] for d in draws}) == 4 and len({d[1] for d in draws}) == 4
    assert {float(d[2]) for d in draws} == {float(torch.rand(1, generator=torch.Generator()))}


def test_old_optimize_api_is_bisected_like_torch_compile(bisect):
    # torch._dynamo.optimize(backend)(model), as bug reports for torch 2.0 wrote it: bisect said
    # "exited with status 1 before compiling anything" (it patched torch.compile only)
    script = SCRIPTS / "old_api.py"
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 1 and "ReluCompileError" in plain.stderr  # ground truth
    proc, v = bisect(script)
    assert proc.returncode == 0, proc.stderr
    backend = "relu_compile_error_TESTING_ONLY"
    assert v["backend"] == backend and v["first_failing_stage"] == backend
    assert _stage_rows(v) == {"eager": True, "aot_eager": True, backend: False}
    c = v["culprit"]
    assert (c["compile_id"], c["function"], c["line"]) == ("1/0", "forward", def_line("forward", script))
    asked = [e for e in _events(v) if e["event"] == "compile_call"]
    assert asked == [] or {e["api"] for e in asked} == {"torch._dynamo.optimize"}


@pytest.mark.slow
def test_accuracy_with_training_checks_gradients(bisect):
    proc, v = bisect(MULTI, "relu_accuracy_error_TESTING_ONLY", "--train", opts=("--check", "accuracy"))
    assert proc.returncode == 0, proc.stderr
    assert v["check"] == "accuracy" and v["first_failing_stage"] == "relu_accuracy_error_TESTING_ONLY"
    assert v["culprit"]["compile_id"] == "2/0"
    # the culprit run's records hold output and gradient divergences against fp64
    run_dirs = sorted((Path(v["session"]) / "runs").iterdir())
    checks = [
        json.loads(ln)
        for ln in (run_dirs[0] / "events.jsonl").read_text().splitlines()
        if '"phase": "check"' in ln
    ]
    bad = [c for c in checks if not c["ok"]]
    assert [c["compile_id"] for c in bad] == ["2/0"]
    whats = {d["what"] for d in bad[0]["divergences"]}
    assert "output 0" in whats and any(w.startswith("grad of input") for w in whats)
    assert all(c["ok"] for c in checks if c["compile_id"] != "2/0")


def test_nothing_fails_in_one_run(bisect):
    proc, v = bisect(MULTI, "aot_eager", "--train")
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] == "nothing_fails" and v["first_failing_stage"] is None and v["culprit"] is None
    assert v["runs"] == 1
    assert "nothing fails with aot_eager" in proc.stdout


def test_script_failing_without_compile_is_not_blamed_on_the_compiler(bisect):
    proc, v = bisect(MULTI, "relu_compile_error_TESTING_ONLY", "--fail-eager")
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] == "script_fails" and v["first_failing_stage"] is None
    assert "not a compiler problem" in proc.stdout
    assert v["runs"] == 3  # as asked, eager, and once with Dynamo disabled
    # TORCHDYNAMO_DISABLE is read at each torch.compile call: that run forks too
    runs = sorted((Path(v["session"]) / "runs").iterdir())
    assert [json.loads((r / "session.json").read_text()).get("forked") for r in runs] == [True] * 3


@pytest.mark.slow
def test_dynamo_failure_is_eager_fails(bisect):
    proc, v = bisect(MULTI, "aot_eager", "--recompile-error")
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] == "eager_fails" and v["first_failing_stage"] == "eager"
    assert "Dynamo" in v["summary"]


def test_bad_input_is_one_line(cli_in_process, tmp_path, monkeypatch):
    # refusals, through the CLI's `main` in this process (a traceback escaping it fails the test):
    # a new interpreter would import torch again for each one-line answer
    monkeypatch.setenv("FXLENS_SESSIONS_DIR", str(tmp_path / "sessions"))
    out = tmp_path / "verdict.json"

    def bisect(script, opts=()):
        return cli_in_process("bisect", "--json", out, *opts, script)

    rc, stdout, err = bisect(tmp_path / "missing.py")
    assert rc != 0 and not out.exists()
    assert err.strip().count("\n") == 0 and "no such script" in err
    rc, stdout, err = bisect(MULTI, opts=("--backend", "no_such_backend"))
    assert rc != 0 and "unknown backend 'no_such_backend'" in err
    assert "Traceback" not in err
    assert "run  1" not in stdout  # refused before any run (said 'run 1 ... ok' first)
    rc, stdout, err = bisect(MULTI, opts=("--backend", f"{tmp_path / 'missing.py'}:compile_fn"))
    assert rc != 0 and "no such file" in err and stdout == "" and not out.exists()


def test_script_without_torch_compile(bisect, tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("print('hello')\n")
    proc, v = bisect(plain)
    assert proc.returncode != 0 and "never called torch.compile" in proc.stderr
    assert SCRIPTS.is_dir()


@pytest.mark.slow
def test_flaky_failure_is_reported_as_flaky(bisect, tmp_path):
    marker = tmp_path / "failed-once"
    proc, v = bisect(MULTI, "relu_compile_error_TESTING_ONLY", "--flaky", marker)
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    assert v["outcome"] == "flaky" and v["culprit"] is None
    assert "flaky" in proc.stdout and "re-run" in proc.stdout


@pytest.mark.slow  # a callable backend; test_torch_testing_backends covers the CLI ladder by default
def test_backend_defined_in_the_script(bisect):
    script = SCRIPTS / "own_backend.py"
    proc, v = bisect(script)
    assert proc.returncode == 0, proc.stderr
    assert v["backend"] == f"{script}:my_backend"
    assert v["first_failing_stage"] == v["backend"]
    assert [s["stage"] for s in v["stages"]] == ["eager", "aot_eager", v["backend"]]
    c = v["culprit"]
    assert (c["compile_id"], c["function"]) == ("1/0", "second")
    assert "cannot compile tanh" in v["failure"]["error"]


@pytest.mark.slow  # a second compile-error ladder
def test_compile_error_swallowed_by_dynamo_still_counts(bisect):
    proc, v = bisect(SCRIPTS / "suppressed.py", opts=("--check", "crash"))
    assert proc.returncode == 0, proc.stderr
    assert v["first_failing_stage"] == "relu_compile_error_TESTING_ONLY"
    assert v["culprit"]["compile_id"] == "0/0" and v["culprit"]["function"] == "head"
    assert v["runs"] == 3  # one graph: no graph search needed


def test_runs_fork_from_a_warm_process_unless_the_script_sets_environment(bisect):
    """A script that sets a switch torch reads at import gets new interpreters (ground truth: plain
    python runs it without compiling); others fork from a process that imported torch once."""
    script = SCRIPTS / "env_disables_dynamo.py"
    plain = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and plain.stdout.strip() == "8.0", plain.stderr
    proc, v = bisect(script)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "each run a new interpreter: " in first
    assert "scripts/compile_settings.py sets environment variables torch may read at import" in first
    assert v["outcome"] == "nothing_fails" and v["runs"] == 1


@pytest.mark.parametrize(
    "source,sets",
    [
        ('os.environ["TORCHINDUCTOR_FREEZING"] = "1"', True),
        ("os.environ['A']='1'", True),
        ("os.environ.update(A='1')", True),
        ('os.environ.setdefault("A", "1")', True),
        ('os.putenv("A", "1")', True),
        ('rank = int(os.environ["RANK"])', False),
        ('if os.environ.get("A") == "1": pass', False),
        ('ok = os.environ["A"] == "1"', False),
    ],
)
def test_which_scripts_set_environment(tmp_path, source, sets):
    from fxlens.bisect.script_env import sets_environment

    script = tmp_path / "s.py"
    script.write_text(f"import os\n{source}\n")
    assert sets_environment(str(script)) == (str(script) if sets else None)


def test_environment_set_in_a_local_module_the_script_imports(tmp_path):
    from fxlens.bisect.script_env import sets_environment

    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("from .. import helper\n")
    (tmp_path / "pkg" / "helper.py").write_text("from .setup_env import go\nimport pkg.sub\n")  # a cycle
    (tmp_path / "pkg" / "setup_env.py").write_text("import os\ndef go(): os.environ['A'] = '1'\n")
    (tmp_path / "quiet.py").write_text("import os, json\nrank = os.environ.get('RANK')\n")
    script = tmp_path / "train.py"
    for imports, setter in [
        ("import quiet, torch", None),  # installed packages are not read
        ("import pkg.sub", tmp_path / "pkg" / "setup_env.py"),  # via a relative import, two deep
        ("from pkg import helper", tmp_path / "pkg" / "setup_env.py"),
    ]:
        script.write_text(f"{imports}\nprint('hi')\n")
        found = sets_environment(str(script), roots=[tmp_path])
        assert found == (setter and str(setter)), imports
