"""The per-graph accuracy check on correct scripts: no stage of either ladder may fail it.

Each case is a correct training (or inference) step whose graphs see their inputs in a way a naive
check gets wrong: a graph after a break whose input is an earlier graph's output, a module shared
across graphs, duplicated and aliased inputs, inputs mutated in place, batch norm's running stats,
a `no_grad` region. The bisect wrapper backend runs in-process with each stage, and every `check`
event it records must pass. Ground truth is eager PyTorch, asserted in `test_cases_are_correct`.
A negative control (a backend that breaks one gradient after a break) shows the check still bites.
"""

import json

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from fxlens.bisect import backend as wrapper_mod  # noqa: E402


class LayerNormTwice(nn.Module):
    """The issue's shape: one LayerNorm used twice with a print (a graph break) between."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        y = self.ln(x)
        print("break")
        return self.fc(self.ln(y + x))


class SharedAcrossBreak(nn.Module):
    """One Linear in both graphs; the second graph's input is the first graph's output."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.tanh(self.fc(x))
        torch._dynamo.graph_break()
        return self.fc(h) * h


class BatchNormTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        h = self.bn(self.fc(x))
        torch._dynamo.graph_break()
        return torch.relu(self.bn(h))


def mutated_nonleaf(x):
    y = x * 2
    torch._dynamo.graph_break()
    y.add_(1)  # the second graph mutates an earlier graph's output in place
    return y.sin() * x


def aliased(base):
    a, b = base[:4], base[2:]  # overlapping views of one storage: the graph gets both
    return _aliased_inner(a, b, base)


def _aliased_inner(a, b, base):
    a.mul_(2)  # seen through b and base as well
    return b.sum() + base.cos().sum()


def duplicated(x):
    return _dup_inner(x, x)


def _dup_inner(p, q):
    p.add_(1)
    return q * 3


def _train(model_fn, seed=0):
    torch.manual_seed(seed)
    model = model_fn()
    x = torch.randn(6, model.fc.in_features if hasattr(model, "fc") else 16, requires_grad=True)
    return model, x


def _run_case(case: str, compile_fn):
    """Run one case with `compile_fn` (identity for eager); return every tensor it produced."""
    torch.manual_seed(0)
    if case in ("layernorm_twice", "shared_across_break", "batchnorm_train"):
        model = {"layernorm_twice": LayerNormTwice, "shared_across_break": SharedAcrossBreak}.get(
            case, BatchNormTrain
        )()
        width = 16 if case == "layernorm_twice" else 8
        x = torch.randn(6, width, requires_grad=True)
        step = compile_fn(model)
        outs = [step(x), step(x * 0.5)]
        sum(o.sum() for o in outs).backward()
        extra = [b.clone() for b in model.buffers()]
        return [*outs, x.grad, *(p.grad for p in model.parameters()), *extra]
    if case == "no_grad":
        model = LayerNormTwice()
        with torch.no_grad():
            return [compile_fn(model)(torch.randn(3, 16))]
    if case == "mutated_nonleaf":
        x = torch.randn(5, requires_grad=True)
        out = compile_fn(mutated_nonleaf)(x)
        out.sum().backward()
        return [out, x.grad]
    fn, base = {"aliased": (aliased, torch.randn(6)), "duplicated": (duplicated, torch.randn(4))}[case]
    out = compile_fn(fn)(base)
    return [out, base]


CASES = (
    "layernorm_twice",
    "shared_across_break",
    "batchnorm_train",
    "no_grad",
    "mutated_nonleaf",
    "aliased",
    "duplicated",
)
FAST_STAGES = ("fxlens_eager", "fxlens_aot_eager", "eager", "aot_eager", "aot_eager_decomp_partition")


def _checked(case: str, stage: str, tmp_path, monkeypatch, backend_fn=None) -> list[dict]:
    """Run `case` through the bisect wrapper with `stage` under test; return its check events."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("FXLENS_SESSION", str(tmp_path))
    monkeypatch.setenv("FXLENS_BISECT_STAGE", stage)
    monkeypatch.setenv("FXLENS_BISECT_CHECK", "accuracy")
    if backend_fn is not None:
        monkeypatch.setitem(wrapper_mod._backends, stage, backend_fn)
    torch._dynamo.reset()
    try:
        _run_case(case, lambda f: torch.compile(f, backend=wrapper_mod.wrapper))
    finally:
        torch._dynamo.reset()
    events = [json.loads(ln) for ln in (tmp_path / "events.jsonl").read_text().splitlines()]
    return [e for e in events if e.get("event") == "bisect_graph" and e.get("phase") == "check"]


def _assert_all_pass(checks: list[dict], case: str) -> None:
    assert checks, "no graph was checked"
    assert not [c for c in checks if c.get("skipped")], checks
    bad = [c for c in checks if not c["ok"]]
    assert not bad, f"{case}: a correct script failed the check: {bad}"


@pytest.mark.parametrize("case", CASES)
def test_cases_are_correct(case):
    """Ground truth: torch.compile(backend="eager") gives eager's numbers on every case."""
    torch._dynamo.reset()
    ref = _run_case(case, lambda f: f)
    got = _run_case(case, lambda f: torch.compile(f, backend="eager"))
    torch._dynamo.reset()
    assert len(ref) == len(got)
    for r, g in zip(ref, got, strict=True):
        torch.testing.assert_close(g, r, rtol=0, atol=0)


@pytest.mark.parametrize("stage", FAST_STAGES)
@pytest.mark.parametrize("case", CASES)
def test_correct_script_passes_every_stage(case, stage, tmp_path, monkeypatch):
    checks = _checked(case, stage, tmp_path, monkeypatch)
    _assert_all_pass(checks, case)
    if case not in ("no_grad", "aliased", "duplicated"):
        # the gradients were compared, not silently skipped
        assert any(d["what"].startswith("grad") for c in checks for d in c["divergences"])


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["fxlens_nofusion", "fxlens", "inductor"])
def test_correct_script_passes_codegen_stages(stage, tmp_path, monkeypatch):
    # the code-generating stages (Triton interpreter, C++): the case and batch norm only
    for case in ("layernorm_twice", "batchnorm_train"):
        _assert_all_pass(_checked(case, stage, tmp_path / case, monkeypatch), case)


def _wrong_grad_in_second_graph():
    ordinal = {"n": 0}

    def backend(gm, example_inputs):
        ordinal["n"] += 1
        if ordinal["n"] == 1:
            return gm

        def run(*args):
            outs = gm(*args)
            if isinstance(outs, tuple | list):
                return type(outs)(o + (o - o.detach()) * 0.5 for o in outs)
            return outs + (outs - outs.detach()) * 0.5  # same values, gradient 1.5x

        return run

    return backend


def test_a_wrong_gradient_after_a_break_is_still_caught(tmp_path, monkeypatch):
    checks = _checked("layernorm_twice", "bad_backend", tmp_path, monkeypatch, _wrong_grad_in_second_graph())
    by_graph = {c["ordinal"]: c["ok"] for c in checks}
    assert list(by_graph.values()) == [True, False]
    bad = next(c for c in checks if not c["ok"])
    assert all(d["what"].startswith("grad") for d in bad["divergences"])
