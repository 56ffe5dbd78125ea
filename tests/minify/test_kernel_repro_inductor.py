"""`fxlens minify --kernel` on inductor's C++ kernels: inductor's injected relu faults (accuracy,
compile_error) and a vectorised reduction whose masked tail drops a lane (injected by the script
itself, editing the C++ source inductor generates).

Each reproducer is run where fxlens cannot be imported and must fail the same way; with the fault
taken out of its kernel source (by hand, below: what inductor emits without the fault) it must
pass. The error it reports is checked against an independent computation from its saved inputs.
Each end-to-end test compiles with inductor twice or more (tens of seconds here): slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from schema_check import validate

from fxlens.bisect.verdict import next_command
from fxlens.minify.kernel import run_without_fxlens, same_failure
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
