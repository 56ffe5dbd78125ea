"""fxlens bisect and minify on real bug reports from PyTorch's issue tracker that still fail on
torch 2.13 (scripts/: each opens with the issue's address, its title and what the report says).

The scripts are the reports' own code adapted to the CPU, and shaped as reports are: run eagerly,
run compiled, compare with assert_close (or assert), exit 1. Ground truth is established here
without fxlens: plain python with the script's backend fails and with `eager` passes (children forked
from one interpreter that imported torch, where a test runs several); for the
verdicts of torch's CompilerBisector, the inductor switch the verdict names is flipped by hand
and the script then passes.
"""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from forked import forked_runs

SCRIPTS = Path(__file__).parent / "scripts"


def _python(script: Path, prelude: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    """The script in a fresh interpreter, as its reporter ran it (`prelude` first: a config flip)."""
    code = f"{prelude}\nimport runpy; runpy.run_path({str(script)!r}, run_name='__main__')"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
        cwd=script.parent,
    )


def _fxlens(tmp_path: Path, *args, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions"), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        cwd=tmp_path,
    )


def _bisect(tmp_path: Path, script: Path, *opts) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "verdict.json"
    proc = _fxlens(tmp_path, "bisect", "--json", out, *opts, script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(out.read_text())


def _def_line(script: Path, name: str) -> int:
    return next(i for i, ln in enumerate(script.read_text().splitlines(), 1) if ln.startswith(f"def {name}("))


def _stages(v: dict) -> dict:
    return {s["stage"]: s["ok"] for s in v["stages"]}


INDUCTOR_LADDER_OK = {"eager": True, "aot_eager": True, "aot_eager_decomp_partition": True, "inductor": False}


def test_wrong_number_below_fxlens_tolerances_is_bisected_then_minified_as_bisect_says(tmp_path):
    # pytorch/pytorch#198183: inductor's vectorised erf returns 0 for |x| <= 1e-7 (an absolute
    # error of 1e-8, under any absolute tolerance; the report's check is rtol=1e-3, atol=0)
    script = SCRIPTS / "erf_small_vec.py"
    by_hand = [("", ""), ("", "os.environ['BACKEND'] = 'eager'")]  # its backend, then eager
    assert [code for code, _ in forked_runs(script, by_hand, tmp_path, {})] == [1, 0]
    proc, v = _bisect(tmp_path, script, "--no-compiler-bisector")
    assert v["first_failing_stage"] == "inductor" and _stages(v) == INDUCTOR_LADDER_OK
    c = v["culprit"]
    assert (c["compile_id"], c["function"], c["line"]) == ("0/0", "fn", _def_line(script, "fn"))
    # the script's assert_close raised, not a graph: said so, and minify is pointed at the outputs
    f = v["failure"]
    assert f["outside_graphs"] is True and f["error"].startswith("AssertionError: Tensor-likes are not close")
    assert "(raised by the script, outside the compiled graphs)" in proc.stdout
    assert v["next"] == f"fxlens minify --backend inductor --check accuracy {shlex.quote(str(script))}"
    # the suggested command, as given (fxlens's own options go before SCRIPT)
    repro = tmp_path / "repro.py"
    words = shlex.split(v["next"])
    # one re-run of the written reproducer inside minify, not three: the test runs it in a fresh
    # interpreter itself below (the ground truth that it fails)
    more = ("--out", repro, "--json", tmp_path / "m.json")
    minify = _fxlens(tmp_path, *words[1:-1], *more, *words[-1:], env={"FXLENS_MINIFY_RERUNS": "1"})
    assert minify.returncode == 0, minify.stderr[-3000:]
    m = json.loads((tmp_path / "m.json").read_text())
    assert m["final_nodes"] == 1 and "torch.erf(" in repro.read_text()
    assert m["signature"] == "AccuracyError: compiled output diverges from the fp64 reference"
    run = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 1 and f"fxlens-signature: {m['signature']}" in run.stdout + run.stderr


@pytest.mark.slow  # the default run keeps the erf report end to end
def test_dynamo_level_wrong_number_is_not_blamed_on_a_backend(tmp_path):
    # pytorch/pytorch#191821: a nested_compile_region reuses a rebound global; wrong with every
    # backend, eager included, and right without torch.compile
    script = SCRIPTS / "nested_region_global.py"
    assert _python(script, env={"BACKEND": "inductor"}).returncode == 1
    assert _python(script, env={"TORCHDYNAMO_DISABLE": "1"}).returncode == 0
    proc, v = _bisect(tmp_path, script)
    assert v["outcome"] == "eager_fails" and v["first_failing_stage"] == "eager"
    assert "Dynamo" in v["summary"] and v["next"] is None


@pytest.mark.slow  # the default run keeps the erf report end to end
def test_compile_crash_in_an_inductor_pass_is_a_graph_crash(tmp_path):
    # pytorch/pytorch#190418: IndexError in joint_graph's mul/softmax pattern on 0-d inputs
    script = SCRIPTS / "log_softmax_0d_mul.py"
    plain = _python(script)
    assert plain.returncode == 1 and "_other_is_broadcasted_in_dim" in plain.stderr
    assert _python(script, env={"BACKEND": "aot_eager_decomp_partition"}).returncode == 0
    _, v = _bisect(tmp_path, script, "--no-compiler-bisector")
    assert v["first_failing_stage"] == "inductor" and _stages(v) == INDUCTOR_LADDER_OK
    assert v["culprit"]["function"] == "fn" and v["culprit"]["line"] == _def_line(script, "fn")
    f = v["failure"]
    assert (f["kind"], f["error"], f["outside_graphs"]) == (
        "crash",
        "IndexError: list index out of range",
        False,
    )
    assert "--check crash" in v["next"]


# (script, CompilerBisector's verdict, the switch that verdict names, flipped by hand)
HANDOVERS = [
    ("log_softmax_0d_mul.py", ("joint_graph_passes", "pass_pattern_1"), None),
    ("matrix_exp_view.py", ("inductor_layout_optimization", None), "layout_optimization = False"),
    ("cauchy_icdf_fp16.py", ("inductor_emulate_precision_casts", None), "emulate_precision_casts = True"),
    ("erf_small_vec.py", ("lowerings", "erf"), None),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, named, flip", HANDOVERS, ids=[h[0] for h in HANDOVERS])
def test_compiler_bisector_names_what_the_report_shows(tmp_path, name, named, flip):
    script = SCRIPTS / name
    if flip:  # ground truth: with the switch the verdict names flipped, the script passes
        assert _python(script).returncode == 1
        assert _python(script, prelude=f"import torch._inductor.config as c; c.{flip}").returncode == 0
    _, v = _bisect(tmp_path, script)
    cb = v["compiler_bisector"]
    assert cb["subsystem"] == named[0], cb
    if named[1]:
        assert named[1] in json.dumps(cb), cb


@pytest.mark.slow
def test_runtime_crash_inside_inductor_code_is_a_graph_crash(tmp_path):
    # pytorch/pytorch#188222: the generated call() raises a view error at run time
    script = SCRIPTS / "matrix_exp_view.py"
    _, v = _bisect(tmp_path, script, "--no-compiler-bisector")
    assert v["first_failing_stage"] == "inductor" and v["failure"]["outside_graphs"] is False
    assert v["failure"]["error"].startswith("RuntimeError: view size is not compatible")


@pytest.mark.slow
def test_minify_reduces_a_one_element_error_near_the_rule_bound(tmp_path):
    # pytorch/pytorch#198133: erfinv(0.99999994) 7.8e-6 relative off in one of five values
    script = SCRIPTS / "erfinv_near_one.py"
    repro = tmp_path / "repro.py"
    proc = _fxlens(tmp_path, "minify", "--backend", "inductor", "--check", "accuracy", "--out", repro, script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "torch.erfinv(" in repro.read_text()
    run = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 1 and "fxlens-signature: AccuracyError" in run.stdout + run.stderr


@pytest.mark.slow
def test_minify_says_why_it_cannot_reduce_a_sign_at_a_pole(tmp_path):
    # pytorch/pytorch#194357 checks the sign of tan at its pole in fp16: eager is as far from the
    # fp64 value (-1.6e16) as inductor is, so no graph is worse than eager by the accuracy rule
    script = SCRIPTS / "cauchy_icdf_fp16.py"
    assert _python(script).returncode == 1
    proc = _fxlens(tmp_path, "minify", "--backend", "inductor", "--check", "accuracy", script)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "fails outside the compiled graphs" in last and "sign mismatch" in last
    assert "no compiled graph raised or diverged from fp64 more than eager does" in last


# -- issue 21: a stage passes when it behaves as eager does ------------------------------------

FXLENS_LADDER = ("fxlens_eager", "fxlens_aot_eager", "fxlens_nofusion", "fxlens_inline", "fxlens")
BOTH_LADDERS = {"inductor": tuple(INDUCTOR_LADDER_OK), "fxlens": FXLENS_LADDER}


def _by_hand(script: Path, ladder: tuple[str, ...]) -> dict:
    """Ground truth without fxlens: the script's exit status with each stage as its backend."""
    return {stage: _python(script, env={"BACKEND": stage}).returncode for stage in ladder}


def _expected(truth: dict) -> tuple[str | None, dict]:
    """(first stage whose run fails, the stage rows bisect must show: ok up to it, then FAILS)."""
    first = next((s for s, code in truth.items() if code != 0), None)
    rows = {}
    for s in truth:
        rows[s] = s != first
        if s == first:
            break
    return first, rows


@pytest.mark.slow  # ~2 min on a shared 2-core machine (3 plain runs, a 3-run bisect)
def test_raise_vs_no_raise_at_a_decomposition_is_not_blamed_on_eager(tmp_path):
    # pytorch/pytorch#193757: eager raises on a target of 1.5; aot_eager_decomp_partition's
    # decomposition drops the check and returns a value. Before: 'eager FAILS ... Dynamo's capture'
    script = SCRIPTS / "bce_target_range.py"
    ladder = ("eager", "aot_eager", "aot_eager_decomp_partition")
    truth = _by_hand(script, ladder)
    assert truth == {"eager": 0, "aot_eager": 0, "aot_eager_decomp_partition": 1}
    proc, v = _bisect(tmp_path, script, "--backend", "aot_eager_decomp_partition")
    first, rows = _expected(truth)
    assert v["first_failing_stage"] == first and _stages(v) == rows
    f = v["failure"]
    assert f["kind"] == "no_raise"
    want = (
        "eager raises RuntimeError: all elements of target should be between 0 and 1, "
        f"{first} returns a value"
    )
    assert f["vs_eager"] == f["error"] == want and v["summary"].startswith(want)
    assert "raises what eager raises (RuntimeError: all elements of target" in proc.stdout
    assert v["next"] == f"fxlens minify --backend {first} --check raise {shlex.quote(str(script))}"


# (script, ladder): the first stage that fails is the first whose plain run fails; what bisect says
RAISE_CASES = [
    ("bce_target_range.py", "inductor"),
    ("bce_target_range.py", "fxlens"),
    ("bernoulli_p_range.py", "inductor"),
    ("bernoulli_p_range.py", "fxlens"),
    ("index_oob_abort.py", "inductor"),
    ("index_oob_abort.py", "fxlens"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, top", RAISE_CASES, ids=[f"{n}-{t}" for n, t in RAISE_CASES])
def test_eager_raises_reports_on_both_ladders(tmp_path, name, top):
    script = SCRIPTS / name
    truth = _by_hand(script, BOTH_LADDERS[top])
    first, rows = _expected(truth)
    assert first is not None and truth[BOTH_LADDERS[top][0]] == 0  # eager is right on every report
    _, v = _bisect(tmp_path, script, "--backend", top, "--no-compiler-bisector")
    assert v["first_failing_stage"] == first and _stages(v) == rows, (truth, v["stages"])
    assert v["outcome"] == "fails" and v["failure"]["vs_eager"].startswith("eager raises ")
    if truth[first] < 0:  # killed by a signal: named, with what eager raised on the call
        assert v["failure"]["error"].endswith(f"{first} killed by SIGABRT")
    else:
        assert v["failure"]["kind"] == "no_raise" and v["failure"]["error"].endswith(
            f"{first} returns a value"
        )
    assert "--check raise" in v["next"]


@pytest.mark.slow
@pytest.mark.parametrize("stage", [*BOTH_LADDERS["inductor"], *FXLENS_LADDER])
def test_a_correct_script_of_the_eager_raises_shape_passes_at_every_stage(tmp_path, stage):
    script = SCRIPTS / "cholesky_not_pd.py"
    assert _python(script, env={"BACKEND": stage}).returncode == 0
    _, v = _bisect(tmp_path, script, "--backend", stage)
    assert v["outcome"] == "nothing_fails" and v["first_failing_stage"] is None
    assert v["stages"][0]["ok"] and "what eager raises (_LinAlgError" in v["stages"][0]["note"]


@pytest.mark.slow
def test_abort_in_inductor_is_minified_with_the_raise_kept(tmp_path):
    # pytorch/pytorch#195402: eager's IndexError, inductor's C++ kernel aborts the process
    script = SCRIPTS / "index_oob_abort.py"
    assert _python(script, env={"BACKEND": "inductor"}).returncode == -6
    repro = tmp_path / "repro.py"
    m = _fxlens(tmp_path, "minify", "--backend", "inductor", "--check", "raise", "--out", repro, script)
    assert m.returncode == 0, m.stderr[-3000:]
    run = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    assert run.returncode == -6
    assert "eager raises IndexError: index 1 is out of bounds for dimension 0 with size 1" in run.stderr


@pytest.mark.slow
def test_compiled_closer_to_fp64_than_eager_points_minify_at_eager_diff(tmp_path):
    # pytorch/pytorch#159239: the script's assert_close against eager fails on a compiled value
    # that is the closer one to fp64; the script prints both errors (ground truth, no fxlens)
    script = SCRIPTS / "rope_bf16_closer.py"
    plain = _python(script)
    assert plain.returncode == 1
    errs = [tuple(map(float, ln.split("eager ")[1].split(" compiled "))) for ln in plain.stdout.splitlines()]
    assert errs and all(c < e for e, c in errs)  # (eager, compiled) max errors vs fp64
    proc, v = _bisect(tmp_path, script, "--no-compiler-bisector")
    f = v["failure"]
    assert (v["first_failing_stage"], f["kind"]) == ("inductor", "accuracy")
    assert f["eager_diff"]["closer_to_fp64"] is True and f["eager_diff"]["dtype"] == "bfloat16"
    assert "the compiled value is closer to fp64 than eager's" in v["summary"]
    assert "the script's tolerance is tighter than bfloat16 allows at add" in v["summary"]
    assert v["next"] == f"fxlens minify --backend inductor --check eager-diff {shlex.quote(str(script))}"
    repro = tmp_path / "repro.py"
    words = shlex.split(v["next"])
    m = _fxlens(tmp_path, *words[1:-1], "--out", repro, *words[-1:])
    assert m.returncode == 0, m.stderr[-3000:]
    run = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 1 and "fxlens-signature: EagerDiff" in run.stderr
    assert "largest error: output" in run.stderr


@pytest.mark.slow
def test_fp16_cast_report_is_labelled_accuracy_and_its_reproducer_shows_the_error(tmp_path):
    # pytorch/pytorch#182131: explicit fp16 casts; the graph's fp64 run keeps them, so minify's
    # accuracy rule sees the compiled add as the one off
    script = SCRIPTS / "fp16_cast_add.py"
    assert _python(script).returncode == 1
    assert _python(script, env={"BACKEND": "aot_eager_decomp_partition"}).returncode == 0
    _, v = _bisect(tmp_path, script, "--no-compiler-bisector")
    assert v["failure"]["kind"] == "accuracy" and v["failure"]["eager_diff"] is None
    assert "--check accuracy" in v["next"]
    repro = tmp_path / "repro.py"
    words = shlex.split(v["next"])
    m = _fxlens(tmp_path, *words[1:-1], "--out", repro, *words[-1:])
    assert m.returncode == 0, m.stderr[-3000:]
    run = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 1 and "largest error: output 0" in run.stderr and "(float16)" in run.stderr


@pytest.mark.slow
def test_mask_index_put_crash_is_reproduced_in_isolation(tmp_path):
    # pytorch/pytorch#196570: before, "fails in the script ... but not when compiled alone"
    script = SCRIPTS / "mask_index_put_softmax.py"
    plain = _python(script)
    assert plain.returncode == 1 and "KeyError: 'buf1'" in plain.stderr
    assert _python(script, env={"BACKEND": "aot_eager_decomp_partition"}).returncode == 0
    repro = tmp_path / "repro.py"
    m = _fxlens(tmp_path, "minify", "--backend", "inductor", "--out", repro, script)
    assert m.returncode == 0, m.stderr[-3000:]
    text = repro.read_text()
    assert "torch.full(" in text and "] = 0" in text and "softmax" in text
    run = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 1 and "fxlens-signature: InductorError: KeyError: 'bufN'" in run.stderr
