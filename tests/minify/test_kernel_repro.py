"""`fxlens minify --kernel`: the failing kernel as a standalone script with the real inputs of its
failing launch, run where fxlens cannot be imported.

Ground truth is established outside fxlens's verdict: the reproducer's own fresh run (exit status
and what it prints), the same script with the injected fault taken out of its kernel source (it
must then pass), and the fault's definition (FXLENS_INJECT=accuracy adds 1.0 before each store of
the kernel holding the op).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from schema_check import validate

from fxlens.minify.kernel import run_without_fxlens
from fxlens.minify.repro_writer import FXLENS_IMPORT
from fxlens.trace.session import Session

DEMO = Path(__file__).resolve().parents[2] / "toolkit" / "examples" / "demo_failing.py"
# the injected fault, as fxlens's codegen writes it (kernel_ctx.store): `tN = tM + 1.0`, then stored
INJECTED = re.compile(r"^(\s*)(t\d+) = (t\d+) \+ 1\.0$", re.M)


def _minify_kernel(dest: Path, *extra: str) -> dict:
    env = {**os.environ, "FXLENS_INJECT": "accuracy:aten.erf", "FXLENS_SESSIONS_DIR": str(dest / "sessions")}
    js = dest / "r.json"
    cmd = [sys.executable, "-m", "fxlens.cli", "minify", "--kernel", *extra, "--json", str(js)]
    proc = subprocess.run(
        [*cmd, "--out", str(dest / "repro") + "/", str(DEMO)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=dest,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fxlens minify --kernel: kernel fxk_forward_0_erf" in proc.stdout
    r = json.loads(js.read_text())
    validate("minify_kernel", r)
    return r


@pytest.fixture(scope="module")
def demo_kernel(build_once):
    def build(dest: Path) -> None:
        (dest / "repro").mkdir()
        r = _minify_kernel(dest)
        (dest / "result.json").write_text(json.dumps(r))

    dest = build_once("kernel-repro-demo", build)
    return json.loads((dest / "result.json").read_text())


def test_without_fxlens_really_has_no_fxlens(tmp_path):
    # the interpreter the reproducers are checked in: fxlens does not import there (that torch and
    # triton do is shown by every reproducer run below)
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\nprint('fxlens' in sys.modules)\nimport fxlens\n")
    code, out = run_without_fxlens(probe)
    assert code == 1 and "ModuleNotFoundError" in out and "import of fxlens halted" in out


def test_demo_erf_kernel_fails_without_fxlens_and_passes_without_the_fault(demo_kernel, tmp_path):
    r = demo_kernel
    repro = Path(r["repro"])
    assert repro.name == "kernel_fxk_forward_0_erf_relu_add.py" and repro.with_suffix(".pt").exists()
    assert r["kernel"] == "fxk_forward_0_erf_relu_add" and "aten.erf.default" in r["ops"]
    assert (r["graph"], r["compile_id"], r["reproduced"]) == ("forward", "0/0", "1/1")
    assert r["user_line"].startswith(f'File "{DEMO}", line 20') and "torch.erf" in r["user_line"]
    # the fault adds 1.0 before the store: the error of the original launch is 1 (fp32 rounding)
    assert r["failure"]["op"] == "aten.add.Tensor" and abs(r["failure"]["max_abs_err"] - 1) < 1e-5
    # the smallest launch that still fails: every input cut to one element
    assert r["launch"]["inputs"] == [[8, 16], [8, 16]] and r["shrunk"]["inputs"] == [[1, 1], [1, 1]]
    # the session keeps the verdict, as `fxlens report SESSION` shows minify's
    events = [e for e in Session.open(r["session"]).events if e.get("event") == "minify"]
    assert events and events[-1]["summary"] == r["summary"] and events[-1]["repro"] == r["repro"]
    text = repro.read_text()
    assert not any(FXLENS_IMPORT.match(ln) for ln in text.splitlines())  # torch and triton only
    assert "weights_only=True" in text and "compile 0/0" in text and "torch 2." in text

    # a fresh interpreter where fxlens cannot be imported: the reproducer's own verdict
    copy = tmp_path / repro.name
    copy.write_text(text)
    copy.with_suffix(".pt").write_bytes(repro.with_suffix(".pt").read_bytes())
    code, err = run_without_fxlens(copy)
    assert code == 1, err
    assert "fxlens-signature: accuracy: fxk_forward_0_erf_relu_add output 0 (aten.add.Tensor)" in err
    assert re.search(r"FAIL: .* max abs err 1 at element \(0, 0\)", err)

    # the same script with the injected `+ 1.0` taken out of its kernel: it passes
    fixed, n = INJECTED.subn(r"\1\2 = \3", text)
    assert n == 1
    copy.write_text(fixed)
    code, out = run_without_fxlens(copy)
    assert code == 0, out
    assert "ok: fxk_forward_0_erf_relu_add agrees with eager in float64" in out


def test_bad_input_is_a_one_line_error(tmp_path):
    cmd = [sys.executable, "-m", "fxlens.cli", "minify", "--kernel", str(tmp_path / "missing.py")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "missing.py" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow  # a whole run of the demo (~6 s of CPU) for an error line
def test_no_failing_launch_is_a_one_line_error(tmp_path):
    # the demo without its fault: every launch agrees with eager, nothing to write
    env = {k: v for k, v in os.environ.items() if k != "FXLENS_INJECT"}
    env["FXLENS_SESSIONS_DIR"] = str(tmp_path / "sessions")
    cmd = [sys.executable, "-m", "fxlens.cli", "minify", "--kernel", "--out", str(tmp_path / "r.py")]
    proc = subprocess.run(
        [*cmd, str(DEMO)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("fxlens minify: error: no kernel failed: ") and "agree with eager" in line
    assert not (tmp_path / "r.py").exists()


@pytest.mark.slow
def test_bisect_next_line_runs_as_is(tmp_path):
    # bisect names the kernel; the command its `next:` line prints writes that kernel's reproducer
    env = {**os.environ, "FXLENS_INJECT": "accuracy:aten.erf", "FXLENS_SESSIONS_DIR": str(tmp_path / "s")}
    js = tmp_path / "b.json"
    cli = [sys.executable, "-m", "fxlens.cli"]
    proc = subprocess.run(
        [*cli, "bisect", "--json", str(js), str(DEMO)], capture_output=True, text=True, timeout=900, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    words = shlex.split(json.loads(js.read_text())["next"])
    assert words[:5] == ["fxlens", "minify", "--kernel", "--kernel-name", "fxk_forward_0_erf"]
    proc = subprocess.run(
        [*cli, *words[1:]], capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "kernel fxk_forward_0_erf [aten.erf.default]" in proc.stdout and "reproduced 1/1" in proc.stdout


@pytest.mark.slow
def test_a_fault_in_fxlens_launcher_is_not_written_as_a_kernel(tmp_path):
    # FXLENS_INJECT=runtime_error raises in fxlens's launcher before the kernel runs: the kernel
    # itself is fine, so no reproducer of it could fail; one line says so
    env = {
        **os.environ,
        "FXLENS_INJECT": "runtime_error:aten.erf",
        "FXLENS_SESSIONS_DIR": str(tmp_path / "s"),
    }
    cmd = [
        sys.executable,
        "-m",
        "fxlens.cli",
        "minify",
        "--kernel",
        "--out",
        str(tmp_path / "r.py"),
        str(DEMO),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "fxlens minify: error: fxk_forward_0_erf_relu_add raises in fxlens's launcher "
        "(FXLENS_INJECT=runtime_error), before the kernel runs: no kernel to reproduce"
    ]
    assert not (tmp_path / "r.py").exists()
