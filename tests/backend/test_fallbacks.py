"""The lowering boundary: whatever fxlens cannot lower runs as a recorded ATen call, never a crash.

A lowering that raises, a dtype the codegen has no Triton form for (complex), and an op without a
lowering each become an `Extern` whose reason is in the `fxlens_fallbacks` artifact
(`call.fallback_reasons`). Fault injection still raises: FXLENS_INJECT is not a lowering failure.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

aten = torch.ops.aten


def _reasons(graphs) -> dict:
    return {op: why for g in graphs for op, why in g.fallback_reasons.items()}


def test_a_lowering_that_raises_becomes_a_recorded_fallback(compiled, monkeypatch):
    from fxlens.backend.lower import core

    def broken(G, node, meta, *args, **kwargs):
        raise KeyError("no such thing")

    monkeypatch.setitem(core.LOWERINGS, aten.exp.default, broken)
    x = torch.randn(4, 5)
    out, graphs = compiled(lambda x: (x.exp() + 1).relu(), x)
    torch.testing.assert_close(out, (x.exp() + 1).relu())
    why = _reasons(graphs)["aten.exp.default"]
    assert "lowering broken raised KeyError" in why and "test_fallbacks.py" in why
    assert sum(len(g.kernels) for g in graphs) >= 1  # the rest is still compiled


def test_complex_values_fall_back_with_their_dtype_as_reason(compiled):
    x = torch.randn(3, 4)
    out, graphs = compiled(lambda x: (x.cfloat() * 2).real + x.sin(), x)
    torch.testing.assert_close(out, x * 2 + x.sin())
    reasons = _reasons(graphs)
    assert reasons["aten.mul.Tensor"] == "dtype complex64 has no Triton form in fxlens"
    assert reasons["aten.view_as_real.default"] == "no fxlens lowering"


def test_the_fallbacks_artifact_carries_the_reasons(compiled, monkeypatch):
    from fxlens.backend import compile_fx

    logged = []
    monkeypatch.setattr(compile_fx, "log_json", lambda kind, rec: logged.append((kind, rec)))
    compiled(lambda x: torch.linalg.inv(x) + 1, torch.eye(3) * 2)
    recs = [rec for kind, rec in logged if kind == "fallbacks"]
    assert any(rec["reasons"].get("aten.linalg_inv_ex.default") == "no fxlens lowering" for rec in recs)


def test_injected_compile_errors_still_raise(compiled, monkeypatch):
    monkeypatch.setenv("FXLENS_INJECT", "compile_error:aten.erf")
    with pytest.raises(Exception, match="injected compile_error"):
        compiled(lambda x: torch.erf(x) * 2, torch.randn(8))
