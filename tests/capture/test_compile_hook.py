"""One hook on torch.compile for capture and doctor (issue 23.2): with both registered, torch.compile
is wrapped once, every call is recorded once and timed once, at the user's line, in each of the
three forms scripts use (call, decorator, torch 2.0's `torch._dynamo.optimize(backend)(fn)`)."""

import inspect
import json

import pytest

torch = pytest.importorskip("torch")

from fxlens.capture.compile_hook import observe  # noqa: E402
from fxlens.capture.runner import patch_compile  # noqa: E402
from fxlens.probe import hook as probe  # noqa: E402


class Net(torch.nn.Module):
    def forward(self, x):
        return x + 1


def scale(x):
    return x * 2


@pytest.fixture
def fresh_torch_compile(monkeypatch):
    """torch.compile and torch._dynamo.optimize as torch has them, restored after the test."""
    monkeypatch.setattr(torch, "compile", torch.compile)
    monkeypatch.setattr(torch._dynamo, "optimize", torch._dynamo.optimize)
    monkeypatch.setattr(probe, "_STATE", probe._State())
    torch._dynamo.reset()
    yield torch.compile, torch._dynamo.optimize
    torch._dynamo.reset()


def _events(session) -> list[dict]:
    return [json.loads(ln) for ln in (session / "events.jsonl").read_text().splitlines()]


def test_capture_and_doctor_share_one_wrapper(tmp_path, fresh_torch_compile):
    real_compile, real_optimize = fresh_torch_compile
    observe("doctor", wrap=probe.wrap)
    patch_compile(None, __file__, str(tmp_path))
    patch_compile(None, __file__, str(tmp_path))  # again (a forked re-run): replaces, never stacks
    assert torch.compile.__wrapped__ is real_compile
    assert torch._dynamo.optimize.__wrapped__ is real_optimize

    @torch.compile(backend="eager")
    def inc(x):
        return x + 1

    line_dec = inspect.currentframe().f_lineno - 4
    old = torch._dynamo.optimize("eager")(scale)
    line_old = inspect.currentframe().f_lineno - 1
    net = torch.compile(Net(), backend="eager")
    line_net = inspect.currentframe().f_lineno - 1
    x = torch.ones(3)
    assert torch.equal(inc(x), x + 1) and torch.equal(old(x), x * 2) and torch.equal(net(x), x + 1)

    calls = [e for e in _events(tmp_path) if e["event"] == "compile_call"]
    assert [(c["api"], c["line"], c["backend"]) for c in calls] == [
        ("torch.compile", line_dec, "eager"),
        ("torch._dynamo.optimize", line_old, "eager"),
        ("torch.compile", line_net, "eager"),
    ]
    records = probe._STATE.records
    assert [(r.name.split(".<locals>.")[-1], r.at_line, r.at_file, r.calls) for r in records] == [
        ("inc", line_dec, __file__, 1),
        ("scale", line_old, __file__, 1),
        ("Net.forward", line_net, __file__, 1),
    ]


def test_override_reaches_the_compile_that_doctor_times(tmp_path, fresh_torch_compile):
    seen = []

    def override(gm, example_inputs):
        seen.append(len(gm.graph.nodes))
        return gm.forward

    observe("doctor", wrap=probe.wrap)
    patch_compile(override, __file__, str(tmp_path))
    fn = torch.compile(scale, backend="inductor")
    assert torch.equal(fn(torch.ones(4)), torch.ones(4) * 2)
    assert seen, "the override compiled the graph, not inductor"
    (call,) = [e for e in _events(tmp_path) if e["event"] == "compile_call"]
    assert call["backend"] == "inductor" and call["override"] is True
    (rec,) = probe._STATE.records
    assert rec.calls == 1 and rec.options["backend"] == "override"


def _make_scale(k):
    def f(x):
        return x * k

    return f


def _compiles(torch_compile, backends) -> int:
    """Graphs compiled for two closures of one code object, compiled with `backends` (a pair)."""
    k = torch.tensor(2.0)  # a tensor closure: guards pass for both, so only the backend decides
    x = torch.ones(3)
    for backend in backends:
        torch_compile(_make_scale(k), backend=backend)(x)
    return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(_make_scale(k).__code__))


@pytest.mark.parametrize("shared", [True, False], ids=["one backend", "two backends"])
def test_override_keeps_the_scripts_backend_per_call_site(tmp_path, fresh_torch_compile, shared):
    """Issue 34: Dynamo reuses a cached graph only for an equal backend, so an override must give
    one object wherever the script passed one, and distinct ones where it passed distinct ones."""
    real_compile, _ = fresh_torch_compile

    def backend(gm, example_inputs):
        return gm.forward

    def other(gm, example_inputs):
        return gm.forward

    pair = (backend, backend) if shared else (backend, other)
    truth = _compiles(real_compile, pair)  # without fxlens: torch's own sharing
    assert truth == (1 if shared else 2)
    torch._dynamo.reset()
    compiled = []

    def override(gm, example_inputs):
        compiled.append(gm)
        return gm.forward

    patch_compile(override, __file__, str(tmp_path))
    assert _compiles(torch.compile, pair) == truth == len(compiled)
    torch._dynamo.reset()
    # a backend that asks per call (bisect's and minify's wrappers): one per backend of the script
    made = []

    def per_call(gm, example_inputs):
        raise AssertionError("for_asked's backend is used")

    def for_asked(asked, backend):
        made.append(backend)
        return override

    per_call.for_asked = for_asked
    patch_compile(per_call, __file__, str(tmp_path))
    for b in (*pair, *pair):
        torch.compile(scale, backend=b)
    assert made == list(dict.fromkeys(pair))  # the script's own objects, one call each


@pytest.mark.parametrize("shared", [True, False], ids=["one backend", "two backends"])
def test_backend_inductor_keeps_the_scripts_backends_apart(tmp_path, fresh_torch_compile, shared):
    """Issue 34: torch's inductor wrappers compare equal, so `--backend inductor` gave two backends
    the script kept apart one shared graph. Ground truth: the same pair compiled by plain torch."""
    real_compile, _ = fresh_torch_compile

    def backend(gm, example_inputs):
        return gm.forward

    def other(gm, example_inputs):
        return gm.forward

    pair = (backend, backend) if shared else (backend, other)
    truth = _compiles(real_compile, pair)
    assert truth == (1 if shared else 2)
    torch._dynamo.reset()
    patch_compile("inductor", __file__, str(tmp_path))
    assert _compiles(torch.compile, pair) == truth


def test_a_distinct_inductor_keeps_the_calls_mode(fresh_torch_compile):
    """The inductor a second backend gets is configured from the call's mode as torch's own is."""
    from fxlens.capture.runner import SiteBackends

    def other(gm, example_inputs):
        return gm.forward

    sites = SiteBackends("inductor")
    assert sites.replacing("eager", "eager") == "inductor"  # the first: torch's own wrapper
    distinct = sites.replacing(other, "other")
    mode = "max-autotune-no-cudagraphs"
    torch.compile(scale, backend=distinct, mode=mode)(torch.ones(3))
    (wrapper,) = distinct._wrappers.values()
    assert wrapper.config == torch._TorchCompileInductorWrapper(mode, None, None).config
    assert wrapper.config  # the mode changed something, so the comparison means something
