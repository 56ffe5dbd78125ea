"""The AOT level of `fxlens minify`: the ATen forward and backward graphs AOTAutograd hands a
backend's inner compiler, for failures that do not survive AOTAutograd being skipped (the Dynamo
graph fails only when run forward and backward).

1. `capture_aten` (runs in a minify worker, never in fxlens's own process): compile the failing
   Dynamo graph with AOTAutograd under the backend's own decompositions and partitioner, with
   recording compilers in place of the inner one; save every ATen graph as code, the meta of its
   inputs and their values (the first call: activations and tangents for the backward graph).
2. `find_failing` (parent): render each ATen graph as a candidate that calls the backend's inner
   compiler on it directly (`fxlens.minify.repro_writer.INNER_COMPILERS`), evaluate them on the pool and
   keep the one that fails with the Dynamo graph's signature. Reduction then runs on that graph
   with the same passes as on Dynamo graphs.

Backends with a known inner compiler: inductor (`compile_fx_inner`), fxlens and fxlens_nofusion
(`compile_aten`), and any `aot_autograd(fw_compiler=..., bw_compiler=...)` object (torch's
aot_eager among them). Others stay at the Dynamo level.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from fxlens.backend.stages import stage

CAPTURE_CALL = "fxlens_capture_aten"


def inner_kind(spec: str, backend) -> str | None:
    """The INNER_COMPILERS key of a backend (its spec and the resolved object), or None."""
    if getattr(stage(spec), "inner", None):
        return stage(spec).inner
    from fxlens.backend.torch_compat import AotAutograd, lookup_backend

    if isinstance(backend, str):  # a registered name (torch's aot_eager is an aot_autograd object)
        backend = lookup_backend(backend)
    if isinstance(backend, AotAutograd) and backend.kwargs.get("fw_compiler") is not None:
        return "aot_autograd"
    return None


def _aot_options(kind: str, backend) -> dict:
    """The aot_module_simplified keywords the backend itself compiles with (less the compilers)."""
    from fxlens.backend.torch_compat import min_cut_rematerialization_partition

    if kind == "inductor":
        from fxlens.backend.torch_compat import select_decomp_table

        return {"decompositions": select_decomp_table(), "partition_fn": min_cut_rematerialization_partition}
    if getattr(stage(kind), "codegen", False):
        from fxlens.backend.lower.aot import aot_options

        return aot_options()
    kw = backend.kwargs
    keep = ("decompositions", "partition_fn", "keep_inference_input_mutations")
    return {k: kw[k] for k in keep if kw.get(k) is not None}


def capture_aten(model_cls, make_inputs, backend, spec: str, out: str, backward: bool, dynamic: bool) -> str:
    """Worker side: save the ATen graphs of the candidate `model_cls` into `out`; a JSON summary
    `{"inner": KIND, "graphs": [{"index", "kind"}...]}` or `{"error": ...}`."""
    import torch

    from fxlens.backend.torch_compat import aot_module_simplified
    from fxlens.minify.candidate_check import run_model
    from fxlens.minify.capture import graph_source, lift_attributes
    from fxlens.minify.graph import spec_of

    kind = inner_kind(spec, backend)
    if kind is None:
        return json.dumps({"error": f"no known inner ATen compiler for backend {spec!r}"})
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    graphs: list[dict] = []

    def recorder(which: str):
        def compiler(gm, example_inputs):
            i = len(graphs)
            graphs.append({"index": i, "kind": which})
            saved = lift_attributes(gm, [])
            (folder / f"aten_{i}.py").write_text(graph_source(gm))
            state = {"first": True}

            def run(args):
                if state["first"]:
                    state["first"] = False
                    values = [*args, *saved]
                    meta = [spec_of(v.detach() if _is_tensor(v) else v).to_json() for v in values]
                    (folder / f"aten_{i}.json").write_text(json.dumps({"kind": which, "inputs": meta}))
                    tensors = {f"arg{j}": v.detach().clone() for j, v in enumerate(values) if _is_tensor(v)}
                    torch.save(tensors, folder / f"aten_values_{i}.pt")
                return gm(*args, *saved)

            run._boxed_call = True  # type: ignore[attr-defined]
            return run

        return compiler

    def aot_backend(gm, example_inputs):
        return aot_module_simplified(
            gm,
            example_inputs,
            fw_compiler=recorder("forward"),
            bw_compiler=recorder("backward"),
            inference_compiler=recorder("inference"),
            **_aot_options(kind, backend),
        )

    torch.compiler.reset()
    model = torch.compile(model_cls(), backend=aot_backend, dynamic=True if dynamic else None)
    run_model(model, make_inputs(), backward)
    done = [g for g in graphs if (folder / f"aten_{g['index']}.json").exists()]
    return json.dumps({"inner": kind, "graphs": done})


def _is_tensor(v) -> bool:
    import torch

    return isinstance(v, torch.Tensor)


def capture_source(dynamo_source: str, out: Path, spec) -> str:
    """A Dynamo candidate's source plus the function a worker calls to capture its ATen graphs."""
    return (
        dynamo_source
        + f"\n\ndef {CAPTURE_CALL}(backend, spec):\n"
        + "    from fxlens.minify.aot import capture_aten\n\n"
        + f"    return capture_aten(Repro, make_inputs, backend, spec, {str(out)!r}, "
        + f"{spec.backward!r}, {spec.dynamic!r})\n"
    )


def find_failing(pool, dyn_cand, dyn_spec, signature: str, folder: Path):
    """(candidate, spec) of the ATen graph that fails with `signature` when compiled alone by the
    backend's inner compiler, or (None, why)."""
    import torch

    from fxlens.minify.graph import InputSpec, candidate_from_module, load_graph_module
    from fxlens.minify.repro_writer import render

    answer = pool.call(capture_source(render(dyn_cand, dyn_spec), folder, dyn_spec), CAPTURE_CALL)
    try:
        summary = json.loads(answer or "")
    except ValueError:
        return None, f"capturing the ATen graphs failed: {answer}"
    if "error" in summary:
        return None, summary["error"]
    options = []
    # the backward graph first: it is where a failure that needs backward usually lives
    for g in sorted(summary["graphs"], key=lambda g: g["kind"] != "backward"):
        i = g["index"]
        meta = json.loads((folder / f"aten_{i}.json").read_text())
        values = torch.load(folder / f"aten_values_{i}.pt", weights_only=True)
        specs = [InputSpec.from_json(s) for s in meta["inputs"]]
        example = [values.get(f"arg{j}", s.scalar) for j, s in enumerate(specs)]
        try:
            cand = candidate_from_module(load_graph_module((folder / f"aten_{i}.py").read_text()), example)
        except Exception:  # an ATen graph fx cannot re-trace: that level is not available
            continue
        spec = replace(
            dyn_spec, level=g["kind"], inner=summary["inner"], backward=False, values_path=None, signature=""
        )
        options.append((cand, spec))
        options.append((cand, replace(spec, values_path=str(folder / f"aten_values_{i}.pt"))))
    if not options:
        return None, "no ATen graph could be re-traced"
    sigs = pool.evaluate([render(c, s) for c, s in options])
    for (cand, spec), sig in zip(options, sigs):
        if sig == signature:
            return (cand, spec), None
    return None, "no ATen graph fails alone with the same signature (" + "; ".join(map(str, sigs)) + ")"
