"""The report on models no one here wrote, called as users call them, checked against torch's own
records read independently: `TORCH_LOGS=recompiles,graph_breaks` (the child's stderr) and the
compilation metrics in the session's TORCH_TRACE (plain JSON parsing here, not fxlens's reader).

- a tiny HF Llama (GPT-2 and BERT under -m slow) from its config, keyword inputs, two sequence
  lengths in training, then validation under torch.no_grad();
- HF Llama trained with gradient checkpointing: frames torch gives up on inside transformers;
- HF generate() with a compiled forward (the HF docs' recipe): prefill, decode, a growing KV cache;
- eleven more HF architectures (Mistral, Qwen2/3, Gemma/2, Phi, Mixtral, OPT, GPT-NeoX, T5, BART)
  under -m slow;
- torch.compile(nn.Sequential(...)) in a DataLoader train/eval loop;
- torch.compile(DDP(model)) on 2 gloo ranks, which captures no graph at all on this setup.
"""

import json
import re
import socket
from pathlib import Path

import pytest
from capture_helpers import SCRIPTS, fxlens
from schema_check import validate

REAL = SCRIPTS / "real"
_RECOMPILE = re.compile(r"\[__recompiles\]\s+- (?P<against>\d+/\d+): (?P<guard>.+?)\s*(?:#.*)?$", re.M)
_BREAK = re.compile(r"\[__graph_breaks\] Graph break in user code at (?P<file>\S+):(?P<line>\d+)$", re.M)
_WRAPPERS = {"inner", "wrapped_func", "wrapper", "_call_impl"}


def _run(tmp_path, script, *args, timeout=900):
    out = tmp_path / "report.json"
    proc = fxlens(
        "run",
        "--session",
        tmp_path / "session",
        "--json",
        out,
        REAL / script,
        *args,
        env={"TORCH_LOGS": "recompiles,graph_breaks"},
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    validate("report", report)  # every real model's report against the published schema
    return proc, report


def _trace_records(session: Path, key: str) -> list[dict]:
    """Every `key` record of the session's TORCH_TRACE logs, parsed as plain JSON lines."""
    out = []
    for log in session.rglob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            i = line.find("{")
            if i >= 0 and f'"{key}"' in line[i : i + len(key) + 4]:
                out.append(json.loads(line[i:])[key])
    return out


def _torch_guards(stderr: str) -> list[str]:
    return [m["guard"].strip() for m in _RECOMPILE.finditer(stderr)]


def _check_against_torch(proc, report, session: Path, script: str):
    """What every real-model test checks: counts, node numbers and places from torch's records."""
    guards = _torch_guards(proc.stderr)
    # every cause shows torch's own guard (never an empty "a guard changed")
    assert report["recompile_causes"], "torch logged recompiles, the report shows no cause"
    for c in report["recompile_causes"]:
        assert c["guard"] in guards, (c["guard"], guards)
        assert c["kind"] != "other" and "a guard changed" not in c["message"]
    assert len(report["recompiles"]) == len(re.findall(r"\[__recompiles\] Recompiling function", proc.stderr))
    # node counts are torch's own graph_node_count, per compile id
    nodes = {m["compile_id"]: m["graph_node_count"] for m in _trace_records(session, "compilation_metrics")}
    assert report["graphs"], "no graph reported"
    for g in report["graphs"]:
        assert g["num_nodes"] == nodes[g["compile_id"]], g
        # named and placed in the user's code: never torch's or a library's wrapper frame
        assert g["function"] not in _WRAPPERS and g["file"].endswith(script), g
    # graph breaks: one per break record in the trace (TORCH_LOGS=graph_breaks logs each distinct
    # break once), every place torch logged among the report's, at the user's line with the library
    # frame beside it
    breaks = list(_BREAK.finditer(proc.stderr))
    records = [a for a in _trace_records(session, "artifact") if a.get("name") == "dynamo_graph_break_reason"]
    assert sum(b["count"] for b in report["graph_breaks"]) + len(report["eager_frames"]) == len(records)
    places = {b["file"] for b in report["graph_breaks"]} | {
        b["library"]["file"] for b in report["graph_breaks"] if b["library"]
    }
    assert all(any(m["file"].endswith(p) for p in places) for m in breaks), (breaks, places)
    for b in report["graph_breaks"]:
        assert b["file"].endswith(script)
        torch_files = {m["file"] for m in breaks}
        if not any(f.endswith(script) for f in torch_files):
            assert b["library"] and any(f.endswith(b["library"]["file"]) for f in torch_files), b


def _cause(report, kind):
    return next(c for c in report["recompile_causes"] if c["kind"] == kind)


def test_hf_llama_keyword_inputs_two_lengths_then_no_grad(tmp_path):
    proc, report = _run(tmp_path, "hf_kwargs.py", "llama")
    _check_against_torch(proc, report, tmp_path / "session", "hf_kwargs.py")
    assert "tensor 'kwargs['input_ids']' size mismatch at index 1. expected 16, actual 24" in proc.stderr
    size = _cause(report, "size")
    assert size["subject"] == "input `input_ids`, dim 1" and size["values"] == ["16", "24"]
    assert "torch._dynamo.mark_dynamic(input_ids, 1)" in size["fix"]
    assert "GLOBAL_STATE changed: grad_mode" in proc.stderr
    grad = _cause(report, "grad_mode")
    assert "no_grad" in grad["message"] and "detach" not in grad["fix"]
    assert {g["function"] for g in report["graphs"]} == {"LlamaForCausalLM.forward"}
    assert all("transformers/" in g["library"] for g in report["graphs"])
    text = proc.stdout
    assert "torch's guard: tensor 'kwargs['input_ids']' size mismatch at index 1" in text
    assert "a guard changed" not in text and "wrapped_func" not in text.split("Graphs:")[0]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["gpt2", "bert"])
def test_hf_gpt2_bert_keyword_inputs(tmp_path, arch):
    proc, report = _run(tmp_path, "hf_kwargs.py", arch, timeout=1500)
    _check_against_torch(proc, report, tmp_path / "session", "hf_kwargs.py")
    assert _cause(report, "size")["subject"] == "input `input_ids`, dim 1"
    _cause(report, "grad_mode")


# each architecture's first size guard, as torch names it, must be the report's size cause
_SIZE_GUARD = re.compile(r"tensor '(?:kwargs|L)\['(?P<name>\w+)'\]' size mismatch at index (?P<dim>\d+)")


@pytest.mark.slow
@pytest.mark.parametrize(
    "arch", ["mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi", "mixtral", "opt", "neox", "t5", "bart"]
)
def test_more_hf_architectures(tmp_path, arch):
    proc, report = _run(tmp_path, "hf_more.py", arch)
    _check_against_torch(proc, report, tmp_path / "session", "hf_more.py")
    first = _SIZE_GUARD.search(proc.stderr)
    assert _cause(report, "size")["subject"] == f"input `{first['name']}`, dim {first['dim']}"
    _cause(report, "grad_mode")
    assert all(g["function"].endswith(".forward") and g["function"][0].isupper() for g in report["graphs"])


def test_hf_generate_with_a_compiled_forward(tmp_path):
    # the HF docs' recipe: model.forward = torch.compile(model.forward), then generate(); prefill and
    # one-token decode steps recompile, and then the growing KV cache does
    proc, report = _run(tmp_path, "hf_generate.py", "llama")
    _check_against_torch(proc, report, tmp_path / "session", "hf_generate.py")
    src = (REAL / "hf_generate.py").read_text().splitlines()
    call = next(i for i, s in enumerate(src, 1) if "= model.generate(" in s)
    assert {(g["function"], g["line"]) for g in report["graphs"]} == {("LlamaForCausalLM.forward", call)}
    cache = [c for c in report["recompile_causes"] if "cache" in c["guard"]]
    assert cache, "torch's KV-cache guard is not among the causes"
    for c in cache:
        assert 'cache_implementation="static"' in c["fix"] and "drop_last" not in c["fix"]
    seq = next(c for c in report["recompile_causes"] if "kwargs['input_ids']" in c["guard"])
    # prefill (8 tokens) then one-token decode steps: torch specialises a size of 1, so the cause is
    # the size-1 case, never automatic-dynamic advice (which cannot cover a size of 1)
    assert seq["subject"] == "size 1 of `input_ids`, dim 1" and seq["values"] == ["8", "1"]
    assert "automatic dynamic" not in seq["fix"].replace("neither automatic dynamic", "")


def test_hf_generate_on_the_compiled_module_compiles_nothing_and_says_why(tmp_path):
    # `torch.compile(model).generate(...)`: generate is the original module's method, reached
    # through the compiled object, so nothing is compiled; torch's own records: not one dynamo_start
    proc, report = _run(tmp_path, "hf_generate.py", "llama", "module")
    assert not _trace_records(tmp_path / "session", "dynamo_start")
    src = (REAL / "hf_generate.py").read_text().splitlines()
    call = next(i for i, s in enumerate(src, 1) if "= compiled.generate(" in s)
    (head,) = [h for h in report["headlines"] if h["kind"] == "no_graph"]
    assert "`compiled.generate(...)` at " in head["fix"]
    assert f"hf_generate.py:{call} runs the original module" in head["fix"]
    assert "model.compile()" in head["fix"]


def test_frames_torch_gave_up_on_inside_transformers_are_named_as_torch_compiled_them(tmp_path):
    # gradient checkpointing: torch gives up on transformers' frames (breaks it cannot resume); the
    # headline names the frame torch compiled (its compilation_metrics: co_name, co_filename,
    # co_firstlineno), called from the user's line, never the user's `<module>`
    proc, report = _run(tmp_path, "hf_checkpointing.py")
    metrics = {m["compile_id"]: m for m in _trace_records(tmp_path / "session", "compilation_metrics")}
    src = (REAL / "hf_checkpointing.py").read_text().splitlines()
    call = next(i for i, s in enumerate(src, 1) if "compiled(input_ids" in s)
    assert report["eager_frames"], "torch gave up on no frame: the script no longer shows the case"
    heads = [h for h in report["headlines"] if h["kind"] == "eager_frame"]
    assert len(heads) == len(report["eager_frames"])
    for e, h in zip(report["eager_frames"], heads):
        m = metrics[e["compile_id"]]
        assert e["frame"]["function"] == m["co_name"] and m["co_filename"].endswith(e["frame"]["file"])
        assert e["frame"]["line"] == m["co_firstlineno"]
        assert (
            f"frame `{m['co_name']}` ({e['frame']['file']}:{m['co_firstlineno']}, called from "
            in h["message"]
        )
        assert f"hf_checkpointing.py:{call})" in h["message"] and "<module>" not in h["message"]
        assert e["library"] and "not your code" in h["fix"] and "move that call" not in h["fix"]
    # transformers' deprecation decorator (one `wrapped_func` for several modules) recompiles on its
    # own `args`: torch's guard comment places it in transformers, so the fix cannot be "pass one type"
    in_library = {
        m["guard"].strip(): m["where"]
        for m in re.finditer(
            r"\[__recompiles\]\s+- \d+/\d+: (?P<guard>.+?)\s+# .*# (?P<where>transformers/\S+:\d+) in ",
            proc.stderr,
        )
    }
    assert in_library, "torch logged no recompile guarded in transformers' code"
    for c in report["recompile_causes"]:
        if c["guard"] in in_library:
            assert f"the guard is in {in_library[c['guard']]}, a library's code" in c["fix"], c


def test_sequential_in_a_dataloader_train_eval_loop(tmp_path):
    proc, report = _run(tmp_path, "sequential_loader.py")
    _check_against_torch(proc, report, tmp_path / "session", "sequential_loader.py")
    src = (REAL / "sequential_loader.py").read_text().splitlines()
    call = next(i for i, s in enumerate(src, 1) if "compiled(x), y" in s)
    g0 = report["graphs"][0]
    assert (g0["function"], g0["line"]) == ("Sequential.forward", call)
    assert "torch/_dynamo/external_utils.py" in g0["library"]
    size = _cause(report, "size")  # the short last batch
    assert size["values"] == ["4", "2"] and "args[0]" in size["subject"]
    assert (
        "the tensor your code passes in that position" in size["fix"]
        and "mark_dynamic(args[0]" not in size["fix"]
    )
    assert "external_utils.py:67" not in proc.stdout.split("Graphs:")[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_wrapped_then_compiled_captures_no_graph_and_says_so(tmp_path):
    proc, report = _run(tmp_path, "ddp_compiled.py", str(_free_port()))
    session = tmp_path / "session"
    # torch's own records: two ranks, Dynamo started, and not one dynamo_output_graph
    assert len(list(session.rglob("*rank_*.log"))) == 2
    assert _trace_records(session, "dynamo_start") and not _trace_records(session, "dynamo_output_graph")
    assert report["graphs"] == []
    head = report["headlines"][0]
    assert head["kind"] == "no_graph" and "everything ran eagerly" in head["message"]
    assert "DDP(torch.compile(model))" in head["fix"]
    assert proc.stdout.index("captured no graph") < proc.stdout.index("Graph breaks")
    # the breaks happen inside DDP's code, placed at the user's call line with the library frame
    src = (REAL / "ddp_compiled.py").read_text().splitlines()
    call = next(i for i, s in enumerate(src, 1) if "ddp(torch.randn" in s)
    for b in report["graph_breaks"]:
        assert b["line"] == call and b["library"] is not None
        # torch's graph-break registry id, as its log links it, with the registry's own text
        assert b["gb_id"] and f"/gb/{b['gb_id'].lower()}.html" in proc.stderr
        assert b["gb_doc"]["type"] == b["reason"]
    # rank 1's short batch recompiled DDP's forward: named so, never `mark_dynamic(args[0], 0)`
    (rc,) = [c for c in report["recompile_causes"] if c["kind"] == "size"]
    assert rc["function"] == "DistributedDataParallel.forward" and rc["ranks"] == [1]
    assert "mark_dynamic(args[0]" not in proc.stdout


def test_inductor_cpp_compile_error_keeps_the_compilers_message(tmp_path):
    raised = tmp_path / "raised.txt"
    proc, report = _run(tmp_path, "inductor_cpp_error.py", raised)
    torch_text = raised.read_text()
    error_line = next(ln for ln in torch_text.splitlines() if "error:" in ln)
    (f,) = report["failures"]
    # JSON: torch's whole text, not "CppCompileError: C++ compile error"
    assert error_line.strip() in f["fail_reason"] and len(f["fail_reason"]) > 500
    # text: the first line, the compiler's error line and the generated code it points at
    text = proc.stdout.split("Compile failures:")[1]
    assert "CppCompileError" in text and error_line.strip()[:150] in text
    assert "compile error!" in text  # the line of generated code gcc printed under the error
