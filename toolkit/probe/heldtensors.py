"""Tensors the compiled code of one function holds on to, apart from the model's own.

Each Dynamo cache entry of a code object (one per recompile) names the compiled function it calls
(`__compiled_fn_N` in the frame's globals). Walking the objects that function refers to (closures,
graph modules, inductor's output-code module) finds every tensor it keeps alive: lifted or inlined
constants (`_tensor_constant0`), inductor's frozen parameters (`_frozen_param0`, folded or prepacked
copies under `freezing`), and the model's own parameters. The model's own storages, and those of the
call's arguments, are left out: the model holds them anyway. What remains is memory that exists
only because the function was compiled, once per cache entry.

Runs in the script's process (doctor's probe), after the script; reads, never changes anything.
"""

from __future__ import annotations

import gc
import sys
import types

# objects visited per cache entry at most: a walk that escapes into the user's world stops here
MAX_OBJECTS = 200_000


def storage_key_bytes(t) -> tuple[int, int]:
    """(a key shared by tensors viewing one storage, that storage's bytes). An opaque tensor (an
    mkldnn-packed weight) has no storage to read: its own id and the bytes its shape says."""
    try:
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    except (NotImplementedError, RuntimeError):
        return id(t), t.numel() * t.element_size()


def own_storages(*roots) -> set[int]:
    """Storage keys of every parameter and buffer of the modules among `roots` (and in lists,
    tuples and dicts one level down), and of the tensors among them: what is not extra."""
    import torch

    keys: set[int] = set()

    def add(obj) -> None:
        if isinstance(obj, torch.nn.Module):
            for t in (*obj.parameters(), *obj.buffers()):
                keys.add(storage_key_bytes(t)[0])
        elif isinstance(obj, torch.Tensor):
            keys.add(storage_key_bytes(obj)[0])

    for root in roots:
        add(root)
        items = root.values() if isinstance(root, dict) else root if isinstance(root, (list, tuple)) else ()
        for item in items:
            add(item)
    return keys


def _skipped_dicts() -> set[int]:
    """The globals of every imported module but generated code (inductor's output code): the walk
    must not wander from a compiled function into the user's or torch's world."""
    out = set()
    for m in list(sys.modules.values()):
        path = getattr(m, "__file__", None) or ""
        if m is not None and "torchinductor" not in path:
            out.add(id(vars(m)))
    return out


def _graph_lines(gm) -> dict[str, tuple[str | None, int | None, str]]:
    """get_attr target -> (file, line, code) of the user's line that made it, from node metadata."""
    out = {}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            out[node.target] = _last_frame(node.meta.get("stack_trace") or "")
    return out


def _last_frame(stack: str) -> tuple[str | None, int | None, str]:
    """The innermost `File "x.py", line N` of a node's stack trace, and the code line after it."""
    lines = [ln for ln in stack.strip().split("\n") if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        ln = lines[i].strip()
        if ln.startswith('File "'):
            file, _, rest = ln[len('File "') :].partition('", line ')
            num = rest.split(",")[0]
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return file, int(num) if num.isdigit() else None, code
    return None, None, ""


def held_by(root, skip: set[int], seen_dicts: set[int], found: dict[int, dict]) -> None:
    """Into `found` (storage key -> tensor): tensors reachable from `root` (one compiled function)
    whose storage is not in `skip`."""
    import torch
    from torch.fx import GraphModule

    seen: set[int] = set()
    stack = [(root, "", None)]
    while stack and len(seen) < MAX_OBJECTS:
        obj, name, where = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            # FakeTensors and meta tensors in graph metadata hold no memory
            if type(obj) not in (torch.Tensor, torch.nn.Parameter) or obj.device.type == "meta":
                continue
            key, nbytes = storage_key_bytes(obj)
            if key in skip or isinstance(obj, torch.nn.Parameter):
                continue
            file, line, code = where or (None, None, "")
            if key in found:  # seen before through an unnamed path (a list): keep the better name
                if name and not found[key]["name"]:
                    found[key].update(name=name, file=file, line=line, code=code)
                continue
            found[key] = {
                "name": name,
                "shape": list(obj.shape),
                "dtype": str(obj.dtype).replace("torch.", ""),
                "bytes": int(nbytes),
                "opaque": obj.layout != torch.strided,
                "file": file,
                "line": line,
                "code": code,
            }
            continue
        if isinstance(obj, GraphModule):
            lines = _graph_lines(obj)
            # its _parameters and _buffers are the model's own (in `skip`) or constants Dynamo made
            for attr, value in (*vars(obj).items(), *obj._parameters.items(), *obj._buffers.items()):
                if attr not in ("_parameters", "_buffers", "_modules"):
                    stack.append((value, attr, lines.get(attr)))
            for sub in obj._modules.values():
                if isinstance(sub, GraphModule):
                    stack.append((sub, name, None))
            continue
        if isinstance(obj, (types.ModuleType, type, torch.nn.Module, types.CodeType, str, bytes, int, float)):
            continue
        if isinstance(obj, dict):
            if id(obj) in seen_dicts:
                continue
            stack.extend((v, k if isinstance(k, str) else name, where) for k, v in obj.items())
            continue
        stack.extend((r, name, where) for r in gc.get_referents(obj))


def held_tensors(fn, skip: set[int]) -> list[dict]:
    """Per Dynamo cache entry of `fn`'s code (newest first): the tensors its compiled code holds
    apart from `skip`, with their total bytes."""
    from fxlens.backend.torch_compat import cache_entries

    code = getattr(fn, "__code__", None)
    glb = getattr(fn, "__globals__", None)
    if code is None or glb is None:
        return []
    skip_dicts = _skipped_dicts()
    out = []
    for entry in cache_entries(code):
        tensors: dict[int, dict] = {}
        for n in entry.code.co_names:
            if n.startswith("__compiled_fn") and n in glb:
                held_by(glb[n], skip, skip_dicts, tensors)
        kept = sorted(tensors.values(), key=lambda t: -t["bytes"])
        out.append({"tensors": kept[:5], "count": len(kept), "bytes": sum(t["bytes"] for t in kept)})
    return out
