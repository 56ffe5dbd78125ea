"""`fxlens bisect` on fxlens's own backend with FXLENS_INJECT faults on aten.erf (only in graph 2/0).

The injected fault hits every kernel containing the op, fused or not, so the first failing stage
is fxlens_nofusion, the first stage that generates kernels.
"""

import importlib.util
import json
from pathlib import Path

import pytest
from bisect_helpers import MULTI, SCRIPTS, def_line

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("fxlens.backend.compile_fx") is None,
    reason="fxlens's full backend (fxlens.backend.compile_fx) is not built yet",
)


@pytest.mark.parametrize(
    "kind,train,failure",
    [
        ("accuracy", True, "accuracy"),
        pytest.param("compile_error", False, "crash", marks=pytest.mark.slow),
        pytest.param("runtime_error", False, "crash", marks=pytest.mark.slow),
    ],
)
def test_inject_names_stage_graph_and_kernel(bisect, kind, train, failure):
    args = [MULTI, "fxlens", "--op", "erf", *(["--train"] if train else [])]
    proc, v = bisect(*args, env={"FXLENS_INJECT": f"{kind}:aten.erf"})
    assert proc.returncode == 0, proc.stderr
    assert v["backend"] == "fxlens" and v["first_failing_stage"] == "fxlens_nofusion"
    assert {s["stage"]: s["ok"] for s in v["stages"]} == {
        "fxlens_eager": True,
        "fxlens_aot_eager": True,
        "fxlens_nofusion": False,
    }
    assert v["failure"]["kind"] == failure
    c = v["culprit"]
    assert (c["compile_id"], c["function"], c["line"]) == ("2/0", "block", def_line("block"))
    assert c["kernel"].startswith("fxk_") and "erf" in c["kernel"]
    assert any(op.startswith("aten.erf") for op in c["ops"])
    assert c["kernel"] in proc.stdout and "aten.erf" in proc.stdout
    runs = sorted((Path(v["session"]) / "runs").iterdir())
    assert v["runs"] == len(runs) <= 4 + 2 + 2  # stages + log2(3 graphs) + log2(kernels)
    if kind != "compile_error":  # a kernel that compiled has its Triton source on disk
        assert Path(v["kernel"]["source_path"]).is_file()
    if kind == "accuracy":
        # FXLENS_CHECK_KERNELS saw the divergent kernel: its size is reported
        assert v["kernel"]["max_abs_err"] > 1e-3
        # the kernel run: only the culprit compiled, every other kernel as ATen, still failing
        assert "kernel" in runs[-1].name
        checks = [
            json.loads(ln)
            for ln in (runs[-1] / "events.jsonl").read_text().splitlines()
            if '"phase": "check"' in ln and '"ok": false' in ln
        ]
        assert {c["compile_id"] for c in checks} == {"2/0"}


@pytest.mark.slow  # the demo's bisect; the CLI path runs the same search by default
def test_python_api_for_the_demo(tmp_path, monkeypatch):
    """`bisect_script` (what `fxlens demo` calls): same verdict as the CLI, env passed per call."""
    from fxlens.bisect.command import bisect_script

    monkeypatch.setenv("FXLENS_SESSIONS_DIR", str(tmp_path))
    monkeypatch.delenv("FXLENS_INJECT", raising=False)
    lines = []
    v = bisect_script(
        str(MULTI), ["fxlens", "--op", "erf"], None, "auto", echo=lines.append,
        env={"FXLENS_INJECT": "compile_error:aten.erf"},
    )  # fmt: skip
    assert v["first_failing_stage"] == "fxlens_nofusion" and v["failure"]["kind"] == "crash"
    c = v["culprit"]
    assert c["compile_id"] == "2/0" and "erf" in c["kernel"] and c["ops"] == ["aten.erf.default"]
    assert Path(v["session"]).parent == tmp_path
    assert sum(ln.startswith("  run ") for ln in lines) == v["runs"]


@pytest.mark.slow
def test_fault_only_fusion_triggers_names_the_fusion_decision(bisect):
    proc, v = bisect(SCRIPTS / "fused_fault.py", "fxlens")
    assert proc.returncode == 0, proc.stderr
    # erf fused with its consumer is the trigger: the rung that only inlines producers (vertical
    # fusion, no kernels merged) already fails, and the fusion search runs there
    assert v["first_failing_stage"] == "fxlens_inline"
    assert {s["stage"]: s["ok"] for s in v["stages"]} == {
        "fxlens_eager": True,
        "fxlens_aot_eager": True,
        "fxlens_nofusion": True,
        "fxlens_inline": False,
    }
    c = v["culprit"]
    assert (c["compile_id"], c["function"]) == ("2/0", "block")
    assert "erf" in c["kernel"] and "aten.erf.default" in c["ops"] and len(c["ops"]) > 1
    f = v["fusion"]
    # the first decision of the forward graph fuses erf with its consumer: the fault's trigger
    assert f["decision"] == 1 and f["graph"] == "forward" and f["fused"] and f["a"] == "erf"
    assert f["of"] > 1 and "fusion   decision 1 of" in proc.stdout


def test_inline_rung_fuses_producers_but_merges_no_kernels():
    """The rung's ground truth, by torch.compile with each stage's backend: one kernel per op
    unfused; producers inlined (fewer kernels, each op still in one); everything merged at full."""
    import torch

    from fxlens.backend import compile_fx

    def f(x, y):
        a = torch.erf(x) * 2
        return torch.softmax(a, -1) + (a + y).sum(-1)[:, None]

    x, y = torch.randn(8, 16), torch.randn(8, 16)
    names = {}
    for backend in ("fxlens_nofusion", "fxlens_inline", "fxlens"):
        torch._dynamo.reset()
        out = torch.compile(f, backend=backend)(x, y)
        torch.testing.assert_close(out, f(x, y))
        names[backend] = [k["name"] for k in compile_fx.COMPILED[-1].kernels]
    unfused, inline, full = (len(names[b]) for b in ("fxlens_nofusion", "fxlens_inline", "fxlens"))
    assert unfused > inline > full
    assert any("erf_mul" in n for n in names["fxlens_inline"])  # erf inlined into its consumer
