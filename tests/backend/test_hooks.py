"""Fault injection (FXLENS_INJECT) and the bisector's hooks (FUSION_LIMIT, KERNEL_FALLBACK,
CHECK_KERNELS), the structured-trace artifacts, and the entry-point backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.triton


def f_erf(x, w):
    a = torch.erf(x) + 1  # the erf kernel
    b = (x @ w[:, :4]) * 2  # an extern, then another kernel (another domain, so never fused with a)
    return a, b


def _run(fn, *args, dynamic=False):
    from fxlens.backend import compile_fx

    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    return torch.compile(fn, backend="fxlens", dynamic=dynamic)(*args), list(compile_fx.COMPILED)


def _inputs():
    torch.manual_seed(0)
    return torch.randn(4, 8), torch.randn(8, 8)


def test_inject_compile_error_names_kernel_op_node_and_source_line(monkeypatch):
    monkeypatch.setenv("FXLENS_INJECT", "compile_error:aten.erf")
    with pytest.raises(Exception) as ei:
        _run(f_erf, *_inputs())
    msg = str(ei.value)
    assert "injected compile_error" in msg and "fxk_inference_" in msg
    assert "aten.erf.default" in msg and "FX node erf" in msg and "While executing" in msg
    assert "test_hooks.py" in msg and "torch.erf(x) + 1" in msg  # the user's source line


def test_inject_compile_error_only_where_op_is(monkeypatch):
    monkeypatch.setenv("FXLENS_INJECT", "compile_error:aten.erf")
    x = torch.randn(4, 8)
    (out, graphs) = _run(lambda x: x.sin() * 2, x)
    torch.testing.assert_close(out, x.sin() * 2)


def test_inject_runtime_error_at_launch(monkeypatch):
    monkeypatch.setenv("FXLENS_INJECT", "runtime_error:aten.erf")
    from fxlens.backend import compile_fx

    torch._dynamo.reset()
    fn = torch.compile(f_erf, backend="fxlens")
    with pytest.raises(RuntimeError, match=r"injected runtime_error launching kernel fxk_inference_\d+_erf"):
        fn(*_inputs())
    assert compile_fx.COMPILED, "compilation itself succeeded"


def test_inject_accuracy_perturbs_only_that_kernel(monkeypatch):
    monkeypatch.setenv("FXLENS_INJECT", "accuracy:aten.erf")
    x, w = _inputs()
    (a, b), graphs = _run(f_erf, x, w)
    ra, rb = f_erf(x, w)
    torch.testing.assert_close(b, rb)  # the other kernel is untouched
    torch.testing.assert_close(a, ra + 1.0)  # the erf kernel's output is off by exactly 1


def test_inject_malformed_is_rejected(monkeypatch):
    monkeypatch.setenv("FXLENS_INJECT", "explode:aten.erf")
    with pytest.raises(Exception, match="FXLENS_INJECT"):
        _run(f_erf, *_inputs())


def test_kernel_fallback_by_index_and_name_undoes_accuracy_fault(monkeypatch):
    monkeypatch.setenv("FXLENS_INJECT", "accuracy:aten.erf")
    x, w = _inputs()
    (a, _), graphs = _run(f_erf, x, w)
    name = next(k["name"] for k in graphs[0].kernels if "aten.erf.default" in k["ops"])
    index = [k["name"] for k in graphs[0].kernels].index(name)
    for spec in (name, f"inference:{index}", str(index)):
        monkeypatch.setenv("FXLENS_KERNEL_FALLBACK", spec)
        (a, b), _ = _run(f_erf, x, w)
        torch.testing.assert_close(a, f_erf(x, w)[0])  # ran as ATen: correct again
    monkeypatch.setenv("FXLENS_KERNEL_FALLBACK", f"backward:{index}")  # other graph: no effect
    (a, _), _ = _run(f_erf, x, w)
    torch.testing.assert_close(a, f_erf(x, w)[0] + 1.0)


def _gelu_ln(x):
    return torch.nn.functional.layer_norm(torch.nn.functional.gelu(x * 2 + 1), (16,)).sum(-1)


def test_fusion_limit_replays_first_n_decisions(monkeypatch):
    x = torch.randn(8, 16)
    (out, graphs) = _run(_gelu_ln, x)
    full = graphs[0]
    fused = [d for d in full.decisions if d["fused"]]
    assert len(fused) >= 3 and len(full.kernels) == 1
    counts = []
    for n in (0, 1, len(full.decisions)):
        monkeypatch.setenv("FXLENS_FUSION_LIMIT", str(n))
        out_n, g = _run(_gelu_ln, x)
        torch.testing.assert_close(out_n, _gelu_ln(x), atol=1e-5, rtol=1e-5)
        applied = [d for d in g[0].decisions if d["fused"]]
        assert len(applied) <= n
        assert all(d["index"] < n for d in applied)
        counts.append(len(g[0].kernels))
    assert counts[0] > counts[1] >= counts[2] == 1


def test_nofusion_stage_one_kernel_per_op():
    from fxlens.backend import compile_fx

    x = torch.randn(8, 16)
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    out = torch.compile(_gelu_ln, backend="fxlens_nofusion")(x)
    torch.testing.assert_close(out, _gelu_ln(x), atol=1e-5, rtol=1e-5)
    g = compile_fx.COMPILED[-1]
    assert g.decisions == [] and len(g.kernels) >= 8


def test_check_kernels_logs_errors_and_flags_bad_kernel(monkeypatch):
    from fxlens.backend import runtime

    logged = []
    monkeypatch.setattr(runtime, "log_json", lambda name, obj: logged.append((name, obj)))
    monkeypatch.setenv("FXLENS_CHECK_KERNELS", "1")
    monkeypatch.setenv("FXLENS_INJECT", "accuracy:aten.erf")
    x, w = _inputs()
    _run(f_erf, x, w)
    assert {n for n, _ in logged} == {"kernel_check"}
    by_ok = {o["name"]: o for _, o in logged}
    bad = [o for o in by_ok.values() if not o["ok"]]
    good = [o for o in by_ok.values() if o["ok"]]
    assert len(bad) == 1 and "aten.erf.default" in bad[0]["ops"] and abs(bad[0]["max_abs_err"] - 1.0) < 1e-5
    assert good and all(o["max_abs_err"] < 1e-5 for o in good)
    assert set(bad[0]) == {"graph", "name", "ops", "max_abs_err", "max_rel_err", "ok"}


def test_hooks_on_a_scratch_buffer_kernel(monkeypatch):
    """histc's first kernel fills zeros no FX node computes: the hooks run it as it is (nothing to
    replay or check) and replay or check the counting kernel against aten.histc."""
    from fxlens.backend import runtime

    def f(x):
        return torch.histc(x * 1.5, bins=7, min=-3, max=3)

    x = torch.randn(300, generator=torch.Generator().manual_seed(0)) * 3
    for index in (0, 1):
        monkeypatch.setenv("FXLENS_KERNEL_FALLBACK", f"inference:{index}")
        out, graphs = _run(f, x)
        assert torch.equal(out, f(x)) and len(graphs[0].kernels) == 2
    monkeypatch.delenv("FXLENS_KERNEL_FALLBACK")
    logged = []
    monkeypatch.setattr(runtime, "log_json", lambda name, obj: logged.append(obj))
    monkeypatch.setenv("FXLENS_CHECK_KERNELS", "1")
    out, _ = _run(f, x)
    assert torch.equal(out, f(x))
    assert [(o["ops"], o["ok"]) for o in logged] == [(["aten.mul.Tensor", "aten.histc.default"], True)]


_G = torch.Generator().manual_seed(0)
# what the op_db sweep under FXLENS_CHECK_KERNELS crashed on (7 ops), one small case each
HOOK_CASES = {
    # topk's first kernel writes the sort permutation, labelled with topk's node (a tuple): scratch
    "tuple_output": (lambda x: torch.topk(x * 2, 2), (torch.randn(5, 5, generator=_G),)),
    # index_fill's fill value is a float32 constant: the fp64 replay mixed it into fp64 index_put
    "fp64_constant": (
        lambda x: x.index_fill(0, torch.tensor([1, 3]), -2.5) + 1,
        (torch.randn(5, 4, generator=_G),),
    ),
    # a strided input is a kernel parameter: the check's snapshot must keep its storage layout
    "strided_input": (lambda x: x * 2 + 1, (torch.randn(10, generator=_G)[::2],)),
}


@pytest.mark.parametrize("case", sorted(HOOK_CASES))
def test_hooks_replay_what_the_op_db_sweep_crashed_on(monkeypatch, case):
    from fxlens.backend import runtime

    fn, args = HOOK_CASES[case]
    logged: list = []
    monkeypatch.setattr(runtime, "log_json", lambda name, obj: logged.append(obj))
    monkeypatch.setenv("FXLENS_CHECK_KERNELS", "1")
    out, graphs = _run(fn, *args)
    torch.testing.assert_close(out, fn(*args))
    assert logged and all(o["ok"] for o in logged), logged
    monkeypatch.delenv("FXLENS_CHECK_KERNELS")
    monkeypatch.setenv("FXLENS_KERNEL_FALLBACK", ",".join(map(str, range(len(graphs[0].kernels)))))
    out, _ = _run(fn, *args)
    torch.testing.assert_close(out, fn(*args))


def test_check_compares_no_uninitialized_memory(monkeypatch):
    """torch.empty's values are garbage in the kernel and in its replay alike: the op_db sweep saw
    empty_like and new_empty flagged as wrong (max abs err ~5e19). Such kernels are not compared."""
    from fxlens.backend import runtime

    logged: list = []
    monkeypatch.setattr(runtime, "log_json", lambda name, obj: logged.append(obj))
    monkeypatch.setenv("FXLENS_CHECK_KERNELS", "1")
    x = torch.randn(6, 5, generator=_G)
    (garbage, y), graphs = _run(lambda x: (torch.empty_like(x[:, :2]), x * 3), x)
    assert garbage.shape == (6, 2) and torch.equal(y, x * 3) and len(graphs[0].kernels) == 2
    assert [o["ok"] for o in logged] == [True] and logged[0]["ops"] == ["aten.mul.Tensor"]


ROOT = Path(__file__).resolve().parents[2]


def _trace_records(tmp_path: Path) -> list[tuple[dict, str]]:
    recs = []
    for log in tmp_path.glob("trace/*.log"):
        lines = log.read_text().splitlines()
        for i, line in enumerate(lines):
            if '"artifact"' in line and "fxlens_" in line:
                head = json.loads(line[line.index("{") :])
                payload = []
                for nxt in lines[i + 1 :]:
                    if not nxt.startswith("\t"):
                        break
                    payload.append(nxt[1:])
                recs.append((head, "\n".join(payload)))
    return recs


def test_artifacts_in_torch_trace_with_compile_ids(tmp_path):
    script = textwrap.dedent(
        """
        import torch
        m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16))
        y = torch.compile(m, backend="fxlens")(torch.randn(4, 8))
        y.sum().backward()
        """
    )
    env = {**os.environ, "TORCH_TRACE": str(tmp_path / "trace")}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=tmp_path, timeout=300)
    recs = _trace_records(tmp_path)
    by_name: dict = {}
    for head, payload in recs:
        assert "frame_id" in head and "frame_compile_id" in head, head
        by_name.setdefault(head["artifact"]["name"], []).append((head, payload))
    for graph in ("forward", "backward"):
        assert f"fxlens_aten_{graph}_graph" in by_name
    for name in ("fxlens_ir", "fxlens_fusion", "fxlens_kernel", "fxlens_fallbacks", "fxlens_wrapper"):
        assert name in by_name, sorted(by_name)
    kernels = [json.loads(p) for _, p in by_name["fxlens_kernel"]]
    assert {k["graph"] for k in kernels} == {"forward", "backward"}
    keys = {
        "graph",
        "name",
        "ops",
        "nodes",
        "bytes_read",
        "bytes_written",
        "numel",
        "rnumel",
        "source",
        "source_path",
    }
    for k in kernels:
        extra = {"signature", "blocks", "symbolic", "bytes_reread", "recomputed"}
        assert keys <= set(k) and set(k) - keys <= extra, sorted(k)
        assert set(k["signature"]) >= {"xnumel", "rnumel"} and len(k["blocks"]) == 2
        assert (
            k["name"].startswith(f"fxk_{k['graph']}_")
            and k["ops"]
            and all(o.startswith(("aten.", "prims.")) for o in k["ops"])
        )
        assert k["bytes_read"] > 0 and k["bytes_written"] > 0 and "@triton.jit" in k["source"]
        assert Path(k["source_path"]).read_text() == k["source"]
    fusion = [json.loads(p) for _, p in by_name["fxlens_fusion"]]
    assert {f["graph"] for f in fusion} == {"forward", "backward"}
    d = fusion[0]["decisions"][0]
    assert set(d) == {"index", "fused", "a", "b", "reason"}
    falls = [json.loads(p) for _, p in by_name["fxlens_fallbacks"]]
    assert any(f["ops"].get("aten.addmm.default") for f in falls)
    assert any(f["ops"].get("aten.mm.default") for f in falls if f["graph"] == "backward")
    bw = [h for h, _ in by_name["fxlens_kernel"] if '"backward"' in _]
    assert all(h["frame_id"] == 0 and h["frame_compile_id"] == 0 for h in bw)


def test_entry_point_without_importing_fxlens(tmp_path):
    script = textwrap.dedent(
        """
        import sys, torch
        assert not any(m == "fxlens" or m.startswith("fxlens.") for m in sys.modules)
        x = torch.randn(16)
        out = torch.compile(lambda x: torch.sin(x) * 2 + 1, backend="fxlens")(x)
        torch.testing.assert_close(out, torch.sin(x) * 2 + 1)
        from fxlens.backend import compile_fx
        assert compile_fx.COMPILED and compile_fx.COMPILED[-1].kernels
        print("ok", len(compile_fx.COMPILED[-1].kernels))
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok 1")
