"""Inductor's output code per compile, its kernels, and where each kernel came from (provenance).

Inductor logs the Python module it generated (`inductor_output_code`, payload: the code). With
provenance tracking on (`INDUCTOR_PROVENANCE=1`, or `TORCH_COMPILE_DEBUG=1`) it also logs, per graph,
which post-grad nodes each kernel fuses and which pre-grad (user-level) nodes those came from
(`inductor_provenance_tracking_node_mappings`), and the user stack of each kernel
(`inductor_provenance_tracking_kernel_stack_traces`): tlparse's "provenance tracking" view.

The same code on many ranks has the same file name (a hash of the code), so each file's code is read
once however many ranks compiled it.
"""

from __future__ import annotations

import re

from fxlens.report.document import Code, Excerpt, Line, Pre, Section, Table
from fxlens.report.failures import whole_text

# `cpp_fused_sin_0 = async_compile.cpp_pybinding(...)`, `triton_poi_fused_0 = async_compile.triton(...)`
_KERNEL = re.compile(r"^(\w+) = async_compile\.(\w+)\(", re.M)


_AOTI_WRAPPER = "inductor_aot_wrapper_code"  # AOTInductor's code, logged as a graph_dump record


def _artifact(recs, name: str):
    rec = next((r for r in reversed(recs) if r.kind == f"artifact:{name}"), None)
    return rec.payload_json() if rec is not None else None


def _by_kernel(mapping) -> dict[str, list]:
    """torch keys kernels as "NAME:N" (the Nth time the name was generated): merged under NAME."""
    out: dict[str, list] = {}
    for key, vals in (mapping or {}).items() if isinstance(mapping, dict) else ():
        out.setdefault(str(key).rsplit(":", 1)[0], []).extend(vals if isinstance(vals, list) else [vals])
    return out


def _kernels(code: str, mappings, stacks) -> list[dict]:
    to_post = _by_kernel((mappings or {}).get("cppCodeToPost") if isinstance(mappings, dict) else None)
    post_to_pre = (mappings or {}).get("postToPre") or {} if isinstance(mappings, dict) else {}
    stacks = _by_kernel(stacks)
    out = []
    found = list(dict.fromkeys(_KERNEL.findall(code)))
    names = {n for n, _ in found}
    # extern calls (`extern_kernels.addmm`, AOTInductor's `aoti_torch_cpu_addmm_out`) and AOTInductor's
    # C++ kernels are in the provenance map but not `async_compile` definitions: listed after those
    found += [
        (n, "extern" if "." in n or n.startswith("aoti_torch") else "cpp") for n in to_post if n not in names
    ]
    for name, kind in found:
        post = list(dict.fromkeys(str(n) for n in to_post.get(name) or []))
        pre = list(dict.fromkeys(str(p) for n in post for p in post_to_pre.get(n) or []))
        stack = stacks.get(name)
        out.append(
            {
                "name": name,
                "kind": kind,
                "post_grad_nodes": post,
                "pre_grad_nodes": pre,
                "stack": [str(s) for s in stack]
                if isinstance(stack, list)
                else ([str(stack)] if stack else []),
            }
        )
    return out


def output_code(session) -> list[dict]:
    """One entry per compile and generated file: `{compile_id, function, file, lines, kernels, ranks}`."""
    entries: dict[tuple, dict] = {}
    for r in session.ranks:
        names = {m.compile_id: m.function for m in r.metrics}
        for cid, recs in r.by_compile.items():
            for rec in recs:
                if (
                    rec.kind == "graph_dump"
                    and (rec.meta.get("graph_dump") or {}).get("name") != _AOTI_WRAPPER
                ):
                    continue
                if rec.kind not in ("inductor_output_code", "graph_dump"):
                    continue
                path = str((rec.meta.get(rec.kind) or {}).get("filename") or "")
                key = (cid, path)
                if key not in entries:
                    code = rec.payload()
                    entries[key] = {
                        "compile_id": cid,
                        "function": "AOTInductor" if cid == "-" else names.get(cid, "?"),
                        "file": path,
                        "lines": code.count("\n") + 1 if code else 0,
                        "kernels": _kernels(
                            code,
                            _artifact(recs, "inductor_provenance_tracking_node_mappings"),
                            _artifact(recs, "inductor_provenance_tracking_kernel_stack_traces"),
                        ),
                        "provenance": any(
                            x.kind == "artifact:inductor_provenance_tracking_node_mappings" for x in recs
                        ),
                        "ranks": [],
                    }
                entries[key]["ranks"].append(r.rank)
    return list(entries.values())


def kernel_source(stack: list[str]) -> str:
    """The last `File "...", line N` of a kernel's stack text and the code after it, shortened."""
    text = "\n".join(stack)
    found = re.findall(r'File "([^"]+)", line (\d+)[^\n]*\n\s*(.+)', text)
    if not found:
        return ""
    file, line, code = found[-1]
    return f"{file.rsplit('/', 1)[-1]}:{line} `{code.strip()}`"


def _same(x: str) -> str:
    return x


def _kernel_row(k: dict, text) -> list:

    return [
        Code(k["name"]),
        k["kind"],
        Code(", ".join(k["post_grad_nodes"])) if k["post_grad_nodes"] else "-",
        Code(", ".join(k["pre_grad_nodes"])) if k["pre_grad_nodes"] else "-",
        text(kernel_source(k["stack"])) or "-",
    ]


def _file_excerpt(e: dict, text, artifact):
    """One generated file's kernels: the terminal its first 4 (kernel <- post-grad nodes <- source),
    Markdown and HTML every kernel with its pre-grad nodes too, and the code (ARTIFACT: the
    Session's lookup, None: no code), folded."""

    head = []
    for k in e["kernels"][:4]:
        nodes, src = ", ".join(k["post_grad_nodes"][:6]), kernel_source(k["stack"])
        head.append(k["name"] + (f" <- {nodes}" if nodes else "") + (f" <- {src}" if src else ""))
    more = f"... {len(e['kernels']) - 4} more kernel(s)" if len(e["kernels"]) > 4 else ""
    blocks: list = []
    if e["kernels"]:
        headers = ["kernel", "kind", "post-grad nodes", "pre-grad nodes", "user line"]
        blocks.append(Table(headers, [_kernel_row(k, text) for k in e["kernels"]]))
    if code := artifact(e["compile_id"], "inductor_output_code", e["ranks"][0]) if artifact else None:
        blocks.append(Pre(text(whole_text(code)), "python"))
    name = f"{e['compile_id']} {e['function']}: {e['file'].rsplit('/', 1)[-1]}"
    return Excerpt("", name, head, more, blocks=blocks)


def output_code_section(report: dict, limit: int | None = 6, text=_same, artifact=None) -> list:
    """Each compile's generated file (the first LIMIT) and its kernels, with the nodes and user line
    behind each; with ARTIFACT, each file's code (Markdown and HTML, folded). TEXT shortens text."""

    entries = report.get("output_code") or []
    if not entries:
        return []
    lines: list = []
    for e in entries[:limit]:
        said = f": {text(e['file'])} ({e['lines']} lines, {len(e['kernels'])} kernel(s))"
        lines += [
            Line([Code(e["compile_id"]), " ", Code(e["function"]), said]),
            _file_excerpt(e, text, artifact),
        ]
    if not any(e["provenance"] for e in entries):
        lines.append(
            Line("(no provenance in this trace: run with INDUCTOR_PROVENANCE=1 to map kernels to nodes)")
        )
    if len(entries) > limit:
        lines.append(Line(f"... {len(entries) - limit} more (see --json output_code)"))
    gloss = "kernel <- post-grad nodes <- source, where provenance was logged"
    return [Section("Inductor output code", lines, gloss=gloss)]
