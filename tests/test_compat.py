"""Contract tests for every private torch symbol fxlens touches (fxlens.backend.torch_compat).

One test per symbol: a torch release that moves, renames or re-signs one fails the test named after
it (`test_symbol_resolves[trace_structured]`), not a command far downstream. The behaviour tests
below cover the symbols fxlens relies on beyond their signature.
"""

from __future__ import annotations

import ast
import inspect
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxlens.backend import torch_compat

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(torch_compat.SYMBOLS))
def test_symbol_resolves(name):
    obj = torch_compat.resolve(name)
    params = torch_compat.SYMBOLS[name][2]
    if params:
        sig = inspect.signature(obj)
        taken = set(sig.parameters)
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        missing = [p for p in params if p not in taken and not takes_kwargs]
        assert missing == [], f"{name}{sig} no longer takes {missing}"


def test_names_resolve_lazily_from_the_module():
    # `from fxlens.backend.torch_compat import X` is how every call site reaches a symbol
    from fxlens.backend.torch_compat import make_boxed_func

    assert make_boxed_func is torch_compat.resolve("make_boxed_func")
    with pytest.raises(AttributeError):
        torch_compat.not_a_symbol  # noqa: B018


def test_importing_compat_imports_no_inductor():
    # the backend imports it on every torch.compile(backend="fxlens"); inductor costs seconds
    code = "import sys, fxlens.backend.torch_compat; print('torch._inductor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_trace_structured_can_be_swapped_and_restored():
    original = torch_compat.current_trace_structured()
    marker = lambda *a, **k: None  # noqa: E731
    assert torch_compat.swap_trace_structured(marker) is original
    try:
        import torch._logging

        assert torch._logging.trace_structured is marker  # torch's timing code looks it up there
    finally:
        assert torch_compat.swap_trace_structured(original) is marker


def test_trace_log_is_the_structured_trace_logger():
    assert isinstance(torch_compat.resolve("trace_log"), logging.Logger)
    assert isinstance(torch_compat.resolve("INTERN_TABLE"), dict)


def test_bisector_env_cache_can_be_cleared():
    torch_compat.clear_bisector_env_cache()  # get_env_val is functools.cache'd: cache_clear exists
    cb = torch_compat.resolve("CompilerBisector")
    for attr in ("bisection_enabled", "get_config_change", "do_bisect", "in_process_cache"):
        assert hasattr(cb, attr), attr


def test_bisector_keep_custom_backend_switch_exists():
    cfg = torch_compat.resolve("inductor_test_configs")
    assert hasattr(cfg, "bisect_keep_custom_backend_for_inductor")


def test_compile_callbacks_register():
    handler = torch_compat.resolve("callback_handler")
    assert callable(handler.register_start_callback) and callable(handler.register_end_callback)


def test_current_compile_id_inside_and_outside_a_compile():
    import torch

    assert torch_compat.current_compile_id() is None
    seen = []

    def backend(gm, example_inputs):
        seen.append(torch_compat.current_compile_id())
        return gm

    torch.compiler.reset()
    torch.compile(lambda x: x + 1, backend=backend)(torch.ones(2))
    (cid,) = seen
    assert (cid.frame_id, cid.frame_compile_id) == (0, 0)


def test_restart_structured_trace_opens_the_new_folder(tmp_path):
    # bisect's warm process imported torch before TORCH_TRACE was set: restarting must open it
    code = (
        "import os, torch, fxlens.backend.torch_compat as c;"
        f"os.environ['TORCH_TRACE'] = {str(tmp_path)!r};"
        "c.restart_structured_trace();"
        "torch.compile(lambda x: x * 2, backend='eager')(torch.ones(2))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TRACE"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
    logs = list(tmp_path.glob("*.log"))
    assert logs and "dynamo_start" in logs[0].read_text()


def test_private_torch_imports_only_in_the_compat_module():
    # `from torch._x import y` / `import torch._x` anywhere else bypasses the contract tests
    bad = []
    for folder in ("toolkit", "backend", "tui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "torch_compat.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                bad += [
                    f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                    for n in names
                    if n.startswith("torch")
                    and any(p.startswith("_") for p in n.split(".")[1:])
                    and n not in WARMING_IMPORTS
                ]
    assert bad == []


# imported only to pay their import cost early (bisect's warm process); no symbol is taken from them
WARMING_IMPORTS = {"torch._inductor.compile_fx"}


def test_the_vector_isa_probe_is_kept_for_the_process():
    # bisect's hand-over probes once in its driver so that steps forked from it, each in an empty
    # inductor cache dir, skip the probe's compiles: that rests on torch caching the probed list
    import torch._inductor.cpu_vec_isa as cpu_vec_isa

    assert torch_compat.SYMBOLS["pick_vec_isa"][0] == cpu_vec_isa.__name__
    assert callable(cpu_vec_isa.valid_vec_isa_list.cache_info)
    assert "valid_vec_isa_list()" in inspect.getsource(cpu_vec_isa.pick_vec_isa)


def test_inductor_warm_up_modules_exist():
    # minify's zygote imports them once for every worker and re-run it forks; a module torch moved
    # would silently cost each of them its first compile's imports again
    import importlib.util

    missing = [m for m in torch_compat.INDUCTOR_LAZY_MODULES if importlib.util.find_spec(m) is None]
    assert missing == []


def test_cache_entries_list_one_entry_per_compile():
    import torch

    def f(x):
        return x + 1

    torch.compiler.reset()
    g = torch.compile(f, backend="eager", dynamic=False)
    g(torch.ones(2))
    g(torch.ones(3))
    entries = torch_compat.resolve("cache_entries")(f.__code__)
    assert len(entries) == 2
    assert all(any(n.startswith("__compiled_fn") for n in e.code.co_names) for e in entries)


def test_dynamo_translator_can_be_timed_by_line():
    # fxlens.capture.linetime wraps InstructionTranslatorBase.step, InstructionTranslator.run and the
    # output graph's compile_subgraph / call_user_compiler, reading f_code, instruction_pointer,
    # instructions and lineno of each translator: a torch that renames any of them fails here
    import torch

    from fxlens.capture import linetime

    base = torch_compat.resolve("InstructionTranslatorBase")
    root = torch_compat.resolve("InstructionTranslator")
    out = graph = None
    before = (base.step, root.run, torch_compat.resolve("OutputGraph").call_user_compiler)
    windows: list[dict] = []
    assert linetime.install(windows.append)
    try:

        def f(x):
            for _ in range(5):
                x = x + 1
            return x

        torch._dynamo.reset()
        out = torch.compile(f, backend="eager")(torch.ones(2))
    finally:
        linetime.uninstall()
        torch._dynamo.reset()
    assert (base.step, root.run, torch_compat.resolve("OutputGraph").call_user_compiler) == before
    assert out.tolist() == [6.0, 6.0]
    (window,) = windows
    graph = next(fn for fn in window["functions"] if fn["function"] == "f")
    first = f.__code__.co_firstlineno
    assert graph["loops"][0][:3] == [first + 1, first + 2, 5]  # for line, body line, iterations
    assert window["buckets"]["backend"] > 0 and window["steps_s"] > 0


def test_allocation_events_record_allocations_and_no_ops():
    # a peak_memory budget's profiler: the allocator's reports (time, address, bytes) only, none of
    # the ops that made them; the bytes are those of the tensors' storages, counted by hand
    import torch

    torch_compat.start_allocation_events()
    try:
        x = torch.empty(1 << 20, dtype=torch.uint8)
        y = x.float()
        nbytes = (x.untyped_storage().nbytes(), y.untyped_storage().nbytes())
        del x, y
    finally:
        events = torch_compat.stop_allocation_events()
    assert nbytes == (1 << 20, 4 << 20)
    assert [t for t, _, _ in events] == sorted(t for t, _, _ in events)
    for n in nbytes:  # each storage allocated and freed at one address
        (ptr,) = [p for _, p, b in events if b == n]
        assert (ptr, -n) in [(p, b) for _, p, b in events]
    # no op events at all (the public profiler's +28-48% on calls), where the public one has them
    torch_compat.start_allocation_events()
    torch.empty(16).float()
    assert {e.name() for e in torch_compat.resolve("disable_profiler")().events()} == {"[memory]"}
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch.empty(16).float()
    assert "aten::empty" in {e.name() for e in prof.profiler.kineto_results.events()}
