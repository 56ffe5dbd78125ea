"""Fast checks of minify's parts, in-process with real torch: signatures, the accuracy rule,
canonical candidates, rendering, never overwriting."""

from pathlib import Path

import torch
import torch.fx as fx

from fxlens.minify_check import accuracy_failure, normalise_message, run_check, signature_of
from fxlens.minify_graph import candidate_from_module, rebuild
from fxlens.repro_writer import ReproSpec, fresh_path, render


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


def test_fresh_path_never_returns_an_existing_file(tmp_path):
    (tmp_path / "r.py").write_text("x")
    (tmp_path / "r_2.py").write_text("x")
    assert fresh_path(tmp_path / "r.py") == tmp_path / "r_3.py"


def test_run_repro_with_a_relative_path(tmp_path, monkeypatch):
    # sessions default to a relative folder (.fxlens/sessions): the reproducer still runs
    from fxlens.repro_writer import run_repro

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "r.py").write_text(
        "import sys\nprint('fxlens-signature: X: y', file=sys.stderr)\nsys.exit(1)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert run_repro(Path("d/r.py")) == (1, "X: y")
