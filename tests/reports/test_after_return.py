"""bisect and minify on real reports whose failure the graph causes but that show after it returns
or in a bounded CompilerBisector hand-over (scripts/: each opens with its report's address).

Ground truth comes without fxlens: the script run plainly fails with its backend and passes with
`eager` (and, where bisect must not blame it, with `aot_eager`); torch's own traceback names the
frame that raised; a reproducer is run in a fresh interpreter with torch alone, then again with
its backend replaced by `eager`.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_reports import _fxlens

SCRIPTS = Path(__file__).parent / "scripts"


def _python(script: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
        cwd=script.parent,
    )


def _reproduces(repro: Path) -> str:
    """The reproducer fails in a fresh interpreter (torch alone) and passes on the eager backend;
    returns its stderr."""
    text = repro.read_text()
    assert "fxlens" not in re.sub(r"^#.*$|fxlens-signature|fxlens minify", "", text, flags=re.M)
    run = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    expected = re.search(r"^EXPECTED = (.+)$", text, re.M).group(1)
    assert run.returncode == 1 and f"fxlens-signature: {eval(expected)}" in run.stderr, run.stderr[-2000:]
    eager = repro.with_name("eager_" + repro.name)
    eager.write_text(re.sub(r"(def load_backend\(\):\n    return )'\w+'", r"\1'eager'", text))
    ok = subprocess.run([sys.executable, str(eager)], capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0, ok.stderr[-2000:]
    return run.stderr


# -- fast: the pieces, on real output ------------------------------------------------------------


@pytest.fixture(scope="session")
def plain(build_once):
    """`plain(NAME)` -> (exit status, stderr) of `python scripts/NAME` run plainly, once per test
    run (shared by the xdist workers): two tests read no_input_cumsum.py's traceback."""

    def fill(root: Path) -> None:
        runs = {}
        for name in ("no_input_cumsum.py", "view_output_mutated.py"):
            proc = _python(SCRIPTS / name)
            runs[name] = [proc.returncode, proc.stderr]
        (root / "runs.json").write_text(json.dumps(runs))

    runs = json.loads((build_once("after-return-plain", fill) / "runs.json").read_text())
    return lambda name: tuple(runs[name])


def test_crash_site_is_the_pattern_that_raised_not_its_helper(plain):
    # pytorch/pytorch#193265: the traceback's innermost inductor frame is the pattern's nested
    # `repl`; the site is the pattern function that called replace_by_example
    from fxlens.bisect.handover import crash_site

    code, stderr = plain("no_input_cumsum.py")
    assert code == 1 and ", in pointless_cumsum_replacement" in stderr
    site = crash_site(stderr)
    assert site["function"] == "pointless_cumsum_replacement"
    assert site["file"] == "torch/_inductor/fx_passes/post_grad.py"
    assert f"line {site['line']}, in pointless_cumsum_replacement" in stderr
    assert site["raised_in"].startswith("repl (torch/_inductor/fx_passes/post_grad.py:")


def test_the_driver_stops_before_a_step_that_would_end_after_its_deadline(capsys):
    from fxlens.bisect import inductor
    from fxlens.bisect.handover import partial_answer

    inductor.STEPS[:] = []
    spec = {"deadline": time.time() + 30, "estimate": 10}
    inductor._check_budget(spec)  # 30 s left, a step ~10 s: it runs
    inductor.STEPS.append(
        {"subsystem": "pre_grad_passes", "state": "test_disable", "fails": True, "seconds": 40}
    )
    with pytest.raises(inductor.BudgetSpent):  # the steps so far take 40 s: it would not fit
        inductor._check_budget(spec)
    assert "the hand-over stops here" in capsys.readouterr().out
    assert partial_answer(inductor.STEPS) == "ruled out: pre_grad_passes"
    inductor.STEPS[:] = []


def test_what_the_caller_did_after_the_graph_returned_comes_from_its_traceback(plain):
    from fxlens.minify.after import after_return

    code, stderr = plain("view_output_mutated.py")
    assert code == 1 and "y.mul_(2)" in stderr
    assert after_return(stderr) == ("mutate",)
    # a script that fails inside the compiled call: its last user line uses no output in place
    code, stderr = plain("no_input_cumsum.py")
    assert code == 1 and after_return(stderr) == ()


def test_reproducer_headers_keep_only_config_the_script_names(tmp_path):
    from fxlens.minify.script_config import not_set_by_script

    script = tmp_path / "s.py"
    script.write_text("import torch\ntorch._inductor.config.fallback_random = True\n")
    cap = tmp_path / "cap"
    cap.mkdir()
    lines = [
        "torch._inductor.config.fallback_random = True",
        "torch._functorch.config.fake_tensor_allow_unsafe_data_ptr_access = True",
    ]
    (cap / "graph_0.json").write_text(json.dumps({"config": lines}))
    assert not_set_by_script(str(script), cap) == {lines[1]}


def test_an_interrupt_while_verifying_writes_the_reproducer_as_partial(tmp_path, monkeypatch, capsys):
    from fxlens.capture import children
    from fxlens.minify import pipeline, repro_writer
    from fxlens.minify.graph import InputSpec

    from_graph = _tiny_candidate()
    spec = repro_writer.ReproSpec(backend="inductor", check="crash", signature="X")

    def interrupted(*a, **k):
        raise children.Terminated()

    monkeypatch.setattr(repro_writer, "verify", interrupted)

    class Run:
        cfg = type("Cfg", (), {"repro_dir": tmp_path, "timeout": 60, "reruns": 3})()
        out = str(tmp_path / "repro.py")
        session = tmp_path / "session"
        script, script_args = "s.py", []

    Run.session.mkdir()
    reducer = type("R", (), {"queries": 3})()
    assert isinstance(from_graph.inputs[0], InputSpec)
    with pytest.raises(KeyboardInterrupt):
        pipeline._write(Run(), spec, from_graph, from_graph, reducer, 0, None)
    partial = tmp_path / "repro.partial.py"
    assert partial.exists() and not (tmp_path / "repro.py").exists()
    assert f"the best reproducer so far (not verified): {partial}" in capsys.readouterr().err
    assert "interrupted while verifying" in partial.read_text()


def _tiny_candidate():
    import torch

    from fxlens.minify.graph import candidate_from_module

    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    return candidate_from_module(gm, [torch.randn(3)])


def test_the_reduced_185497_graph_fails_at_the_aot_level_where_the_reports_passes():
    # why minify's #185497 reproducer also fails on aot_eager: without the report's `interpolate`,
    # the graph trips torch 2.13's AOTAutograd itself (any backend), with the same RuntimeError;
    # with it, aot_eager passes. Torch alone, no fxlens in the process.
    # the three runs in one interpreter (torch imported once): each run_path compiles anew
    code = (
        "import os, runpy, sys\n"
        "for backend, interp in (('aot_eager', '0'), ('eager', '0'), ('aot_eager', '1')):\n"
        "    os.environ.update(BACKEND=backend, INTERPOLATE=interp)\n"
        "    try:\n"
        "        runpy.run_path(sys.argv[1])\n"
        "    except RuntimeError as e:\n"
        "        print('FAILS', backend, interp, str(e)[:80])\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(SCRIPTS / "inplace_slice_backward.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = run.stdout.splitlines()
    assert run.returncode == 0 and len(lines) == 3, run.stderr[-2000:]
    assert lines[0].startswith("FAILS aot_eager 0 one of the variables needed for gradient computation")
    assert lines[1].startswith("OK") and lines[2].startswith("OK")


# -- slow: bisect and minify end to end ---------------------------------------------------------


@pytest.mark.slow  # ~1 min: inductor compiles the backward's C++
def test_in_place_input_mutation_that_only_inductors_backward_trips_is_blamed_on_inductor(tmp_path):
    # pytorch/pytorch#185497: before, "accuracy first at stage aot_eager: grad of input 1 () max
    # abs err inf" (eager's autograd answers None where the AOT graph answers zeros)
    script = SCRIPTS / "inplace_norm_backward.py"
    plain = _python(script)
    assert plain.returncode == 1 and "modified by an inplace operation" in plain.stderr
    for stage in ("eager", "aot_eager", "aot_eager_decomp_partition"):
        assert _python(script, env={"BACKEND": stage}).returncode == 0
    out = tmp_path / "v.json"
    proc = _fxlens(tmp_path, "bisect", "--no-compiler-bisector", "--json", out, script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    v = json.loads(out.read_text())
    assert v["first_failing_stage"] == "inductor" and v["failure"]["kind"] == "crash"
    assert [s["ok"] for s in v["stages"]] == [True, True, True, False]


@pytest.mark.slow  # ~3 min on a loaded 2-core machine: 7 graphs, a 60 s hand-over
def test_seven_graph_script_says_its_stage_first_and_the_handover_keeps_its_budget(tmp_path):
    # pytorch/pytorch#193265 in a script that compiles 7 graphs
    script = SCRIPTS / "seven_graphs_cumsum_0d.py"
    assert _python(script, env={"BACKEND": "aot_eager_decomp_partition"}).returncode == 0
    budget = 60
    out = tmp_path / "v.json"
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")}
    cmd = [sys.executable, "-m", "fxlens.cli", "bisect", "--compiler-bisector-budget", str(budget)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*cmd, "--json", str(out), str(script)], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    seen = []
    for line in proc.stdout:
        seen.append((time.monotonic() - t0, line.rstrip("\n")))
    assert proc.wait(timeout=60) == 0
    v = json.loads(out.read_text())
    at = {
        text.split(":")[0].strip(): t for t, text in seen if text.startswith(("stage verdict", "  handing"))
    }
    lines = [text for _, text in seen]
    verdict = next(
        i for i, ln in enumerate(lines) if ln.startswith("stage verdict: crash first at stage inductor")
    )
    assert verdict < next(i for i, ln in enumerate(lines) if ln.startswith("  handing over"))
    # said within the time the stage runs took (plus the CLI's own start), before the hand-over
    ladder = sum(t["seconds"] for t in v["run_times"])
    assert at["stage verdict"] <= ladder + 30
    cb = v["compiler_bisector"]
    assert cb["budget_s"] == budget and cb["seconds"] <= budget + 10
    # the driver is forked from bisect's warm process: no interpreter start or torch import of its
    # own (a new driver paid both: 8.5 s here at load ~5, the same import run 1 pays)
    assert any("driver and each step forked from bisect's warm process" in ln for ln in lines)
    assert cb["driver_start_s"] < 0.5 * v["run_times"][0]["import_s"]
    assert "raised in pointless_cumsum_replacement" in lines[verdict]
    assert v["failure"]["site"]["function"] == "pointless_cumsum_replacement"
    assert v["graph"]["of"] == 7 and v["culprit"]["function"] == "scale"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, backend, marks",
    [
        ("no_input_cumsum.py", "inductor", ("def make_inputs():\n    return []",)),
        ("view_output_mutated.py", "aot_eager", ("MUTATE = True", ".unsqueeze_(")),
        ("nested_region_cumsum.py", "inductor", ("cumsum(",)),
        ("inplace_norm_backward.py", "inductor", ("BACKWARD = True", "leaf=False", ".sub_(")),
    ],
)
def test_minify_writes_a_reproducer_that_fails_alone_and_passes_on_eager(tmp_path, name, backend, marks):
    script = SCRIPTS / name
    assert _python(script).returncode == 1 and _python(script, env={"BACKEND": "eager"}).returncode == 0
    repro = tmp_path / "repro.py"
    m = _fxlens(
        tmp_path, "minify", "--backend", backend, "--out", repro, "--json", tmp_path / "m.json", script
    )
    assert m.returncode == 0, m.stderr[-3000:]
    text = repro.read_text()
    assert all(mark in text for mark in marks), text[:3000]
    assert "non-default torch config" not in text  # none of these scripts sets any
    _reproduces(repro)
    if name == "inplace_norm_backward.py":
        # the reduction keeps "fails on inductor, passes eagerly", not "passes on aot_eager": without
        # the script's interpolate the graph fails on aot_eager too (a torch AOTAutograd failure,
        # test_the_reduced_185497_graph_fails_at_the_aot_level_where_the_reports_passes)
        aot = repro.with_name("aot_" + repro.name)
        aot.write_text(re.sub(r"(def load_backend\(\):\n    return )'\w+'", r"\1'aot_eager'", text))
        run = subprocess.run([sys.executable, str(aot)], capture_output=True, text=True, timeout=600)
        assert run.returncode == 1 and "modified by an inplace operation" in run.stderr
        assert "interpolate" not in text.split("def make_inputs")[0]


@pytest.mark.slow
def test_sigterm_during_minify_names_its_partial_reproducer(tmp_path):
    script = SCRIPTS / "view_output_mutated.py"
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")}
    cmd = [
        sys.executable,
        "-m",
        "fxlens.cli",
        "minify",
        "--backend",
        "aot_eager",
        "--out",
        "r.py",
        str(script),
    ]
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not list((tmp_path / "sessions").glob("*/repro/r.py")):
        time.sleep(0.05)  # the reproducer is staged: verification starts now
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143
    partial = tmp_path / "r.partial.py"
    # the path as the user named it (--out r.py, relative to where minify ran)
    assert partial.exists() and "the best reproducer so far (not verified): r.partial.py" in err
    assert "interrupted while verifying" in partial.read_text()
