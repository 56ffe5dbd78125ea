"""Fast checks of minify's parts, in-process with real torch: signatures, the accuracy rule,
canonical candidates, rendering, never overwriting."""

from pathlib import Path

import torch
import torch.fx as fx

from fxlens.capture.accuracy import accuracy_failure, normalise_message
from fxlens.minify.candidate_check import run_check, signature_of
from fxlens.minify.graph import candidate_from_module, rebuild
from fxlens.minify.repro_writer import ReproSpec, render


def test_signature_drops_addresses_paths_node_names_and_numbers():
    a = normalise_message("bad kernel add_17 at 0x7f3a2c in /tmp/torchinductor_root/ab/cdef.py: size 64")
    b = normalise_message("bad kernel add_3 at 0x55aa01 in /tmp/torchinductor_x/zz/qq.py: size 8\nmore")
    assert a == b == "bad kernel add at <addr> in <path>: size N"


def test_signature_unwraps_dynamo_backend_failures():
    def failing(gm, example_inputs):
        raise ValueError("lowering failed for node mul_4")

    try:
        torch.compile(lambda x: x * 2, backend=failing)(torch.ones(2))
    except Exception as e:
        assert type(e).__name__ == "BackendCompilerFailed"
        assert signature_of(e) == "ValueError: lowering failed for node mul"


def test_accuracy_rule_uses_the_fp64_reference():
    ref = torch.linspace(-1, 1, 100, dtype=torch.float64)
    eager = ref.float()
    assert accuracy_failure([ref], [eager], [eager + 1e-7]) is None  # float32 rounding noise
    assert accuracy_failure([ref], [eager], [eager + 1e-2]).startswith("AccuracyError")
    assert "NaN" in accuracy_failure([ref], [eager], [eager * float("nan")])


def test_accuracy_rule_sees_errors_in_small_outputs():
    # pytorch/pytorch#198183: erf of 1e-8..1e-3 computed with an absolute error bound (0 for
    # |x| <= 1e-7); torch's same() floor of 1e-5 absolute hid it, the floor now scales with the output
    x = torch.tensor([1e-8, 1e-7, 2e-7, 5e-7, 1e-6, 1e-5, 1e-4, 1e-3] * 8, dtype=torch.float64)
    ref, eager = torch.erf(x), torch.erf(x.float())
    wrong = torch.where(x <= 1e-7, 0.0, eager.double() * (1 - 1.7e-2 * (x == 1e-5))).float()
    assert accuracy_failure([ref], [eager], [wrong]).startswith("AccuracyError")
    # float32 rounding at that scale still passes: one ulp off eager everywhere, and a sum reordered
    assert accuracy_failure([ref], [eager], [torch.nextafter(eager, torch.tensor(1.0))]) is None
    v = torch.rand(4096, dtype=torch.float64) * 1e-6
    pairs = v.float().view(64, 64)
    assert accuracy_failure([v.sum()], [pairs.sum()], [pairs.sum(0).sum()]) is None
    # never looser than torch's floor for outputs of size 1 and more
    big = torch.linspace(1, 1000, 100, dtype=torch.float64)
    assert accuracy_failure([big], [big.float()], [big.float() + 5e-5]).startswith("AccuracyError")


def _mlp():
    class M(torch.nn.Module):
        def forward(self, x, w):
            return (torch.relu(x @ w).sin() + x.cos(),)

    gm = fx.symbolic_trace(M())
    return candidate_from_module(gm, [torch.randn(4, 4), torch.randn(4, 4)])


def test_removing_a_node_makes_its_consumers_read_a_fresh_input():
    cand = _mlp()
    assert cand.num_calls == 5
    smaller = rebuild(cand, remove={"matmul"})
    assert smaller.num_calls == 4 and len(smaller.inputs) == 2  # w is unused now: dropped
    assert smaller.inputs[1].shape == (4, 4) and smaller.inputs[1].saved is None
    # canonical: the same graph reached two ways has the same key
    assert rebuild(smaller).key() == smaller.key()


def test_rendered_candidate_runs_the_check(tmp_path):
    cand = rebuild(_mlp(), remove={"matmul", "cos"})
    src = render(cand, ReproSpec(backend="relu_compile_error_TESTING_ONLY", check="crash"))
    ns = {"__name__": "candidate"}
    exec(compile(src, "candidate", "exec"), ns)
    sig = run_check(ns["Repro"], ns["make_inputs"], ns["load_backend"](), "crash")
    assert sig == "ReluCompileError"
    assert run_check(ns["Repro"], ns["make_inputs"], "eager", "accuracy") is None


def test_run_repro_with_a_relative_path(tmp_path, monkeypatch):
    # sessions default to a relative folder (.fxlens/sessions): the reproducer still runs
    from fxlens.minify.repro_writer import run_repro

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "r.py").write_text(
        "import sys\nprint('fxlens-signature: X: y', file=sys.stderr)\nsys.exit(1)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert run_repro(Path("d/r.py")) == (1, "X: y")


def test_captured_aten_code_keeps_calls_without_traced_inputs():
    # plain fx tracing would run aten.full once and bake its result in as a constant attribute
    from fxlens.minify.graph import load_graph_module

    src = (
        "import torch\n\n\nclass CapturedGraph(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        full = torch.ops.aten.full.default([2], 3.0, dtype=torch.float32)\n"
        "        return (torch.ops.aten.mul.Tensor(x, full),)\n"
    )
    gm = load_graph_module(src)
    assert [n.op for n in gm.graph.nodes].count("get_attr") == 0
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [
        torch.ops.aten.full.default,
        torch.ops.aten.mul.Tensor,
    ]
    cand = candidate_from_module(gm, [torch.ones(2)])
    assert cand.num_calls == 2 and "torch.ops.aten.full.default(" in cand.forward_source()


def test_aten_level_candidate_calls_the_inner_compiler(tmp_path):
    # an ATen graph rendered at the backward level: make_fx, then the named inner compiler
    from dataclasses import replace

    from fxlens.minify.candidate_check import run_aten_check

    gm = fx.symbolic_trace(_AtenModel())
    cand = candidate_from_module(gm, [torch.randn(4, 4), torch.randn(4, 4)])
    spec = ReproSpec(backend="aot_eager", check="crash", level="backward", inner="aot_autograd")
    src = render(cand, spec)
    assert "def load_inner(" in src and "LEVEL = 'backward'" in src
    ns = {"__name__": "candidate"}
    exec(compile(src, "candidate", "exec"), ns)

    def failing_bw(gm, example_inputs):
        if any(n.target is torch.ops.aten.threshold_backward.default for n in gm.graph.nodes):
            raise NotImplementedError("no lowering for threshold_backward_3")
        return gm

    from torch._dynamo.backends.common import aot_autograd

    backend = aot_autograd(fw_compiler=lambda gm, _: gm, bw_compiler=failing_bw)
    compiler = ns["load_inner"](backend)
    assert compiler is failing_bw  # the backward level picks the bw_compiler
    sig = run_aten_check(ns["Repro"], ns["make_inputs"], compiler, "crash")
    assert sig == "NotImplementedError: no lowering for threshold_backward"
    fw_ns = {"__name__": "candidate"}
    exec(compile(render(cand, replace(spec, level="forward")), "candidate", "exec"), fw_ns)
    assert fw_ns["load_inner"](backend) is not failing_bw  # the forward level: fw_compiler


class _AtenModel(torch.nn.Module):
    def forward(self, grad, x):
        return (torch.ops.aten.threshold_backward.default(grad, torch.ops.aten.relu.default(x), 0),)


def test_flaky_failure_candidates_that_pass_are_retried():
    from fxlens.minify.reduce import Reducer

    cand = _mlp()
    answers = iter([None, None, "E: x", None])  # passes twice, then fails with the signature

    def evaluate(srcs):
        return [next(answers) for _ in srcs]

    r = Reducer(evaluate, lambda c: c.key(), "E: x", 1, retries=3)
    assert r.test([cand]) == [True]
    assert r.queries == 3 and r.retried == 2
    plain = Reducer(lambda srcs: [None for _ in srcs], lambda c: c.key(), "E: x", 1)
    assert plain.test([cand]) == [False] and plain.queries == 1


def test_embedded_check_runs_where_only_torch_is_installed(tmp_path):
    # the check every reproducer embeds once imported fxlens.capture.accuracy (whose body it also
    # embeds): it ran here, where fxlens is installed, and failed on a torch developer's machine
    import subprocess
    import sys

    from fxlens.minify.repro_writer import FXLENS_IMPORT, check_source

    src = check_source()
    assert not [ln for ln in src.splitlines() if FXLENS_IMPORT.match(ln)]
    f = tmp_path / "check.py"
    f.write_text(src + "\nassert accuracy_failure and normalise_message('a 0x1f') == 'a <addr>'\n")
    code = f"import sys; sys.modules['fxlens'] = None; exec(open({str(f)!r}).read())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
