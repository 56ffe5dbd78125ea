"""`fxlens fix` runs what the user ran and applies what it says (backend eager: no inductor needed).

Ground truth: torch's own trace of each re-run (fxlens.fix.measure reads it again here), and the
script's own output. Without stdin replayed, every re-run would read an empty input, call nothing
and measure nothing; without matching the compiled object, the library module's and the bound
method's marks would never be made.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fix_helpers import SCRIPTS
from fix_helpers import run_fix as _fix
from schema_check import validate

from fxlens.fix import measure
from fxlens.fix.methods import called_methods
from fxlens.fix.patches import drop_last
from fxlens.trace.session import Session


@pytest.fixture(scope="module")
def jobs(build_once):
    def build(d: Path) -> None:
        proc, _ = _fix(d, SCRIPTS / "jobs_shapes.py", "--try", "regional:NoSuchBlock", stdin="8 12 16\n")
        (d / "stdout").write_text(proc.stdout)
        (d / "stderr").write_text(proc.stderr)
        (d / "rc").write_text(str(proc.returncode))

    d = build_once("fix-jobs-shapes", build)
    return d, json.loads((d / "fix.json").read_text())


def _one(result: dict, kind: str, **params) -> dict:
    (got,) = [
        f
        for f in result["fixes"]
        if f["kind"] == kind and all(f["params"].get(k) == v for k, v in params.items())
    ]
    return got


def test_stdin_is_recorded_and_replayed_in_every_rerun(jobs):
    d, result = jobs
    assert (d / "rc").read_text() == "0", (d / "stderr").read_text()[-3000:]
    validate("fix", result)
    assert (d / "s" / "stdin.bin").read_bytes() == b"8 12 16\n"
    # each re-run read the same sizes: its script printed them, and its outputs equal the first run's
    for f in result["fixes"]:
        if f["run"]:
            assert "[8, 12, 16]" in (Path(f["run"]) / "output.log").read_text(), f["kind"]
    md = _one(result, "mark_dynamic", arg="obs")
    assert md["outputs_equal"] is True and md["outputs_difference"] is None


def test_a_library_module_and_a_bound_method_get_their_marks(jobs):
    _, result = jobs
    # torch.nn.Linear: its code is torch's, compiled through torch's own wrapper (`inner`); its fixes
    # name it by the report's name of it (a library module's dim: dynamic=True, and its mark)
    lib = [f for f in result["fixes"] if f["params"].get("owner") == "Linear.forward"]
    assert {f["kind"] for f in lib} == {"dynamic", "mark_dynamic"}
    bound = _one(result, "mark_dynamic", arg="obs")  # torch.compile(agent.act)
    for f in (*lib, bound):
        assert f["applied"] and f["verdict"] == "helps", f
        again, _ = measure.measures(Session.open(f["run"]))  # torch's own counts of the re-run
        assert again["recompiles"] == f["after"]["recompiles"] == f["before"]["recompiles"] - 1
    assert all("`Linear.forward`" in f["fix"] for f in lib)
    assert bound["params"]["function"] == "act"


def test_a_module_called_through_its_methods_gets_them_compiled(jobs):
    _, result = jobs
    f = _one(result, "compile_methods")
    assert f["params"]["methods"] == ["decode", "encode"] and f["applied"]
    assert f["verdict"] == "helps" and f["outputs_equal"] is True
    # the first run compiled nothing of the VAE: its re-run compiled both methods (torch's trace)
    graphs = [g for g in Session.open(f["run"]).graphs if g.function.endswith(("encode", "decode"))]
    assert {g.function.rsplit(".", 1)[-1] for g in graphs} == {"encode", "decode"}
    assert not any(
        g.function.endswith(("encode", "decode")) for g in Session.open(Path(f["run"]).parent).graphs
    )


def test_a_fix_that_could_not_be_applied_says_not_applied_and_why(jobs):
    _, result = jobs
    f = _one(result, "regional")
    assert f["verdict"] == "not applied" and not f["applied"]
    assert "no `NoSuchBlock` inside the module compiled at" in f["why"]


def test_try_config_names_a_switch_of_the_running_torch_before_any_run(tmp_path, monkeypatch, cli_in_process):
    # in this process: the check imports torch to read its config
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli_in_process("fix", "--try", "config:no_such_knob=1", SCRIPTS / "kw_and_item.py")
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "the running torch has no config switch 'no_such_knob'" in err
    assert not (tmp_path / ".fxlens").exists()  # refused before anything ran


def test_methods_called_on_a_compiled_module_are_read_from_the_source(tmp_path):
    script = tmp_path / "vae.py"
    script.write_text(
        "import torch\n"
        "vae = make()\n"
        "vae.compile()\n"
        "z = vae.encode(x)\n"
        "vae.eval()\n"
        "out = vae.decode(z).sample\n"
        "m = torch.compile(other)\n"
        "m.generate(ids)\n"
    )
    assert called_methods(str(script), 3) == ["encode", "decode"]
    assert called_methods(str(script), 7) == ["generate"]


def test_drop_last_goes_on_the_loader_with_the_short_batch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from torch.utils.data import DataLoader\n"
        "train = DataLoader(ds_train, batch_size=8)\n"
        "val = DataLoader(ds_val, batch_size=8)\n"
    )
    patch, line = drop_last(str(script), [3])  # the run saw val's last batch short
    assert line == 3 and "+val = DataLoader(ds_val, batch_size=8, drop_last=True)" in patch
    assert "+train" not in patch
    assert drop_last(str(script), []) is None  # no loader with a short batch: no patch


@pytest.mark.slow
def test_a_torchrun_session_is_rerun_through_torchrun(tmp_path):
    # `fxlens run --nproc 2` made the first run; fix reuses its launcher for every re-run
    script = SCRIPTS / "ddp_sizes.py"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "run",
            "--quiet",
            "--nproc",
            "2",
            "--session",
            str(tmp_path / "s"),
            str(script),
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=600,
    )
    proc, result = _fix(tmp_path, script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "launched through torchrun with 2 processes" in proc.stderr
    f = _one(result, "mark_dynamic")
    assert f["applied"] and f["verdict"] == "helps" and f["after"]["recompiles"] == 0
    # both ranks ran the re-run (torch's trace holds one log per rank)
    assert {r.rank for r in Session.open(f["run"]).ranks} == {0, 1}
    assert f["before"]["recompiles"] == 2  # one per rank, as torch's trace of the first run says


@pytest.mark.slow
def test_a_failing_script_is_said_first_with_bisect_next(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(
        "import torch\n"
        "f = torch.compile(lambda x: x.sin() * 2, backend='eager')\n"
        "for n in (4, 6):\n"
        "    f(torch.randn(n))\n"
        "raise RuntimeError('the loss went to NaN')\n"
    )
    proc, result = _fix(tmp_path, script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (said,) = [s for s in result["said"] if "first run" in s]
    assert "RuntimeError: the loss went to NaN" in said and f"fxlens bisect {script}" in said
    assert proc.stdout.splitlines()[1].startswith("note: the first run exited with status 1")


@pytest.mark.slow
def test_an_in_place_compile_called_through_methods_gets_them_compiled(tmp_path):
    script = tmp_path / "vae.py"
    script.write_text(
        "import torch\n"
        "class VAE(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.e, self.d = torch.nn.Linear(4, 2), torch.nn.Linear(2, 4)\n"
        "    def encode(self, x):\n"
        "        return self.e(x)\n"
        "    def decode(self, z):\n"
        "        return self.d(z)\n"
        "vae = VAE()\n"
        "vae.compile(backend='eager')\n"
        "print(vae.decode(vae.encode(torch.randn(3, 4))).shape)\n"
    )
    proc, result = _fix(tmp_path, script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = _one(result, "compile_methods")
    assert f["params"]["methods"] == ["decode", "encode"] and f["verdict"] == "helps"
    assert f["before"]["graphs"] == 0 and f["after"]["graphs"] == 2  # torch's trace of each run
    assert not [x for x in result["fixes"] if x["kind"] == "compile_in_place"]  # it is in place already
