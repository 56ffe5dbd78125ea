"""Every private torch symbol fxlens touches, in one place (rule: one door to torch's internals).

torch promises nothing about `torch._*`: any release may move, rename or re-sign one. fxlens reaches
each through this module, and tests/test_compat.py checks each (that it resolves, and takes the
arguments fxlens passes), so a torch release that moves one fails one named test rather than a
command somewhere downstream. The backend and the toolkit both import from here (the backend may not
import the toolkit, so the module lives in the backend).

`from fxlens.backend.torch_compat import NAME` resolves NAME from `SYMBOLS` on first use (PEP 562),
so importing this module imports nothing heavy: the backend imports it on every
`torch.compile(backend="fxlens")`, and torch._inductor costs seconds to import.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import torch._logging

# name -> (module, attribute path in it, keywords or parameters fxlens passes: the contract test
# checks the signature accepts them). One row per private symbol; where a symbol is only patched or
# read, the parameters are the ones the patch forwards or the empty tuple.
SYMBOLS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # structured trace (TORCH_TRACE): written by the backend, read in-process by compile budgets
    "trace_structured": ("torch._logging", "trace_structured", ("name", "metadata_fn", "payload_fn")),
    "trace_log": ("torch._logging._internal", "trace_log", ()),
    "init_logs": ("torch._logging._internal", "_init_logs", ()),
    "TorchLogsFormatter": ("torch._logging._internal", "TorchLogsFormatter", ("trace",)),
    "INTERN_TABLE": ("torch._logging.structured", "INTERN_TABLE", ()),
    # compile ids and compile events
    "CompileContext": ("torch._guards", "CompileContext", ()),
    "CompileId": ("torch._guards", "CompileId", ("frame_id", "frame_compile_id")),
    "callback_handler": ("torch._dynamo.callback", "callback_handler", ()),
    # a code object's Dynamo cache entries (one per recompile): doctor walks what each one holds
    "cache_entries": ("torch._dynamo.eval_frame", "_debug_get_cache_entry_list", ("code",)),
    # Dynamo entry points fxlens wraps or calls
    "dynamo_optimize": ("torch._dynamo", "optimize", ("backend",)),
    "dynamo_reset": ("torch._dynamo", "reset", ()),
    "lookup_backend": ("torch._dynamo.backends.registry", "lookup_backend", ("compiler_fn",)),
    "list_backends": ("torch._dynamo", "list_backends", ("exclude_tags",)),
    "AotAutograd": ("torch._dynamo.backends.common", "AotAutograd", ()),
    # AOTAutograd and decompositions (the fxlens_aot_eager and fxlens stages, minify's ATen level)
    "aot_module_simplified": (
        "torch._functorch.aot_autograd",
        "aot_module_simplified",
        ("mod", "args", "fw_compiler", "bw_compiler", "decompositions", "partition_fn",
         "keep_inference_input_mutations"),
    ),
    "make_boxed_func": ("torch._functorch.aot_autograd", "make_boxed_func", ("f",)),
    "min_cut_rematerialization_partition": (
        "torch._functorch.partitioners", "min_cut_rematerialization_partition", ("joint_module", "_joint_inputs")
    ),
    "core_aten_decompositions": ("torch._decomp", "core_aten_decompositions", ()),
    "get_decompositions": ("torch._decomp", "get_decompositions", ("aten_ops",)),
    "select_decomp_table": ("torch._inductor.decomposition", "select_decomp_table", ()),
    "FakeTensorMode": ("torch._subclasses.fake_tensor", "FakeTensorMode", ("allow_non_fake_inputs",)),
    "is_fake": ("torch._subclasses.fake_tensor", "is_fake", ("x",)),
    "OpOverload": ("torch._ops", "OpOverload", ()),
    # inductor: its prims (prims.fma, prims.inductor_seeds), compilers, and its own bisector
    "inductor_prims": ("torch._inductor", "inductor_prims", ()),
    "compile_fx": ("torch._inductor.compile_fx", "compile_fx", ("model_", "example_inputs_")),
    # tensor subclasses that wrap inner tensors (minify saves no plain data for them)
    "is_traceable_wrapper_subclass": ("torch.utils._python_dispatch", "is_traceable_wrapper_subclass", ("t",)),
    # torch.compile(mode=...)'s inductor config, applied by bisect to a call it routes to inductor
    "list_mode_options": ("torch._inductor", "list_mode_options", ("mode", "dynamic")),
    # the wrapper torch.compile builds for backend="inductor" (an override gives each backend the
    # script kept apart one of its own: torch's compare equal by config, so they would share graphs)
    "TorchCompileInductorWrapper": ("torch", "_TorchCompileInductorWrapper", ("mode", "options", "dynamic")),
    "compile_fx_inner": ("torch._inductor.compile_fx", "compile_fx_inner", ("gm", "example_inputs")),
    "CompilerBisector": ("torch._inductor.compiler_bisector", "CompilerBisector", ()),
    "bisector_get_env_val": ("torch._inductor.compiler_bisector", "get_env_val", ("env_str",)),
    "inductor_cache_dir": ("torch._inductor.runtime.cache_dir_utils", "cache_dir", ()),
    # what an inductor compile computes once per process (minify's zygote does it before forking)
    "inductor_torch_key": ("torch._inductor.codecache", "torch_key", ()),
    "triton_key": ("torch._inductor.codecache", "triton_key", ()),
    "joint_graph_lazy_init": ("torch._inductor.fx_passes.joint_graph", "lazy_init", ("input_device",)),
    "post_grad_lazy_init": ("torch._inductor.fx_passes.post_grad", "lazy_init", ("input_device",)),
    "pick_vec_isa": ("torch._inductor.cpu_vec_isa", "pick_vec_isa", ()),
    # `fxlens minify --kernel` on inductor: where a C++ kernel is named (its arguments and nodes
    # known), where the output code is loaded, and the graph being lowered
    "CppScheduling": ("torch._inductor.codegen.cpp", "CppScheduling", ()),
    "cpp_define_kernel": (
        "torch._inductor.codegen.cpp",
        "CppScheduling.define_kernel",
        ("src_code", "nodes", "kernel_args"),
    ),
    "PyCodeCache": ("torch._inductor.codecache", "PyCodeCache", ()),
    "pycodecache_load_by_key_path": (
        "torch._inductor.codecache",
        "PyCodeCache.load_by_key_path",
        ("key", "path"),
    ),
    "inductor_V": ("torch._inductor.virtualized", "V", ()),
    # config modules: minify copies their non-default values into the reproducer; bisect sets one
    "dynamo_config": ("torch._dynamo.config", "", ()),
    "inductor_config": ("torch._inductor.config", "", ()),
    "functorch_config": ("torch._functorch.config", "", ()),
    "inductor_test_configs": ("torch._inductor.config", "test_configs", ()),
    "LOG_TRACE_HANDLER": ("torch._logging._internal", "LOG_TRACE_HANDLER", ()),
    # the mode stacks a call runs under (doctor replays a call only in the state it ran in)
    "function_mode_stack": ("torch.overrides", "_get_current_function_mode_stack", ()),
    "dispatch_mode_stack": ("torch.utils._python_dispatch", "_get_current_dispatch_mode_stack", ()),
    # Dynamo's bytecode interpreter: the runner times each traced instruction by source line
    # (fxlens.capture.linetime wraps step on the base class and run on the root translator; it reads
    # f_code, instruction_pointer, instructions[ip].offset and lineno of the translator)
    "InstructionTranslatorBase": ("torch._dynamo.symbolic_convert", "InstructionTranslatorBase", ()),
    "InstructionTranslator": ("torch._dynamo.symbolic_convert", "InstructionTranslator", ()),
    "translator_step": ("torch._dynamo.symbolic_convert", "InstructionTranslatorBase.step", ("self",)),
    "translator_run": ("torch._dynamo.symbolic_convert", "InstructionTranslator.run", ("self",)),
    # what a step may run that is not tracing: the output graph built at a return or graph break,
    # and the backend it calls (timed apart, never given to the line that triggered them)
    "OutputGraph": ("torch._dynamo.output_graph", "OutputGraph", ()),
    "output_compile_subgraph": ("torch._dynamo.output_graph", "OutputGraph.compile_subgraph", ("tx", "reason")),
    "output_call_user_compiler": ("torch._dynamo.output_graph", "OutputGraph.call_user_compiler", ("gm",)),
    # pytree (torch.utils._pytree has no public twin in the torch versions fxlens supports)
    "tree_map_only": ("torch.utils._pytree", "tree_map_only", ("type_or_types_or_pred", "func", "tree")),
    "tree_flatten": ("torch.utils._pytree", "tree_flatten", ("tree",)),
    "tree_leaves": ("torch.utils._pytree", "tree_leaves", ("tree",)),
    # the profiler's own switches: a peak_memory budget records allocation events without op events
    # (pybind functions: no signature to check; test_compat runs them)
    "prepare_profiler": ("torch._C._autograd", "_prepare_profiler", ()),
    "enable_profiler": ("torch._C._autograd", "_enable_profiler", ()),
    "disable_profiler": ("torch._C._autograd", "_disable_profiler", ()),
    "ProfilerConfig": ("torch._C._profiler", "ProfilerConfig", ()),
    "ProfilerState": ("torch._C._profiler", "ProfilerState", ()),
    "ProfilerExperimentalConfig": ("torch._C._profiler", "_ExperimentalConfig", ()),
    "RecordScope": ("torch._C._profiler", "RecordScope", ()),
}


def resolve(name: str) -> Any:
    """The object SYMBOLS[name] names, its module imported now."""
    module, path, _ = SYMBOLS[name]
    obj: Any = importlib.import_module(module)
    for part in filter(None, path.split(".")):  # "" names the module itself
        obj = getattr(obj, part)
    return obj


# the config module a fix names (`inductor.freezing`): dynamo, inductor or functorch
CONFIG_MODULES = {"dynamo": "dynamo_config", "inductor": "inductor_config", "functorch": "functorch_config"}


def config_module(short: str) -> Any:
    """torch's config module SHORT names (`dynamo`, `inductor`, `functorch`), None for another name."""
    return resolve(CONFIG_MODULES[short]) if short in CONFIG_MODULES else None


def __getattr__(name: str) -> Any:
    if name in SYMBOLS:
        return resolve(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The backend's artifact writer binds trace_structured at import (torch._logging is imported by torch
# itself); compile budgets patch the module attribute, which the backend's writes then bypass.
trace_structured = torch._logging.trace_structured
# older torch (2.11 on the GPU box) may lack the keyword: then run-time artifacts carry no id
TRACE_STRUCTURED_TAKES_COMPILE_ID = "compile_id" in inspect.signature(trace_structured).parameters


def swap_trace_structured(fn):
    """Install `fn` as `torch._logging.trace_structured` (torch's own timing code looks it up there
    at call time); returns the one it replaced."""
    previous = torch._logging.trace_structured
    torch._logging.trace_structured = fn
    return previous


def current_trace_structured():
    return torch._logging.trace_structured


def restart_structured_trace() -> None:
    """Open torch's structured trace at $TORCH_TRACE as a fresh `import torch` does: a process that
    imported torch before TORCH_TRACE was set has a trace handler with no folder, which never writes."""
    from torch._logging import _internal

    for handler in list(_internal.trace_log.handlers):
        _internal.trace_log.removeHandler(handler)
    _internal.LOG_TRACE_HANDLER = None
    _internal._init_logs()


def clear_bisector_env_cache() -> None:
    """Make CompilerBisector read TORCH_BISECT_* afresh: its `get_env_val` is functools.cache'd."""
    resolve("bisector_get_env_val").cache_clear()


def keep_custom_backend_under_bisector() -> None:
    """Under CompilerBisector, torch.compile replaces every backend with the bisected one
    (torch/__init__.py, `compile`) unless this test config is set: fxlens's bisect wrapper must stay."""
    resolve("inductor_test_configs").bisect_keep_custom_backend_for_inductor = True


def current_compile_id():
    """Dynamo's compile id for the frame being compiled, or None outside a compile."""
    return resolve("CompileContext").current_compile_id()


# Modules inductor's first compile in a process imports lazily (measured on torch 2.13: 223 modules,
# about 1.4 CPU seconds of a first compile that steady state does in 0.1-0.2 s).
INDUCTOR_LAZY_MODULES = (
    "torch._inductor.codegen.cpp",
    "torch._inductor.codegen.cpp_wrapper_cpu",
    "torch._inductor.codegen.wrapper",
    "torch._inductor.codegen.simd",
    "torch._inductor.codegen.triton",
    "torch._inductor.codegen.memory_planning",
    "torch._inductor.scheduler",
    "torch._inductor.graph",
    "torch._inductor.lowering",
    "torch._inductor.decomposition",
    "torch._inductor.fx_passes.pre_grad",
    "torch._inductor.cpp_builder",
    "torch._inductor.codecache",
    "torch._inductor.select_algorithm",
    "torch._inductor.choices",
    "torch._inductor.bounds",
    "torch._inductor.hooks",
    "torch._inductor.extern_node_serializer",
    "torch._inductor.runtime.triton_heuristics",
    "torch._inductor.runtime.caching",
    "torch._functorch._aot_autograd.autograd_cache",
    "torch._functorch._aot_autograd.subclass_codegen",
    "torch._dynamo.backends.inductor",
    "torch._subclasses.schema_check_mode",
    "torch.fx.experimental.validator",
    "torch.export._trace",
    "torch.utils.cpp_extension",
    "torch.utils._cpp_embed_headers",
    "torch.utils.serialization",
    "torch._inductor.kernel.mm",
    "torch._inductor.codegen.cpp_wrapper_cpu_array_ref",
    "torch._inductor.codegen.cpp_wrapper_gpu",
    "torch._inductor.codegen.cuda_combined_scheduling",
    "torch._inductor.codegen.halide",
    "torch._inductor.codegen.wrapper_fxir",
    "torch._dynamo.dce_extra_outputs",
    "torch._dynamo.repro.after_dynamo",
    "torch._export.passes._node_metadata_hook",
    "torch._higher_order_ops.passes.inline_invoke_subgraph",
    "torch.distributed.tensor.experimental",
    "sympy.combinatorics",
    "sympy.physics.units",
)


def probe_vector_isa() -> None:
    """Probe the CPU's vector ISA as inductor's first C++ compile in a process does (a compile and a
    child process for each ISA; ~30 s in an empty cache dir on a loaded box). The answer depends on
    the machine and compiler only, never on a script's config, and `valid_vec_isa_list` keeps it for
    the process and every process forked from it."""
    resolve("pick_vec_isa")()


def warm_inductor_process() -> None:
    """Do, in this process, what every process's first inductor compile does once and keeps: import
    the modules it loads lazily, hash torch's sources (the cache key's `torch_key`), register the
    pattern-matcher passes and probe the CPU's vector ISA (a compile and a child process each time).
    Nothing is compiled, so a process forked from this one starts with Dynamo's and inductor's
    compile state untouched; it only skips those seconds. Each step is best effort: one that fails
    here fails (or not) in the compile itself, as it would have."""
    for name in INDUCTOR_LAZY_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional backend's module (triton, sympy) may be absent
            pass
    try:
        resolve("list_backends")(exclude_tags=())  # imports every registered backend's module
    except Exception:  # noqa: BLE001 - see above
        pass
    for name in ("inductor_torch_key", "triton_key", "joint_graph_lazy_init", "post_grad_lazy_init", "pick_vec_isa"):
        try:
            resolve(name)()
        except Exception:  # noqa: BLE001 - see above
            pass


def start_allocation_events() -> None:
    """Start torch's profiler recording this thread's CPU allocations and frees and nothing else.

    `torch.profiler.profile(profile_memory=True)` also records every op it sees (a RecordFunction
    callback per op), which cost a budgeted block of 200 training calls 28-48% more CPU. The profiler observes ops only in the scopes it is given (every scope when none): given
    the lite interpreter's, which no op of a Python program runs in, it records the allocator's
    reports alone. Raises RuntimeError when a profiler already runs on this thread, as the public
    API does."""
    from torch.profiler import ProfilerActivity

    config = resolve("ProfilerConfig")(
        resolve("ProfilerState").KINETO,
        False,  # report_input_shapes
        True,  # profile_memory
        False,  # with_stack
        False,  # with_flops
        False,  # with_modules
        resolve("ProfilerExperimentalConfig")(),
    )
    activities = {ProfilerActivity.CPU}
    resolve("prepare_profiler")(config, activities)
    resolve("enable_profiler")(config, activities, {resolve("RecordScope").LITE_INTERPRETER})


def stop_allocation_events() -> list[tuple[int, int, int]]:
    """Stop the profiler start_allocation_events started: its CPU allocations as (time ns, address,
    bytes; a free negative), in time order. torch reports the free of a block only when it saw the
    block allocated under a profiler; the address tells which allocation a free ends."""
    events = resolve("disable_profiler")().experimental_event_tree()
    out = []
    for e in events:
        f = e.extra_fields
        if e.tag.name == "Allocation" and f.device.type == "cpu":
            out.append((e.start_time_ns, f.ptr, f.alloc_size))
    out.sort()
    return out
