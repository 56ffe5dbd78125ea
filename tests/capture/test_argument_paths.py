"""A tensor is named by the compiled call's own argument path, and "your script passes it" is judged
from that call (ground truth: the script's own code: it passes `labels=[{"boxes": ...}]`; `hidden`
is the model's own tensor), also in the code torch resumed after a graph break."""


def test_a_passed_tensor_in_resumed_code_is_the_users(run_report):
    proc, report = run_report("argument_paths")
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_kind = {c["kind"]: c for c in report["recompile_causes"]}
    boxes = by_kind["size"]
    assert "`labels[0]['boxes']`" in boxes["message"]
    assert "mark_dynamic(labels[0]['boxes'], 0)" in boxes["fix"]
    assert "not an argument your script passes" not in boxes["fix"]
    (act,) = boxes["actions"]
    # the action names the function the user's call entered, not the resume function torch made
    assert act["kind"] == "mark_dynamic" and act["params"]["function"] == "forward"
    assert act["params"]["arg"] == "labels[0]['boxes']"


def test_the_models_own_tensor_gets_no_input_advice(run_report):
    _, report = run_report("argument_paths")
    stride = next(c for c in report["recompile_causes"] if c["kind"] == "stride")
    assert "`hidden`" in stride["message"]
    assert "make the input contiguous" not in stride["fix"] and "before the call" not in stride["fix"]
    assert "not passed by your script" in stride["fix"]


def test_def_params_read_from_the_source(tmp_path):
    from fxlens.trace.userframes import def_params

    src = tmp_path / "m.py"
    src.write_text("@dec\ndef f(a, b=1,\n      *rest, c, **kw):\n    pass\ndef g(x): return x\n")
    assert def_params(str(src), 1) == {"a", "b", "rest", "c", "kw"}
    assert def_params(str(src), 5) == {"x"}
    assert def_params(str(src), 4) == set()  # not a def


def test_a_site_folder_on_the_path_beyond_the_venvs_own_is_a_library(tmp_path):
    # a venv whose packages live in another folder (a .pth, --system-site-packages, PYTHONPATH):
    # torch names that package's file relative to it in a guard comment (`pkg/loss.py`)
    import subprocess
    import sys

    site = tmp_path / "site-packages" / "pkg"
    site.mkdir(parents=True)
    (site / "loss.py").write_text("")
    code = (
        "from fxlens.trace.userfiles import is_library_code as f; print(f('pkg/loss.py'), f('pkg/none.py'))"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path / "site-packages")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["True", "False"], out.stderr
