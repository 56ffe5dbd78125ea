"""`fxlens minify --kernel` on inductor's C++ kernels: inductor's injected relu faults (accuracy,
compile_error), a vectorised reduction whose masked tail drops a lane and a max whose int64 indices
come back zero (both planted by the script itself, editing the C++ source inductor generates), and
a real kernel that aborts the process (pytorch/pytorch#195402, as reported).

Each reproducer is run where fxlens cannot be imported and must fail the same way; with the fault
taken out of its kernel source (by hand, below: what inductor emits without the fault) it must
pass. The error it reports is checked against an independent computation from its saved inputs.
Each end-to-end test compiles with inductor twice or more (tens of seconds here): slow.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from schema_check import validate

from fxlens.bisect.verdict import next_command
from fxlens.minify import kernel_writer
from fxlens.minify.kernel import _why_none, run_without_fxlens, same_failure
from fxlens.minify.kernel_inductor import kernel_block, launch_line
from fxlens.minify.repro_writer import FXLENS_IMPORT

from .conftest import SCRIPTS

# a kernel as inductor 2.13's output code defines and launches it (trimmed)
OUTPUT_CODE = """
cpp_fused_relu_3 = async_compile.cpp_pybinding(['float*'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0)
{
}
''')


async_compile.wait(globals())

class Runner:
    def call(self, args):
        buf13 = buf12; del buf12  # reuse
        cpp_fused_relu_3(buf13)
        return (buf13, )
"""


def test_output_code_pieces_and_signatures():
    block = kernel_block(OUTPUT_CODE, "cpp_fused_relu_3")
    assert block.startswith("cpp_fused_relu_3 = async_compile.cpp_pybinding(['float*'], r'''")
    assert block.endswith("''')") and 'extern "C"' in block
    assert launch_line(OUTPUT_CODE, "cpp_fused_relu_3") == "cpp_fused_relu_3(buf13)"
    assert kernel_block(OUTPUT_CODE, "cpp_fused_relu_4") is None
    status = {"failure": {"op": "aten.relu.default"}}
    sig = "fxlens-signature: accuracy: cpp_fused_relu_3 output 0 (aten.relu.default)"
    assert same_failure(1, f"FAIL: ...\n{sig}\n", status)
    assert not same_failure(0, sig, status) and not same_failure(1, sig.replace("relu.", "add."), status)
    err = {"error": "CppCompileError: C++ compile error"}
    assert same_failure(1, "...\nfxlens-signature: raise: CppCompileError\nTraceback ...", err)
    assert not same_failure(1, "fxlens-signature: raise: RuntimeError", err)


def test_integer_outputs_compare_exactly():
    compare = kernel_writer.helpers()["compare"]
    big = torch.tensor([2**53 + 1, 7])
    off = torch.tensor([2**53, 7])
    assert big.double().tolist() == off.double().tolist()  # in float64 the two are one value
    ok, err, at, got, want, tol = compare(big, off)
    assert (ok, err, at, got, want, tol) == (False, 1.0, (0,), 2**53 + 1, 2**53, 0.0)
    assert compare(big, big.clone())[0]
    mask = torch.tensor([[True, False], [False, True]])
    assert compare(mask, ~mask)[:3] == (False, 1.0, (0, 0))


def test_a_crash_is_named_never_no_kernel_failed(tmp_path):
    log = tmp_path / "script.log"
    status = {"launches": {"k": 2}, "inflight": {"kernel": "k", "launch": 3}, "crash_rerun": "exit 0"}
    why = _why_none(status, None, -6, log)
    assert why.startswith("the script was killed by SIGABRT in launch 3 of kernel k, the failure")
    assert "exit 0" in why and "no kernel failed" not in why
    why = _why_none({"launches": {"k": 2}}, None, -11, log)
    assert why.startswith("the script was killed by SIGSEGV outside the kernel launches watched")
    unchecked = {"launches": {"k": 2, "j": 1}, "unchecked": {"j": "Unwritable: no output"}}
    why = _why_none(unchecked, None, 1, log)
    assert "2 kernel launch(es) agree" in why and "1 launch(es) of j could not be checked" in why
    crash = {"crash": {"exit": -6}}
    sig = "fxlens-signature: crash: k ends the process"
    assert same_failure(-6, sig, crash) and not same_failure(-11, sig, crash)
    assert not same_failure(1, sig, crash) and not same_failure(-6, "", crash)


def test_bisect_next_line_names_the_kernel_reproducer():
    r = {
        "first_failing_stage": "fxlens_nofusion",
        "outcome": "fails",
        "failure": {"kind": "accuracy"},
        "kernel": {"name": "fxk_forward_0_erf"},
    }
    assert next_command(r, "demo.py", ["--n", "3"]) == (
        "fxlens minify --kernel --kernel-name fxk_forward_0_erf --backend fxlens_nofusion demo.py --n 3"
    )
    r["kernel"] = None  # no kernel named (inductor's stages): the graph minifier, as before
    assert next_command(r, "demo.py", []).startswith(
        "fxlens minify --backend fxlens_nofusion --check accuracy"
    )


def _minify_kernel(tmp_path: Path, script: Path, *args: str, env: dict | None = None) -> dict:
    js = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "minify", "--kernel", "--json", str(js), "--out",
         str(tmp_path / "repro") + "/", str(script), *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env={**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions"), **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads(js.read_text())
    validate("minify_kernel", r)
    text = Path(r["repro"]).read_text()
    assert not any(FXLENS_IMPORT.match(ln) for ln in text.splitlines())
    assert "AsyncCompile()" in text and "cpp_pybinding" in text  # inductor's own loader
    return r


def _fails_then_passes(r: dict, bad: str, good: str, signature: str) -> None:
    """The reproducer fails without fxlens; with `bad` replaced by `good` in its kernel, it passes."""
    path = Path(r["repro"])
    code, out = run_without_fxlens(path)
    assert code == 1 and f"fxlens-signature: {signature}" in out, out[-3000:]
    text = path.read_text()
    assert text.count(bad) == 1
    fixed = path.with_name("fixed_" + path.name)
    fixed.write_text(text.replace(bad, good))
    if path.with_suffix(".pt").exists():
        fixed.with_suffix(".pt").write_bytes(path.with_suffix(".pt").read_bytes())
    code, out = run_without_fxlens(fixed)
    assert code == 0 and "ok:" in out, out[-3000:]


RELU_VEC = "at::vec::clamp_min(tmp0, decltype(tmp0)(0))"  # inductor's vectorised relu


@pytest.mark.slow
def test_inductor_relu_accuracy_kernel(tmp_path):
    r = _minify_kernel(tmp_path, SCRIPTS / "inductor_relu.py", "accuracy", "2")
    assert r["kernel"].startswith("cpp_fused_relu_") and r["ops"] == ["aten.relu.default"]
    assert (r["check"], r["reproduced"], r["compile_id"]) == ("accuracy", "1/1", "0/0")
    assert "mlp.py" in r["user_line"] and "relu" in r["user_line"]
    # inductor's fault computes x + 1 instead of relu(x): the error, from the saved inputs
    (x,) = torch.load(Path(r["repro"]).with_suffix(".pt"), weights_only=True)["params"]
    x = x.double()
    assert r["failure"]["max_abs_err"] == pytest.approx(float((x + 1 - x.relu()).abs().max()), abs=1e-5)
    _fails_then_passes(
        r, "tmp0 + decltype(tmp0)(1)", RELU_VEC, f"accuracy: {r['kernel']} output 0 (aten.relu.default)"
    )


@pytest.mark.slow
def test_inductor_relu_compile_error_kernel(tmp_path):
    r = _minify_kernel(tmp_path, SCRIPTS / "inductor_relu.py", "compile_error", "2")
    assert r["kernel"].startswith("cpp_fused_relu_") and r["check"] == "raise"
    assert r["error"].startswith("CppCompileError") and r["reproduced"] == "1/1"
    _fails_then_passes(r, "compile error!", RELU_VEC, "raise: CppCompileError")


@pytest.mark.slow
def test_inductor_vectorised_sum_tail_kernel(tmp_path):
    r = _minify_kernel(tmp_path, SCRIPTS / "inductor_vec_sum.py", env={"BUG": "1"})
    assert "aten.sum.dim_IntList" in r["ops"] and r["failure"]["op"] == "aten.rsqrt.default"
    # the bug drops the last of each row's 20 elements: the error, from the saved inputs
    params = torch.load(Path(r["repro"]).with_suffix(".pt"), weights_only=True)["params"]
    x = next(p for p in params if p.dim() == 2).double()
    bugged = torch.rsqrt((x[:, :19] ** 2).sum(1) / 20 + 1e-6)
    exact = torch.rsqrt((x**2).sum(1) / 20 + 1e-6)
    assert r["failure"]["max_abs_err"] == pytest.approx(float((bugged - exact).abs().max()), rel=1e-3)
    _fails_then_passes(
        r,
        "static_cast<int64_t>(3L))",
        "static_cast<int64_t>(4L))",
        f"accuracy: {r['kernel']} output 0 (aten.rsqrt.default)",
    )


def _script(script: Path, env: dict) -> subprocess.CompletedProcess:
    """The script run plainly, in a fresh interpreter (ground truth without fxlens)."""
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600,
        env={**os.environ, "TORCHINDUCTOR_FX_GRAPH_CACHE": "0", **env}, cwd=script.parent,
    )  # fmt: skip


ZERO_INDEX = "(tmp_acc1_vec, tmp3, static_cast<int64_t>(0L),"  # the planted index


@pytest.mark.slow
def test_inductor_int64_index_output_kernel(tmp_path):
    # the shape of pytorch/pytorch#178964 (max(dim=1) on a transposed sum: indices all zero),
    # planted (torch 2.13 has it fixed); before, "no kernel failed: 1 launch(es) agree": the
    # indices' buffer is a getitem of max.dim, outside the kernel's nodes, so nothing was compared
    script = SCRIPTS / "inductor_max_index.py"
    plain = _script(script, {"BUG": "1"})
    assert plain.returncode == 1 and "compiled indices: [0, 0, 0, 0, 0, 0, 0, 0]" in plain.stdout
    assert _script(script, {"BUG": "1", "BACKEND": "eager"}).returncode == 0
    r = _minify_kernel(tmp_path, script, env={"BUG": "1"})
    assert r["ops"] == ["aten.add.Tensor", "aten.max.dim"] and r["check"] == "accuracy"
    assert r["failure"]["op"] == "aten.max.dim[1]" and r["reproduced"] == "1/1"
    # the error, from the saved inputs: the kernel wrote 0 where eager's index is
    a, b = torch.load(Path(r["repro"]).with_suffix(".pt"), weights_only=True)["params"][:2]
    want = (a + b).max(dim=1).indices
    assert r["failure"]["max_abs_err"] == float(want.abs().max())
    assert r["failure"]["kernel"] == 0 and r["failure"]["eager"] == int(want.abs().max())
    sig = f"accuracy: {r['kernel']} output 1 (aten.max.dim[1])"
    _fails_then_passes(r, ZERO_INDEX, "(tmp_acc1_vec, tmp3, x1 + x1_inner,", sig)


@pytest.mark.slow
def test_inductor_kernel_that_aborts(tmp_path):
    # pytorch/pytorch#195402 as reported: an out-of-bounds index aborts inductor's parallel C++
    # kernel; before, "the script was killed by SIGABRT ... cannot write a kernel reproducer"
    script = Path(__file__).parents[1] / "reports" / "scripts" / "index_oob_abort.py"
    assert _script(script, {}).returncode == -signal.SIGABRT
    assert _script(script, {"BACKEND": "eager"}).returncode == 0  # eager raises IndexError, caught
    r = _minify_kernel(tmp_path, script, "--backend", "inductor")
    assert r["check"] == "crash" and r["reproduced"] == "1/1"
    assert r["crash"] == {"exit": -signal.SIGABRT, "signal": "killed by SIGABRT", "launch": 1}
    assert r["ops"] == ["aten.sub.Tensor", "aten.index.Tensor"] and "(x - 0.5)[idx]" in r["user_line"]
    code, out = run_without_fxlens(r["repro"])
    assert code == -signal.SIGABRT and f"fxlens-signature: crash: {r['kernel']}" in out, out[-2000:]
    assert "index out of bounds" in out  # inductor's own message, from the kernel
    code, out = run_without_fxlens(r["repro"], args=["--eager"])
    assert code == 0 and "eager raises IndexError: index 1 is out of bounds" in out, out[-2000:]
